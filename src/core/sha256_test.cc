#include "core/sha256.h"

#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"

namespace tessera {
namespace {

// FIPS 180-2 test vectors.
TEST(Sha256, KnownVectors) {
  const std::string abc = "abc";
  EXPECT_EQ(sha256_hex({reinterpret_cast<const uint8_t*>(abc.data()), abc.size()}),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex({}), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  const std::string text = "the quick brown fox jumps over the lazy dog";
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  Sha256 h;
  h.update({bytes, 10});
  h.update({bytes + 10, 0});
  h.update({bytes + 10, text.size() - 10});
  EXPECT_EQ(h.hex(), sha256_hex({bytes, text.size()}));
}

TEST(Sha256, FileMatchesBufferAndReportsProgress) {
  const auto path = std::filesystem::temp_directory_path() / "tessera_sha256_test.bin";
  std::string data(3 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + 7);
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(data.data(), 1, data.size(), f);
    std::fclose(f);
  }
  uint64_t last = 0;
  const std::string got = sha256_file_hex(path, [&](uint64_t done, uint64_t total) {
    EXPECT_EQ(total, data.size());
    last = done;
  });
  EXPECT_EQ(last, data.size());
  EXPECT_EQ(got, sha256_hex({reinterpret_cast<const uint8_t*>(data.data()), data.size()}));
  std::filesystem::remove(path);
  EXPECT_THROW(sha256_file_hex(path), Error);
}

}  // namespace
}  // namespace tessera
