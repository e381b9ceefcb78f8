#include "core/utf8.h"

namespace tessera {
namespace {

// Expected sequence length for a lead byte and the allowed range of the first
// continuation byte (the ranges that exclude overlongs, surrogates and code
// points above U+10FFFF); 0 for bytes that cannot start a sequence.
struct Lead {
  uint8_t len, lo, hi;
};

Lead lead_of(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// Number of bytes of the sequence at s[i] that are valid so far (lead
// included), and whether it is complete.
size_t valid_run(std::string_view s, size_t i, bool* complete) {
  const auto b = static_cast<uint8_t>(s[i]);
  const Lead l = lead_of(b);
  *complete = false;
  if (l.len == 0) return 0;
  if (l.len == 1) {
    *complete = true;
    return 1;
  }
  size_t n = 1;
  for (; n < l.len; ++n) {
    if (i + n >= s.size()) return n;
    const auto c = static_cast<uint8_t>(s[i + n]);
    const uint8_t lo = n == 1 ? l.lo : 0x80, hi = n == 1 ? l.hi : 0xBF;
    if (c < lo || c > hi) return n;
  }
  *complete = true;
  return n;
}

}  // namespace

size_t utf8_valid_len(std::string_view s, size_t i) {
  bool complete;
  const size_t n = valid_run(s, i, &complete);
  return complete ? n : 0;
}

size_t utf8_invalid_len(std::string_view s, size_t i) {
  bool complete;
  const size_t n = valid_run(s, i, &complete);
  return n == 0 ? 1 : n;
}

uint32_t utf8_decode(std::string_view s, size_t i, size_t len) {
  const auto b = static_cast<uint8_t>(s[i]);
  if (len == 1) return b;
  uint32_t cp = b & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
  return cp;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp >= 0xDC80 && cp <= 0xDCFF) {
    out += static_cast<char>(cp - 0xDC00);
  } else if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool utf8_is_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = utf8_valid_len(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string utf8_lossy(std::string_view s) {
  if (utf8_is_valid(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 16);
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_valid_len(s, i);
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += utf8_invalid_len(s, i);
    }
  }
  return out;
}

size_t utf8_complete_prefix(std::string_view s) {
  // A pending tail is at most 3 bytes: look back for the last lead byte.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t i = n - back;
    const auto b = static_cast<uint8_t>(s[i]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking
    bool complete;
    const size_t run = valid_run(s, i, &complete);
    // Incomplete but valid so far and running to the end: hold it back.
    if (!complete && run > 0 && i + run == n) return i;
    return n;
  }
  return n;
}

uint32_t utf8_decode_escaped(std::string_view s, size_t& i) {
  const size_t n = utf8_valid_len(s, i);
  if (n == 0) return 0xDC00 + static_cast<uint8_t>(s[i++]);
  const uint32_t cp = utf8_decode(s, i, n);
  i += n;
  return cp;
}

std::vector<uint32_t> utf8_code_points(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) out.push_back(utf8_decode_escaped(s, i));
  return out;
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) utf8_decode_escaped(s, i);
  return n;
}

}  // namespace tessera
