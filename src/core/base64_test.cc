#include "core/base64.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace tessera {
namespace {

TEST(Base64, DecodesRfc4648Vectors) {
  // RFC 4648 §10.
  const std::pair<const char*, const char*> vectors[] = {{"", ""},         {"Zg==", "f"},         {"Zm8=", "fo"},
                                                         {"Zm9v", "foo"},  {"Zm9vYg==", "foob"},  {"Zm9vYmE=", "fooba"},
                                                         {"Zm9vYmFy", "foobar"}};
  for (auto [encoded, plain] : vectors) EXPECT_EQ(base64_decode(encoded), std::string(plain)) << encoded;
  EXPECT_EQ(base64_decode("Zm9v\nYmFy\n"), std::string("foobar"));  // line breaks
  const std::string binary = *base64_decode("AP8Q7w==");
  EXPECT_EQ(binary, std::string("\x00\xff\x10\xef", 4));
}

TEST(Base64, RefusesWhatIsNotBase64) {
  EXPECT_FALSE(base64_decode("Zm9v!mFy"));
  EXPECT_FALSE(base64_decode("Zm9vYmFy=="));
}

TEST(DataUrl, ReadsTheMediaTypeAndTheBytes) {
  const DataUrl u = parse_data_url("data:image/png;base64,Zm9vYmFy");
  EXPECT_EQ(u.media_type, "image/png");
  EXPECT_EQ(u.bytes, "foobar");
  EXPECT_EQ(parse_data_url("data:;base64,Zg==").media_type, "");
}

TEST(DataUrl, RefusesOtherUrlsAndPlainData) {
  EXPECT_THROW(parse_data_url("https://example.com/cat.png"), Error);
  EXPECT_THROW(parse_data_url("data:image/png,rawbytes"), Error);
  EXPECT_THROW(parse_data_url("data:image/png;base64"), Error);
  EXPECT_THROW(parse_data_url("data:image/png;base64,@@@@"), Error);
}

}  // namespace
}  // namespace tessera
