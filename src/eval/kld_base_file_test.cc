#include "eval/kld_base_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "core/error.h"
#include "core/temp_dir_for_tests.h"

namespace tessera {
namespace {

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

std::vector<float> random_logits(std::mt19937& rng, int64_t n, float sd) {
  std::normal_distribution<float> dist(0.0f, sd);
  std::vector<float> l(static_cast<size_t>(n));
  for (float& v : l) v = dist(rng);
  return l;
}

// Writes a complete file of random rows; returns the rows written.
std::vector<uint16_t> write_random_file(const std::string& path, const KldBaseHeader& h,
                                        const std::vector<int32_t>& tokens, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t rows = kld_rows_per_chunk(h.n_ctx), width = kld_row_width(h.n_vocab);
  std::vector<uint16_t> all;
  KldBaseWriter w(path, h, tokens);
  for (int64_t c = 0; c < h.n_chunk; ++c) {
    std::vector<uint16_t> chunk(static_cast<size_t>(rows * width), 0xffff);
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<float> l = random_logits(rng, h.n_vocab, 3.0f);
      compress_log_probs(l, static_cast<int32_t>(r % h.n_vocab), chunk.data() + r * width);
    }
    w.write_rows(chunk);
    all.insert(all.end(), chunk.begin(), chunk.end());
  }
  w.commit();
  return all;
}

KldBaseHeader small_header() { return {16, 37, 3}; }  // odd vocabulary: rows carry a padding entry

std::vector<int32_t> tokens_for(const KldBaseHeader& h) {
  std::vector<int32_t> t(static_cast<size_t>(h.n_ctx * h.n_chunk));
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<int32_t>((i * 7) % h.n_vocab);
  return t;
}

TEST(KldBaseFile, RowWidthAndRowsPerChunk) {
  EXPECT_EQ(kld_row_width(3), 8);
  EXPECT_EQ(kld_row_width(4), 8);
  EXPECT_EQ(kld_row_width(49152), 49156);
  EXPECT_EQ(kld_rows_per_chunk(512), 255);  // positions 256 ... 510
  EXPECT_EQ(kld_rows_per_chunk(9), 4);      // 4 ... 7
}

TEST(KldBaseFile, RoundTrip) {
  TempDir dir{"kld_base_file_test"};
  const std::string path = (dir.path() / "base.kld").string();
  const KldBaseHeader h = small_header();
  const std::vector<int32_t> tokens = tokens_for(h);
  const std::vector<uint16_t> written = write_random_file(path, h, tokens, 1);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_EQ(std::filesystem::file_size(path), kld_base_file_size(h.n_ctx, h.n_vocab, h.n_chunk));

  KldBaseReader r(path);
  EXPECT_EQ(r.header().n_ctx, h.n_ctx);
  EXPECT_EQ(r.header().n_vocab, h.n_vocab);
  EXPECT_EQ(r.header().n_chunk, h.n_chunk);
  EXPECT_EQ(r.tokens(), tokens);
  std::vector<uint16_t> read, chunk;
  for (int64_t c = 0; c < h.n_chunk; ++c) {
    r.read_chunk(chunk);
    read.insert(read.end(), chunk.begin(), chunk.end());
  }
  EXPECT_EQ(read, written);
  EXPECT_THROW(r.read_chunk(chunk), Error);  // past the last chunk
}

// The bytes where llama.cpp puts them: magic, 3 int32, the tokens, then
// rows of [float scale][float min_log_prob][q ...][zero padding].
TEST(KldBaseFile, ByteLayout) {
  TempDir dir{"kld_base_file_test"};
  const std::string path = (dir.path() / "base.kld").string();
  const KldBaseHeader h{8, 3, 1};
  const std::vector<int32_t> tokens = {1, 2, 0, 1, 2, 0, 1, 2};
  {
    KldBaseWriter w(path, h, tokens);
    std::vector<uint16_t> rows(static_cast<size_t>(kld_rows_per_chunk(8) * kld_row_width(3)));
    const float logits[3] = {0.0f, 1.0f, 2.0f};
    for (int64_t r = 0; r < kld_rows_per_chunk(8); ++r) compress_log_probs(logits, 0, rows.data() + r * 8);
    w.write_rows(rows);
    w.commit();
  }
  const std::string b = read_bytes(path);
  ASSERT_EQ(b.size(), 20u + 8 * 4 + 3 * 8 * 2);
  EXPECT_EQ(b.substr(0, 8), "_logits_");
  int32_t dims[3];
  std::memcpy(dims, b.data() + 8, sizeof(dims));
  EXPECT_EQ(dims[0], 8);
  EXPECT_EQ(dims[1], 3);
  EXPECT_EQ(dims[2], 1);
  int32_t t[8];
  std::memcpy(t, b.data() + 20, sizeof(t));
  EXPECT_EQ(std::vector<int32_t>(t, t + 8), tokens);
  const char* row = b.data() + 52;
  float scale, min_log_prob;
  uint16_t q[4];
  std::memcpy(&scale, row, 4);
  std::memcpy(&min_log_prob, row + 4, 4);
  std::memcpy(q, row + 8, 8);
  // max 2, min 0 (within 16 of the max): scale 2/65535, min_log_prob = 0 - 2 - ln(1 + e^-1 + e^-2).
  EXPECT_FLOAT_EQ(scale, 2.0f / 65535.0f);
  EXPECT_NEAR(min_log_prob, -2.0 - std::log(1.0 + std::exp(-1.0) + std::exp(-2.0)), 1e-6);
  EXPECT_EQ(q[0], 0);      // the minimum itself: not > min_logit
  EXPECT_EQ(q[1], 32768);  // 1 / (2/65535) = 32767.5, to even
  EXPECT_EQ(q[2], 65535);
  EXPECT_EQ(q[3], 0);      // padding
}

// The compression against its definition, computed independently in double.
TEST(KldBaseFile, CompressionMatchesDefinition) {
  std::mt19937 rng(7);
  for (const int64_t n : {int64_t{2}, int64_t{101}, int64_t{4096}}) {
    for (const float sd : {0.5f, 3.0f, 12.0f}) {
      const std::vector<float> l = random_logits(rng, n, sd);
      const int32_t target = static_cast<int32_t>(n / 3);
      std::vector<uint16_t> row(static_cast<size_t>(kld_row_width(n)), 0xabcd);
      const float nll = compress_log_probs(l, target, row.data());

      double mx = l[0], mn = l[0];
      for (const float v : l) mx = std::max<double>(mx, v), mn = std::min<double>(mn, v);
      const double lo = std::max(mn, mx - 16.0);
      double sum = 0.0;
      for (const float v : l) sum += std::exp(v - mx);
      const double lse = mx + std::log(sum);
      const double scale = (mx - lo) / 65535.0;

      EXPECT_NEAR(kld_row_scale(row.data()), scale, 1e-6 * scale + 1e-12);
      EXPECT_NEAR(kld_row_min_log_prob(row.data()), lo - lse, 1e-5);
      EXPECT_NEAR(nll, lse - l[static_cast<size_t>(target)], 1e-5);
      const uint16_t* q = kld_row_values(row.data());
      int max_q = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double exact = l[static_cast<size_t>(i)] - lse;
        const double decoded = kld_row_scale(row.data()) * q[i] + kld_row_min_log_prob(row.data());
        max_q = std::max<int>(max_q, q[i]);
        if (l[static_cast<size_t>(i)] > lo) {
          // Rounded to the nearest step: off by at most half a step (and float rounding).
          const double ideal = std::nearbyint((l[static_cast<size_t>(i)] - lo) / scale);
          EXPECT_LE(std::abs(q[i] - ideal), 1.0) << "n " << n << " i " << i;
          EXPECT_NEAR(decoded, exact, 0.5 * scale + 1e-5) << "n " << n << " i " << i;
        } else {
          // At or below max - 16 nats: raised to the floor min_log_prob.
          EXPECT_EQ(q[i], 0);
          EXPECT_GE(decoded, exact - 1e-5);
        }
      }
      EXPECT_EQ(max_q, 65535);  // the top logit maps to the last step
      if (n % 2 == 1) {
        EXPECT_EQ(q[n], 0);
      }
    }
  }
}

TEST(KldBaseFile, ConstantLogitsGiveZeroScale) {
  const std::vector<float> l(5, 1.5f);
  std::vector<uint16_t> row(static_cast<size_t>(kld_row_width(5)), 7);
  const float nll = compress_log_probs(l, 2, row.data());
  EXPECT_EQ(kld_row_scale(row.data()), 0.0f);
  EXPECT_NEAR(kld_row_min_log_prob(row.data()), -std::log(5.0), 1e-6);
  EXPECT_NEAR(nll, std::log(5.0), 1e-6);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(kld_row_values(row.data())[i], 0);
}

void expect_refused(const std::string& path, const std::string& words) {
  try {
    KldBaseReader r(path);
    FAIL() << "accepted " << path;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(KldBaseFile, BadFilesAreRefused) {
  TempDir dir{"kld_base_file_test"};
  const std::string good = (dir.path() / "good.kld").string();
  const KldBaseHeader h = small_header();
  write_random_file(good, h, tokens_for(h), 3);
  const std::string bytes = read_bytes(good);
  const auto variant = [&](const std::string& name, const std::string& b) {
    const std::string p = (dir.path() / name).string();
    write_bytes(p, b);
    return p;
  };

  expect_refused((dir.path() / "missing.kld").string(), "no such file");
  expect_refused(variant("empty", ""), "_logits_");
  std::string bad_magic = bytes;
  bad_magic[0] = 'X';
  expect_refused(variant("magic", bad_magic), "_logits_");
  expect_refused(variant("header", bytes.substr(0, 14)), "truncated");
  expect_refused(variant("one_byte_short", bytes.substr(0, bytes.size() - 1)), "truncated");
  expect_refused(variant("no_rows", bytes.substr(0, 20 + 16 * 3 * 4)), "truncated");
  expect_refused(variant("one_byte_long", bytes + "x"), "more than");
  std::string zero_chunks = bytes;
  const int32_t zero = 0;
  std::memcpy(zero_chunks.data() + 16, &zero, 4);
  expect_refused(variant("zero_chunks", zero_chunks), "n_chunk");
  std::string negative_vocab = bytes;
  const int32_t negative = -5;
  std::memcpy(negative_vocab.data() + 12, &negative, 4);
  expect_refused(variant("negative_vocab", negative_vocab), "n_vocab");
}

TEST(KldBaseFile, WriterLeavesNothingHalfWritten) {
  TempDir dir{"kld_base_file_test"};
  const std::string path = (dir.path() / "base.kld").string();
  const KldBaseHeader h = small_header();
  {
    KldBaseWriter w(path, h, tokens_for(h));
    std::vector<uint16_t> rows(static_cast<size_t>(kld_rows_per_chunk(h.n_ctx) * kld_row_width(h.n_vocab)));
    w.write_rows(rows);
    EXPECT_THROW(w.commit(), Error);  // 1 of 3 chunks
    EXPECT_THROW(w.write_rows(std::vector<uint16_t>(3)), Error);  // not a whole row
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_THROW(KldBaseWriter(path, h, std::vector<int32_t>(5)), Error);  // wrong token count
}

}  // namespace
}  // namespace tessera
