#include "model/builders.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

namespace tessera::model {

namespace {

using LayerBuilder = void (*)(ProgramBuilder&, const ModelSpec&, int64_t);

LayerBuilder layer_builder(const ModelSpec& s) {
  switch (s.arch) {
    case Architecture::Llama:
    case Architecture::Qwen2:
    case Architecture::Qwen3:
      return build_llama_layer;
    case Architecture::Gemma3:
      return build_gemma3_layer;
    case Architecture::Lfm2:
      return build_lfm2_layer;
    case Architecture::Qwen3_5:
      return build_qwen3_5_layer;
    case Architecture::Gemma4:
      break;
  }
  fail(s.source_architecture, "architecture",
       "{} models cannot be run yet (supported: llama, qwen2, qwen3, qwen3_5, gemma3, lfm2)",
       architecture_name(s.arch));
}

void check_spec(const ModelSpec& s) {
  auto bad = [&](const char* field, int64_t v) {
    fail(s.source_architecture, field, "must be positive, got {}", v);
  };
  if (s.hidden_size <= 0) bad("hidden_size", s.hidden_size);
  if (s.vocab_size <= 0) bad("vocab_size", s.vocab_size);
  if (s.num_layers <= 0) bad("num_layers", s.num_layers);
  if (s.num_heads <= 0) bad("num_heads", s.num_heads);
  if (s.num_kv_heads <= 0) bad("num_kv_heads", s.num_kv_heads);
  if (s.head_dim <= 0) bad("head_dim", s.head_dim);
  if (s.num_heads % s.num_kv_heads != 0)
    fail(s.source_architecture, "num_kv_heads", "{} query heads are not a multiple of {} KV heads", s.num_heads,
         s.num_kv_heads);
  if (static_cast<int64_t>(s.layer_types.size()) != s.num_layers)
    fail(s.source_architecture, "layer_types", "{} entries for {} layers", s.layer_types.size(), s.num_layers);
  for (int64_t l = 0; l < s.num_layers; ++l) {
    const LayerKind k = s.layer_types[l];
    const bool conv = k == LayerKind::ShortConv && s.arch == Architecture::Lfm2;
    const bool delta = k == LayerKind::LinearAttention && s.arch == Architecture::Qwen3_5;
    if (delta && (s.linear_conv_kernel < 1 || s.linear_conv_kernel > 64 || s.linear_num_key_heads < 1 ||
                  s.linear_num_value_heads % s.linear_num_key_heads != 0 || s.linear_key_head_dim < 1 ||
                  s.linear_value_head_dim < 1))
      fail(s.source_architecture, "linear attention", "layer {} has an unusable delta-net geometry", l);
    if (k != LayerKind::FullAttention && k != LayerKind::SlidingAttention && !conv && !delta)
      fail(s.source_architecture, "layer_types", "layer {} is {}, which has no kernel yet", l, layer_kind_name(k));
    if (conv && (s.conv_kernel < 1 || s.conv_kernel > 64))
      fail(s.source_architecture, "conv_L_cache", "must be in [1, 64], got {}", s.conv_kernel);
    if (k == LayerKind::SlidingAttention && s.sliding_window <= 0)
      fail(s.source_architecture, "sliding_window", "layer {} slides but the window is {}", l, s.sliding_window);
  }
  const std::string& rope_type = s.rope.scaling.type;
  if (rope_type == "longrope" || rope_type == "dynamic")
    fail(s.source_architecture, "rope_scaling", "RoPE scaling type '{}' is not supported", rope_type);
}

Program build_one(const ModelSpec& s, LayerBuilder layer, int64_t tokens, int64_t chunk, int64_t begin,
                  int64_t end, bool last, bool argmax) {
  Program p;
  p.kind = tokens == 1 ? ProgramKind::Decode : ProgramKind::Prefill;
  p.name = tokens == 1 ? fmt::format("decode.c{}", chunk) : fmt::format("prefill{}.c{}", tokens, chunk);
  p.max_tokens = tokens;
  p.chunk = chunk;
  p.layer_begin = begin;
  p.layer_end = end;
  ProgramBuilder b(p);
  if (begin == 0) {
    build_embedding(b, s);
  } else {
    b.input(b.value("x", s.hidden_size));
  }
  // Inputs every attention layer reads: positions and the RoPE tables it uses.
  b.input(b.value("positions", 1, ValueType::I32));
  for (int64_t l = begin; l < end; ++l) layer(b, s, l);
  for (const char* table : {"rope", "rope_local"}) {
    for (const char* part : {".cos", ".sin"}) {
      const int id = p.find_value(std::string(table) + part);
      if (id >= 0) b.input(id);
    }
  }
  if (last) {
    build_head(b, s, argmax);
  } else {
    b.output(b.value("x", s.hidden_size));
  }
  return p;
}

}  // namespace

ProgramSet build_programs(const ModelSpec& spec, const BuildOptions& options) {
  check_spec(spec);
  const LayerBuilder layer = layer_builder(spec);
  if (options.chunks < 1 || options.chunks > spec.num_layers)
    fail("options", "chunks", "must be between 1 and the layer count {}, got {}", spec.num_layers, options.chunks);
  ProgramSet set;
  set.num_chunks = options.chunks;
  set.prefill_sizes = options.prefill_sizes;
  std::sort(set.prefill_sizes.begin(), set.prefill_sizes.end());
  set.prefill_sizes.erase(std::unique(set.prefill_sizes.begin(), set.prefill_sizes.end()), set.prefill_sizes.end());
  for (int64_t t : set.prefill_sizes)
    if (t < 2 || t > 65536) fail("options", "prefill sizes", "each must be in [2, 65536], got {}", t);
  std::vector<int64_t> variants = {1};
  variants.insert(variants.end(), set.prefill_sizes.begin(), set.prefill_sizes.end());
  for (int64_t tokens : variants) {
    for (int64_t c = 0; c < options.chunks; ++c) {
      const int64_t begin = spec.num_layers * c / options.chunks;
      const int64_t end = spec.num_layers * (c + 1) / options.chunks;
      set.programs.push_back(build_one(spec, layer, tokens, c, begin, end, c + 1 == options.chunks, options.argmax));
    }
  }
  return set;
}

}  // namespace tessera::model
