// tessera convert: a GGUF file or HF checkpoint (or a pulled model) into a
// bundle directory (bundle/manifest.h) — spec, programs for the requested
// chunking and prefill variants, every weight the programs read stored once
// in its chosen format, the tokenizer and chat template, stop tokens.
//
// Format rules (first match wins):
//   1. --keep REGEX=FORMAT rules, matched against the full HF name;
//   2. with keep_source_quant (the default for a quantized GGUF): a matrix
//      the GGUF stores in a ggml block format is transcoded losslessly into
//      blk4 / blk8 (convert/gguf_transcode.h): the source's own values, run
//      by the integer kernels;
//   3. vectors (norms, biases): f32;
//   4. model.embed_tokens.weight: `embeddings` (it is also the output
//      projection when embeddings are tied — one tensor, one format);
//   5. lm_head.weight: `lm_head`;
//   6. every other matrix (attention and MLP projections): `weights`.
// LUT formats need rows divisible by the group size; a matrix whose rows are
// not uses the largest divisor of its rows below the group size (recorded per
// tensor in the manifest).
//
// LUT palettes are activation-aware by default: before quantizing, the f32
// source runs once over a calibration text and each linear layer's palettes
// are fitted to minimize the expected output error under those inputs
// (convert/calibration.h; measured in docs/QUANTIZATION.md).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/weight_format.h"

namespace tessera {

struct ConvertOptions {
  // Rule 2 above: a quantized GGUF's block-quantized matrices keep their
  // values (default_convert_options turns it on for such a source).
  bool keep_source_quant = false;
  WeightFormat weights = WeightFormat::Lut4;
  WeightFormat embeddings = WeightFormat::Int8;
  WeightFormat lm_head = WeightFormat::Int8;
  int64_t group_size = 16;  // measured: docs/QUANTIZATION.md
  uint64_t seed = 0;
  int kmeans_iterations = 25;
  // LUT formats: "builtin", "none" or a text file (convert/calibration.h):
  // the palettes are weighted by the source model's input moments over
  // calibration_tokens tokens of that text. Skipped when no weight is a LUT.
  std::string calibration = "builtin";
  int64_t calibration_tokens = 512;
  std::vector<std::pair<std::string, WeightFormat>> keep;  // (regex, format)
  int64_t chunks = 1;
  std::vector<int64_t> prefill_sizes = {8, 32, 512};
  bool force = false;
  int threads = 1;
  bool progress = true;
};

// The options of the default bundle of `source` (a resolved GGUF file or HF
// directory): what `tessera convert` takes for the options it is not given
// and what `tessera run` / `chat` / `bench` and tessera.Model convert a source
// to on first use (convert/bundle_cache.h). ConvertOptions{} (lut4 layers,
// int8 embeddings and head) with keep_source_quant set when the source is a
// GGUF holding block-quantized matrices (and its unquantized matrices, if
// any, as int8, so that no calibration run is needed): converting it then
// changes no block-quantized weight value (a second quantization of 4-bit weights to lut4 measurably
// hurts answers, docs/QUANTIZATION.md). The single place that decides those
// defaults; the cache keys each bundle on a fingerprint of what this
// returns, so a change here converts again. `threads` is the caller's (the
// output is identical for any count).
ConvertOptions default_convert_options(const std::string& source, int threads = 1);

// Parses "REGEX=FORMAT" (for --keep). Throws Error on a bad format or regex.
std::pair<std::string, WeightFormat> parse_keep_rule(const std::string& rule);

// Writes the bundle atomically (bundle/bundle_writer.h). Throws Error naming
// the problem; on error nothing is left at `out`.
void convert_model(const std::string& source, const std::string& out, const ConvertOptions& options);

}  // namespace tessera
