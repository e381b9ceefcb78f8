// The UTF-8 codec: well-formedness (the Unicode standard's table 3-7: no
// overlongs, no surrogates, nothing above U+10FFFF), decoding one code point,
// encoding one, and two ways to read bytes that are not valid UTF-8:
//   - repair, for the tokenizer: utf8_lossy replaces each "maximal subpart"
//     of an ill-formed sequence with one U+FFFD, as Rust's
//     String::from_utf8_lossy and Python's decode("utf-8", "replace") do
//     (Unicode 3.9 / WHATWG);
//   - escape, for Jinja's Python strings: utf8_decode_escaped reads each byte
//     of an ill-formed sequence as its own code point U+DC80..U+DCFF, as
//     Python's decode("utf-8", "surrogateescape") does, and utf8_append
//     writes those back as the bytes they stand for, so decoding and
//     re-encoding gives back any input byte for byte.
// Both agree on which sequences are well-formed and on what they decode to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 when the
// bytes there are not one (invalid lead, bad continuation, overlong,
// surrogate, > U+10FFFF, or truncated).
size_t utf8_valid_len(std::string_view s, size_t i);

// Length (>= 1) of the maximal subpart of an ill-formed sequence at s[i]:
// the bytes one U+FFFD replaces. Only meaningful when utf8_valid_len is 0.
size_t utf8_invalid_len(std::string_view s, size_t i);

// Decodes the well-formed sequence at s[i] (caller checked utf8_valid_len).
uint32_t utf8_decode(std::string_view s, size_t i, size_t len);

// Appends cp in UTF-8. U+DC80..U+DCFF (the escapes utf8_decode_escaped makes)
// become the single byte each stands for (0x80..0xFF); any other surrogate
// gets the three-byte pattern, which is not valid UTF-8.
void utf8_append(std::string& out, uint32_t cp);

bool utf8_is_valid(std::string_view s);
// s with every ill-formed subpart replaced by U+FFFD (s itself when valid).
std::string utf8_lossy(std::string_view s);

// Length of the longest prefix of s that is whole UTF-8 characters, treating
// a trailing incomplete-but-so-far-valid sequence as not yet complete.
// Returns s.size() - (bytes of that pending tail).
size_t utf8_complete_prefix(std::string_view s);

// The code point at s[i], moving i past it; a byte that does not start a
// well-formed sequence is read alone as U+DC00 + byte (surrogateescape).
uint32_t utf8_decode_escaped(std::string_view s, size_t& i);
// Every code point of s as utf8_decode_escaped reads them, and their count
// (Python's list(str) and len(str) of s.decode("utf-8", "surrogateescape")).
std::vector<uint32_t> utf8_code_points(std::string_view s);
size_t utf8_length(std::string_view s);

}  // namespace tessera
