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

}  // namespace tessera::model
