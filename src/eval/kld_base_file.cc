#include "eval/kld_base_file.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "core/error.h"

namespace tessera {

static_assert(std::endian::native == std::endian::little, "the base-logits file is little-endian");

namespace {

constexpr uint64_t kHeaderBytes = 8 + 3 * sizeof(int32_t);

// Round to nearest, ties to even, of 0 <= x < 2^22: adding 1.5 * 2^23 puts
// the integer part in the low mantissa bits (the float addition rounds as
// the FPU does, to nearest even), which are then read back. llama.cpp rounds
// the same way, so the q values are the same bits.
int32_t round_half_even(float x) {
  const float shifted = x + 12582912.0f;
  return (std::bit_cast<int32_t>(shifted) & 0x007fffff) - 0x00400000;
}

// Positive dimensions small enough that the products below cannot overflow.
void check_dimensions(const std::string& path, const KldBaseHeader& h) {
  if (h.n_ctx < 3 || h.n_ctx > (int64_t{1} << 24))
    fail(path, "n_ctx", "{} is not a context size llama-perplexity writes (3 ... 2^24)", h.n_ctx);
  if (h.n_vocab < 1 || h.n_vocab > (int64_t{1} << 24))
    fail(path, "n_vocab", "{} is not a vocabulary size (1 ... 2^24)", h.n_vocab);
  if (h.n_chunk < 1 || h.n_chunk > (int64_t{1} << 24))
    fail(path, "n_chunk", "{} is not a chunk count (1 ... 2^24)", h.n_chunk);
}

}  // namespace

uint64_t kld_base_file_size(int64_t n_ctx, int64_t n_vocab, int64_t n_chunk) {
  const uint64_t tokens = static_cast<uint64_t>(n_chunk) * static_cast<uint64_t>(n_ctx) * sizeof(int32_t);
  const uint64_t rows = static_cast<uint64_t>(n_chunk) * static_cast<uint64_t>(kld_rows_per_chunk(n_ctx));
  return kHeaderBytes + tokens + rows * static_cast<uint64_t>(kld_row_width(n_vocab)) * sizeof(uint16_t);
}

float compress_log_probs(std::span<const float> logits, int32_t target, uint16_t* row) {
  const size_t n = logits.size();
  float max_logit = logits[0], min_logit = logits[0];
  for (size_t i = 1; i < n; ++i) {
    max_logit = std::max(max_logit, logits[i]);
    min_logit = std::min(min_logit, logits[i]);
  }
  // Nothing below 16 nats under the top logit is resolved: those entries
  // all become q = 0, i.e. min_log_prob.
  min_logit = std::max(min_logit, max_logit - 16.0f);
  double sum_exp = 0.0;
  for (size_t i = 0; i < n; ++i) sum_exp += std::exp(logits[i] - max_logit);  // float exp, double sum
  const float log_sum_exp = static_cast<float>(std::log(sum_exp));
  const float min_log_prob = min_logit - max_logit - log_sum_exp;
  const float scale = (max_logit - min_logit) / 65535.0f;
  std::memcpy(row, &scale, sizeof(float));
  std::memcpy(row + 2, &min_log_prob, sizeof(float));
  uint16_t* q = row + 4;
  if (scale != 0.0f) {
    const float inv_scale = 1.0f / scale;
    for (size_t i = 0; i < n; ++i)
      q[i] = logits[i] > min_logit ? static_cast<uint16_t>(round_half_even(inv_scale * (logits[i] - min_logit))) : 0;
  } else {
    std::fill(q, q + n, uint16_t{0});
  }
  if (n % 2 == 1) q[n] = 0;  // the padding entry
  return max_logit + log_sum_exp - logits[static_cast<size_t>(target)];
}

float kld_row_scale(const uint16_t* row) {
  float v;
  std::memcpy(&v, row, sizeof(float));
  return v;
}

float kld_row_min_log_prob(const uint16_t* row) {
  float v;
  std::memcpy(&v, row + 2, sizeof(float));
  return v;
}

// ---- writer ----

KldBaseWriter::KldBaseWriter(std::string path, const KldBaseHeader& header, std::span<const int32_t> tokens)
    : path_(std::move(path)), tmp_(path_ + ".tmp"), header_(header) {
  check_dimensions(path_, header_);
  if (tokens.size() != static_cast<size_t>(header_.n_chunk * header_.n_ctx))
    fail(path_, "tokens", "{} tokens given for {} chunks of {}", tokens.size(), header_.n_chunk, header_.n_ctx);
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_) fail(tmp_, "base-logits file", "cannot be opened for writing");
  const int32_t dims[3] = {static_cast<int32_t>(header_.n_ctx), static_cast<int32_t>(header_.n_vocab),
                           static_cast<int32_t>(header_.n_chunk)};
  out_.write(kKldBaseMagic, sizeof(kKldBaseMagic));
  out_.write(reinterpret_cast<const char*>(dims), sizeof(dims));
  out_.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size_bytes()));
  if (!out_) fail(tmp_, "base-logits file", "writing the header failed");
}

KldBaseWriter::~KldBaseWriter() {
  if (committed_) return;
  out_.close();
  std::error_code ignored;
  std::filesystem::remove(tmp_, ignored);
}

void KldBaseWriter::write_rows(std::span<const uint16_t> rows) {
  const uint64_t width = static_cast<uint64_t>(kld_row_width(header_.n_vocab));
  if (rows.size() % width != 0)
    fail(path_, "base-logits file", "{} values are not whole rows of {}", rows.size(), width);
  out_.write(reinterpret_cast<const char*>(rows.data()), static_cast<std::streamsize>(rows.size_bytes()));
  if (!out_) fail(tmp_, "base-logits file", "writing failed (disk full?)");
  rows_written_ += rows.size() / width;
}

void KldBaseWriter::commit() {
  const uint64_t want = static_cast<uint64_t>(header_.n_chunk) * static_cast<uint64_t>(kld_rows_per_chunk(header_.n_ctx));
  if (rows_written_ != want)
    fail(path_, "base-logits file", "{} rows written, the header promises {}", rows_written_, want);
  out_.close();
  if (!out_) fail(tmp_, "base-logits file", "closing failed (disk full?)");
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) fail(path_, "base-logits file", "cannot be renamed into place: {}", ec.message());
  committed_ = true;
}

// ---- reader ----

KldBaseReader::KldBaseReader(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path_, ec)) fail(path_, "base-logits file", "no such file");
  const uint64_t size = std::filesystem::file_size(path_, ec);
  if (ec) fail(path_, "base-logits file", "cannot read its size: {}", ec.message());
  in_.open(path_, std::ios::binary);
  if (!in_) fail(path_, "base-logits file", "cannot be opened");
  char magic[sizeof(kKldBaseMagic)] = {};
  in_.read(magic, sizeof(magic));
  if (!in_ || std::memcmp(magic, kKldBaseMagic, sizeof(magic)) != 0)
    fail(path_, "magic", "not a llama-perplexity base-logits file (it does not start with \"_logits_\")");
  int32_t dims[3];
  in_.read(reinterpret_cast<char*>(dims), sizeof(dims));
  if (!in_) fail(path_, "header", "truncated: the file ends inside its 20-byte header ({} bytes)", size);
  header_ = {static_cast<uint32_t>(dims[0]), dims[1], dims[2]};  // n_ctx is read unsigned, as llama.cpp does
  check_dimensions(path_, header_);
  const uint64_t want = kld_base_file_size(header_.n_ctx, header_.n_vocab, header_.n_chunk);
  if (size < want)
    fail(path_, "base-logits file",
         "truncated: {} bytes, but n_ctx {}, n_vocab {} and {} chunks need {} (a run interrupted, or still writing it?)",
         size, header_.n_ctx, header_.n_vocab, header_.n_chunk, want);
  if (size > want)
    fail(path_, "base-logits file", "{} bytes, {} more than n_ctx {}, n_vocab {} and {} chunks account for", size,
         size - want, header_.n_ctx, header_.n_vocab, header_.n_chunk);
  tokens_.resize(static_cast<size_t>(header_.n_chunk * header_.n_ctx));
  in_.read(reinterpret_cast<char*>(tokens_.data()), static_cast<std::streamsize>(tokens_.size() * sizeof(int32_t)));
  if (!in_) fail(path_, "tokens", "reading the {} tokens failed", tokens_.size());
}

void KldBaseReader::read_chunk(std::vector<uint16_t>& rows) {
  if (chunks_read_ >= header_.n_chunk)
    fail(path_, "base-logits file", "all {} chunks have been read", header_.n_chunk);
  rows.resize(static_cast<size_t>(kld_rows_per_chunk(header_.n_ctx) * kld_row_width(header_.n_vocab)));
  in_.read(reinterpret_cast<char*>(rows.data()), static_cast<std::streamsize>(rows.size() * sizeof(uint16_t)));
  if (!in_) fail(path_, "log-probs", "reading chunk {} failed", chunks_read_);
  ++chunks_read_;
}

}  // namespace tessera
