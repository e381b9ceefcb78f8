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

}  // namespace
}  // namespace tessera
