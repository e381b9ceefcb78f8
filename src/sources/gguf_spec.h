// The toolkit for reading a ModelSpec from GGUF metadata (llama.cpp's
// `{arch}.*` and `tokenizer.ggml.*` keys): typed, bounds-checked access to one
// architecture's keys (GgufMetadataReader), the keys every architecture shares
// (read_gguf_common) and the vocabulary and special tokens (finish_gguf_spec).
// Each architecture's reader (src/model/<arch>/config.cc) is built from these;
// spec_from_gguf (model/architectures.h) picks it by `general.architecture`.
//
// The spec describes the model as Hugging Face transformers defines it, i.e.
// what `AutoConfig.from_pretrained(dir, gguf_file=...)` yields for the same
// file, with the architecture facts llama.cpp hard-codes (Gemma 3: every 6th
// layer global, local RoPE base 10000, ...). Conventions of llama.cpp's
// converter that change the STORED tensors but not the model (llama's permuted
// q/k rows, Gemma's norms stored as 1 + w, ...) are undone on load by each
// architecture's tensor rules (sources/weight_loader.h).
//
// Every problem is an Error naming the file and the metadata key or tensor:
// a required key missing, a wrong type, values outside their bounds or
// inconsistent with each other.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/model_spec.h"
#include "sources/gguf.h"

namespace tessera {

// Sanity bounds on sizes read from the (untrusted) file: far above any real
// model, low enough that nothing sized from them can exhaust memory.
constexpr int64_t kGgufMaxLayers = 1 << 16;
constexpr int64_t kGgufMaxDim = int64_t{1} << 31;

class GgufMetadataReader {
 public:
  GgufMetadataReader(const GgufFile& f, std::string arch) : f_(f), arch_(std::move(arch)) {}

  std::string key(std::string_view name) const { return fmt::format("{}.{}", arch_, name); }
  std::string subject(std::string_view full_key) const {
    return fmt::format("metadata '{}'", full_key);
  }
  [[noreturn]] void bad(std::string_view full_key, const std::string& problem) const {
    fail(f_.path(), subject(full_key), "{}", problem);
  }

  // An integer `{arch}.name` in [lo, hi]; nullopt when absent.
  std::optional<int64_t> opt_int(std::string_view name, int64_t lo = 1, int64_t hi = kGgufMaxDim) const {
    const std::string k = key(name);
    const std::optional<int64_t> v = f_.get_int(k);
    if (v && (*v < lo || *v > hi)) bad(k, fmt::format("value {} is outside [{}, {}]", *v, lo, hi));
    return v;
  }
  int64_t req_int(std::string_view name, int64_t lo = 1, int64_t hi = kGgufMaxDim) const {
    const std::optional<int64_t> v = opt_int(name, lo, hi);
    if (!v) fail(f_.path(), subject(key(name)), "required key is missing");
    return *v;
  }
  // A finite float `{arch}.name` >= lo; nullopt when absent.
  std::optional<double> opt_float(std::string_view name, double lo) const {
    const std::string k = key(name);
    const std::optional<double> v = f_.get_float(k);
    if (v && !(std::isfinite(*v) && *v >= lo))
      bad(k, fmt::format("value {} is not a finite number >= {}", *v, lo));
    return v;
  }

  // A per-layer integer `{arch}.name`: either one scalar for all layers or an
  // array with one entry per layer (as llama.cpp's get_key_or_arr accepts).
  std::optional<std::vector<int64_t>> opt_per_layer(std::string_view name, int64_t n_layers,
                                                    int64_t lo) const {
    const std::string k = key(name);
    const GgufValue* v = f_.find(k);
    if (v == nullptr) return std::nullopt;
    std::vector<int64_t> out;
    if (v->is_array()) {
      out = *f_.get_int_array(k);
      if (static_cast<int64_t>(out.size()) != n_layers)
        bad(k, fmt::format("has {} entries for {} layers", out.size(), n_layers));
    } else {
      out.assign(static_cast<size_t>(n_layers), *f_.get_int(k));
    }
    for (int64_t x : out)
      if (x < lo || x > kGgufMaxDim) bad(k, fmt::format("value {} is outside [{}, {}]", x, lo, kGgufMaxDim));
    return out;
  }

  // A per-layer flag list `{arch}.name`: an array of `n` bools; nullopt when absent.
  std::optional<std::vector<bool>> opt_bool_per_layer(std::string_view name, int64_t n) const {
    const std::string k = key(name);
    const GgufValue* v = f_.find(k);
    if (v == nullptr) return std::nullopt;
    if (!v->is_array() || v->element_type() != GgufType::BOOL || static_cast<int64_t>(v->size()) != n)
      bad(k, fmt::format("expected an array of {} bools (one per layer)", n));
    std::vector<bool> out;
    for (uint64_t i = 0; i < v->size(); ++i) out.push_back(*v->element(i).as_bool());
    return out;
  }

  // The one value shared by all nonzero entries of a per-layer list.
  int64_t uniform(std::string_view name, const std::vector<int64_t>& values) const {
    int64_t common = 0;
    for (int64_t x : values) {
      if (x == 0) continue;
      if (common != 0 && x != common)
        bad(key(name), "differs between layers, which is not supported");
      common = x;
    }
    if (common == 0) bad(key(name), "is zero for every layer");
    return common;
  }

  const GgufFile& f_;
  std::string arch_;
};

// What differs between architectures in the keys read_gguf_common reads.
struct GgufCommonOptions {
  // Key counting blocks stored after the decoder's layers (Qwen 3.5's
  // multi-token-prediction blocks: "nextn_predict_layers"); nullptr: none.
  const char* trailing_blocks_key = nullptr;
  // KV heads and MLP widths differ between layers and rope_freqs.weight is not
  // Llama 3 scaling (Gemma 4): left for the architecture to read.
  bool per_layer_geometry = false;
  // A 0 in attention.head_count_kv marks a layer without attention (LFM2).
  bool layers_without_attention = false;
  // attention.sliding_window is meaningful; otherwise a window > 0 is refused.
  bool sliding_window = false;
};

// The shared keys: sizes, heads, head size, norm epsilon, RoPE (with Llama 3
// scaling from rope_freqs.weight), sliding window, softcaps, q/k/v bias, tied
// output; every layer FullAttention. The per-layer lists are kept for the
// architecture to read further.
struct GgufCommon {
  ModelSpec spec;
  int64_t blocks = 0;                       // block_count, trailing blocks included
  std::vector<int64_t> kv_heads, ffn;         // per layer
  int64_t rot_dims = 0;                     // rope.dimension_count (head size when absent)
};
GgufCommon read_gguf_common(const GgufMetadataReader& r, const GgufCommonOptions& options);

// The vocabulary size (checked against token_embd.weight), bos, and the eos
// set: eos / eot / eom ids and the tokens whose text ends a chat turn.
void finish_gguf_spec(const GgufMetadataReader& r, ModelSpec& spec);

// read_gguf_common then finish_gguf_spec: the whole spec of an architecture
// whose GGUF carries nothing of its own.
ModelSpec read_shared_gguf_spec(const GgufMetadataReader& r, const GgufCommonOptions& options = {});

}  // namespace tessera
