// The UTF-8 codec: well-formedness (the Unicode standard's table 3-7: no
// overlongs, no surrogates, nothing above U+10FFFF), decoding one code point,
// encoding one, and repairing invalid input the way Rust's
// String::from_utf8_lossy does (one U+FFFD per "maximal subpart" of an
// ill-formed sequence, Unicode 3.9 / WHATWG).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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

void utf8_append(std::string& out, uint32_t cp);

bool utf8_is_valid(std::string_view s);
// s with every ill-formed subpart replaced by U+FFFD (s itself when valid).
std::string utf8_lossy(std::string_view s);

// Length of the longest prefix of s that is whole UTF-8 characters, treating
// a trailing incomplete-but-so-far-valid sequence as not yet complete.
// Returns s.size() - (bytes of that pending tail).
size_t utf8_complete_prefix(std::string_view s);

size_t utf8_count_chars(std::string_view s);  // code points in valid UTF-8

}  // namespace tessera
