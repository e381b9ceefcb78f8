// Calibration for activation-aware palettes: runs the f32 source model over a
// short text and records, for every linear layer's weight, the second moment
// of each input column, E[x_c²] over the text's tokens. quantize_weight
// (convert/quantize.h) weighs the k-means with it, so that a palette spends
// its entries where the layer's output is sensitive (columns fed by large
// activations) rather than spreading them evenly over the weights.
//
// The forward runs on the reference kernels (Isa::Scalar), so the moments —
// and the bundle — are the same bits on every machine and thread count. The
// text is tokenized with the model's tokenizer; a model without one gets
// uniformly drawn token ids from a fixed-seed std::mt19937_64 (raw engine
// output mod vocab), which suits the tiny random test models it is for.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

struct CalibrationOptions {
  std::string text;         // empty: builtin_calibration_text()
  int64_t max_tokens = 512; // tokens of the text used (capped by the model's context)
  int threads = 1;          // never changes the result
};

struct Calibration {
  std::map<std::string, std::vector<float>> input_moments;  // weight name → E[x_c²], one per input column
  std::vector<int32_t> ids;                                   // the tokens the moments average over
  bool random_ids = false;                                    // the model had no tokenizer
};

// Loads the source (GGUF file, HF directory or pulled name; what
// Model::load accepts) in f32 and runs the calibration text through it once.
// Throws Error naming the problem (unloadable source, empty text).
Calibration calibrate(const std::string& source, const CalibrationOptions& options);

// The text calibrate() uses by default: a few thousand characters of mixed
// English prose, dialogue, a list, arithmetic and code, written for this
// purpose (distinct from the oracle and quality corpora that evaluate the
// result).
std::string_view builtin_calibration_text();

}  // namespace tessera
