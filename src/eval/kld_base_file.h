// llama.cpp's base-logits file: what `llama-perplexity --kl-divergence-base
// PATH` writes from a base model (usually f16 / f32) and reads back with
// `--kl-divergence` to compare a quantized model against it. Tessera reads
// and writes the same bytes (eval/perplexity.h), so one base file judges
// both runtimes.
//
// Layout (host byte order; every platform Tessera builds for is
// little-endian, as are llama.cpp's):
//
//   offset 0   char[8]  "_logits_"
//          8   int32    n_ctx    tokens per chunk (llama.cpp reads it as uint32)
//         12   int32    n_vocab  logits per position
//         16   int32    n_chunk
//         20   int32    tokens[n_chunk * n_ctx]   the text's tokens as
//                       tokenized (BOS included where the tokenizer adds it),
//                       before the per-chunk BOS substitution
//   then, chunk after chunk, one row per scored position: positions
//   n_ctx/2 ... n_ctx-2 of the chunk (n_ctx - 1 - n_ctx/2 rows; position p's
//   logits predict the token at p + 1). A row is row_width(n_vocab) =
//   2*((n_vocab+1)/2) + 4 uint16 values:
//     [0..1]  float scale
//     [2..3]  float min_log_prob
//     [4 ...] uint16 q[n_vocab], then one zero uint16 when n_vocab is odd
//             (rows stay 4-byte aligned)
//   and entry i stands for the log-probability scale * q[i] + min_log_prob.
//
// The compression of one row of logits l (compress_log_probs): with
// m = max l, lo = max(min l, m - 16) and lse = ln sum_i exp(l_i - m) (the
// sum in double, lse rounded to float),
//   scale        = (m - lo) / 65535
//   min_log_prob = lo - m - lse                (= log-softmax of lo)
//   q[i]         = round-half-even((l_i - lo) / scale) if l_i > lo, else 0
// (the division as a multiplication by the float 1/scale; all q = 0 when
// scale is 0). So log-probabilities more than 16 nats below the top one are
// clamped to min_log_prob, and the rest are kept to within scale / 2 <=
// 16 / 131070 nats (1.2e-4).
#pragma once

#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace tessera {

inline constexpr char kKldBaseMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};

// uint16 values per scored position for a vocabulary of n_vocab.
constexpr int64_t kld_row_width(int64_t n_vocab) { return 2 * ((n_vocab + 1) / 2) + 4; }
// Scored positions per chunk of n_ctx tokens: n_ctx/2 ... n_ctx-2.
constexpr int64_t kld_rows_per_chunk(int64_t n_ctx) { return n_ctx - 1 - n_ctx / 2; }
// Bytes of a whole file with these dimensions.
uint64_t kld_base_file_size(int64_t n_ctx, int64_t n_vocab, int64_t n_chunk);

// Fills `row` (kld_row_width(logits.size()) values) with the compressed
// log-probabilities of `logits` and returns the negative log-likelihood of
// token `target` as llama.cpp computes it while writing (m + lse - l_target,
// in float).
float compress_log_probs(std::span<const float> logits, int32_t target, uint16_t* row);

// Entry i of a row: scale * q[i] + min_log_prob (float, as llama.cpp decodes it).
float kld_row_scale(const uint16_t* row);
float kld_row_min_log_prob(const uint16_t* row);
inline const uint16_t* kld_row_values(const uint16_t* row) { return row + 4; }

struct KldBaseHeader {
  int64_t n_ctx = 0;
  int64_t n_vocab = 0;
  int64_t n_chunk = 0;
};

// Writes a base file: the header and tokens at construction, then the rows
// of each chunk in order, into PATH.tmp; commit() checks that every row
// came, closes it and renames it over PATH. Destroyed uncommitted (an error
// on the way), it removes PATH.tmp, so PATH is never half written.
class KldBaseWriter {
 public:
  // tokens: n_chunk * n_ctx ids. Throws Error when PATH.tmp cannot be written.
  KldBaseWriter(std::string path, const KldBaseHeader& header, std::span<const int32_t> tokens);
  ~KldBaseWriter();
  KldBaseWriter(const KldBaseWriter&) = delete;
  KldBaseWriter& operator=(const KldBaseWriter&) = delete;

  // `rows`: whole rows (a multiple of kld_row_width(n_vocab) values).
  void write_rows(std::span<const uint16_t> rows);
  void commit();

 private:
  std::string path_, tmp_;
  KldBaseHeader header_;
  std::ofstream out_;
  uint64_t rows_written_ = 0;
  bool committed_ = false;
};

// Reads a base file: the header and tokens at construction, after checking
// the magic, the dimensions and that the file holds exactly the bytes they
// imply (a truncated file is refused before any model runs); then the rows
// of one chunk per read_chunk().
class KldBaseReader {
 public:
  // Throws Error naming the problem (cannot open, bad magic, impossible
  // dimensions, truncated, longer than its header says).
  explicit KldBaseReader(std::string path);

  const std::string& path() const { return path_; }
  const KldBaseHeader& header() const { return header_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  // The next chunk's kld_rows_per_chunk(n_ctx) rows into `rows`. Throws
  // Error past the last chunk or when reading fails.
  void read_chunk(std::vector<uint16_t>& rows);

 private:
  std::string path_;
  KldBaseHeader header_;
  std::vector<int32_t> tokens_;
  std::ifstream in_;
  int64_t chunks_read_ = 0;
};

}  // namespace tessera
