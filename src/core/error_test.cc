#include "core/error.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(Error, MessageNamesFileSubjectAndProblem) {
  try {
    fail("model.gguf", "tensor 'w'", "shape [{}] is empty", 0);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "model.gguf: tensor 'w': shape [0] is empty");
    EXPECT_EQ(e.file(), "model.gguf");
    EXPECT_EQ(e.subject(), "tensor 'w'");
    EXPECT_EQ(e.problem(), "shape [0] is empty");
  }
}

TEST(Error, EscapesBytesThatAreNotPrintableUtf8) {
  const Error e("f", "key '\xa8\x01'", "bad \xe4\xb8\xad ok \xe4\xb8 cut\xf0");
  EXPECT_STREQ(e.what(), "f: key '\\xa8\\x01': bad \xe4\xb8\xad ok \\xe4\\xb8 cut\\xf0");
  // Overlong encodings and surrogates are malformed too.
  EXPECT_STREQ(Error("", "", "\xc0\xaf \xed\xa0\x80").what(),
               "<input>: \\xc0\\xaf \\xed\\xa0\\x80");
}

}  // namespace
}  // namespace tessera
