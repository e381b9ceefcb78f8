// From a ModelSpec to the programs of a model: for every tokens-per-call
// variant (decode T=1 and each prefill T) one program per chunk, a chunk
// being a contiguous range of decoder layers. The first chunk embeds the
// token ids, the last computes logits; in between the residual stream "x"
// is the only value that crosses a chunk boundary.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"
#include "graph/program.h"
#include "model/program_builder.h"

namespace tessera::model {

struct BuildOptions {
  int64_t chunks = 1;
  std::vector<int64_t> prefill_sizes = {8, 32, 512};
  // The last chunk ends with an Argmax op (output "next_ids"). Bundles
  // written before the op existed record programs without it.
  bool argmax = true;
};

// Throws Error for an architecture without a builder or a bad option.
ProgramSet build_programs(const ModelSpec& spec, const BuildOptions& options = {});

// One decoder layer into `b` (reads and updates value "x"), per family.
void build_llama_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer);   // llama.cc: Llama, Qwen2, Qwen3
void build_gemma3_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer);  // gemma3.cc
void build_lfm2_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer);    // lfm2.cc
void build_qwen3_5_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer); // qwen3_5.cc
void build_gemma4_layer(ProgramBuilder& b, const ModelSpec& s, int64_t layer);  // gemma4.cc
// Gemma 4's per-layer embeddings ("ple"), after the token embedding (gemma4.cc).
void build_per_layer_inputs(ProgramBuilder& b, const ModelSpec& s);

}  // namespace tessera::model
