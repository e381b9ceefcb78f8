// GPT-2's reversible byte <-> printable character table (bytes_to_unicode).
// Byte-level BPE vocabularies spell every token in this alphabet: the 188
// printable Latin-1 bytes stand for themselves, the other 68 bytes (controls,
// space, 0x7F-0xA0, 0xAD) map to U+0100.. in byte order, so ' ' -> 'Ġ' (U+0120)
// and '\n' -> 'Ċ' (U+010A).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/utf8.h"

namespace tessera::tok {

struct ByteLevelTable {
  std::array<uint32_t, 256> byte_to_cp{};
  std::array<std::string, 256> byte_to_utf8{};
  // Code points used are < 0x144; -1 where a code point is not in the alphabet.
  std::array<int16_t, 0x144> cp_to_byte{};

  ByteLevelTable() {
    cp_to_byte.fill(-1);
    uint32_t extra = 0;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const uint32_t cp = printable ? b : 0x100 + extra++;
      byte_to_cp[b] = cp;
      utf8_append(byte_to_utf8[b], cp);
      cp_to_byte[cp] = static_cast<int16_t>(b);
    }
  }

  // The byte a code point stands for, or -1 when it is outside the alphabet.
  int byte_of(uint32_t cp) const { return cp < cp_to_byte.size() ? cp_to_byte[cp] : -1; }

  // Bytes -> alphabet spelling.
  std::string encode(std::string_view bytes) const {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char c : bytes) out += byte_to_utf8[c];
    return out;
  }

  // Alphabet spelling -> bytes; false (out unspecified) when a character is
  // outside the alphabet.
  bool decode(std::string_view s, std::string& out) const {
    for (size_t i = 0; i < s.size();) {
      const size_t n = utf8_valid_len(s, i);
      if (n == 0) return false;
      const int b = byte_of(utf8_decode(s, i, n));
      if (b < 0) return false;
      out += static_cast<char>(b);
      i += n;
    }
    return true;
  }
};

inline const ByteLevelTable& byte_level_table() {
  static const ByteLevelTable t;
  return t;
}

}  // namespace tessera::tok
