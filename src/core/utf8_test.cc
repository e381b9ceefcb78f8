#include "core/utf8.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(Utf8, LossyReplacesMaximalSubparts) {
  // Same results as Python's bytes.decode("utf-8", "replace") / Rust from_utf8_lossy.
  EXPECT_EQ(utf8_lossy("abc"), "abc");
  EXPECT_EQ(utf8_lossy("\xff"), "\xEF\xBF\xBD");
  EXPECT_EQ(utf8_lossy("\xe4\xbd"), "\xEF\xBF\xBD");                     // truncated: one U+FFFD
  EXPECT_EQ(utf8_lossy("\xe4\xbd" "a"), "\xEF\xBF\xBD" "a");
  EXPECT_EQ(utf8_lossy("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate: 3
  EXPECT_EQ(utf8_lossy("\xc0\xaf"), "\xEF\xBF\xBD\xEF\xBF\xBD");          // overlong: 2
  EXPECT_EQ(utf8_lossy("\xf0\x9f\x98 x"), "\xEF\xBF\xBD x");             // 3 bytes of a 4-byte char
  EXPECT_FALSE(utf8_is_valid("\xf4\x90\x80\x80"));                       // > U+10FFFF
  EXPECT_TRUE(utf8_is_valid("\xf4\x8f\xbf\xbf"));
}

TEST(Utf8, CompletePrefixHoldsAnIncompleteTail) {
  EXPECT_EQ(utf8_complete_prefix("ab"), 2u);
  EXPECT_EQ(utf8_complete_prefix("a\xe4\xbd"), 1u);          // held
  EXPECT_EQ(utf8_complete_prefix("a\xe4\xbd\xa0"), 4u);      // complete
  EXPECT_EQ(utf8_complete_prefix("a\xff"), 2u);              // invalid: not held
  EXPECT_EQ(utf8_complete_prefix("\xf0\x9f\x98"), 0u);
}

TEST(Utf8, EscapedViewKeepsEveryByte) {
  // Python: list(b"a\xe2\x82A\xff\xc3\xa9".decode("utf-8", "surrogateescape")).
  const std::string bytes = "a\xe2\x82" "A\xff\xc3\xa9";
  const std::vector<uint32_t> cps = {'a', 0xDCE2, 0xDC82, 'A', 0xDCFF, 0xE9};
  EXPECT_EQ(utf8_code_points(bytes), cps);
  EXPECT_EQ(utf8_length(bytes), cps.size());
  std::string back;
  for (uint32_t cp : cps) utf8_append(back, cp);
  EXPECT_EQ(back, bytes);
  size_t i = 1;
  EXPECT_EQ(utf8_decode_escaped(bytes, i), 0xDCE2u);
  EXPECT_EQ(i, 2u);
}

}  // namespace
}  // namespace tessera
