#include "sources/gguf_spec.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <string_view>

#include <fmt/ranges.h>

#include "core/error.h"
#include "core/ggml_dequant.h"

namespace tessera {


namespace {

// RoPE frequency scaling from `{arch}.rope.scaling.*` (llama.cpp's names) into
// transformers' rope_scaling terms.
RopeScaling read_rope_scaling(const GgufMetadataReader& r) {
  RopeScaling s;
  const GgufFile& f = r.f_;
  const std::string type_key = r.key("rope.scaling.type");
  std::optional<std::string> type = f.get_string(type_key);
  const std::optional<double> factor = r.opt_float("rope.scaling.factor", 0.0);
  const std::optional<double> legacy_linear = r.opt_float("rope.scale_linear", 0.0);
  if (!type) {
    // Older converters wrote only `rope.scale_linear` for linear scaling.
    if (legacy_linear && *legacy_linear != 1.0) {
      s.type = "linear";
      s.factor = *legacy_linear;
    }
    return s;
  }
  if (*type == "none") return s;
  const double fac = factor ? *factor : legacy_linear ? *legacy_linear : 0.0;
  if (!(fac > 0.0))
    fail(f.path(), r.subject(r.key("rope.scaling.factor")), "required by rope scaling '{}' and must be > 0",
         *type);
  if (*type == "linear") {
    s.type = "linear";
    s.factor = fac;
  } else if (*type == "yarn") {
    s.type = "yarn";
    s.factor = fac;
    s.original_max_position_embeddings =
        r.opt_int("rope.scaling.original_context_length").value_or(0);
    s.beta_fast = r.opt_float("rope.scaling.yarn_beta_fast", 0.0).value_or(32.0);
    s.beta_slow = r.opt_float("rope.scaling.yarn_beta_slow", 0.0).value_or(1.0);
    if (auto af = r.opt_float("rope.scaling.attn_factor", 0.0)) s.attention_factor = *af;
  } else {
    fail(f.path(), r.subject(type_key), "rope scaling type '{}' is not supported", *type);
  }
  return s;
}

// Llama 3.x checkpoints carry their "llama3" RoPE scaling as a tensor of
// per-frequency divisors (`rope_freqs.weight`) computed by llama.cpp's converter:
//   wavelen_i = 2*pi / theta^(-2i/d)
//   f_i = 1                          if wavelen_i < C / high
//       = factor                     if wavelen_i > C / low
//       = 1 / ((1 - s) / factor + s) otherwise, s = (C / wavelen_i - low) / (high - low)
// with C = original_max_position_embeddings. Only the ratios C/low and C/high
// matter, so the parameters are recovered with low = 1 (the value every Llama 3
// release uses), from the ramp entries, and then verified entry by entry.
RopeScaling llama3_from_rope_freqs(const GgufFile& f, const TensorView& t, double theta,
                                   int64_t rot_dims) {
  const std::string subject = fmt::format("tensor '{}'", t.name);
  if (t.shape.size() != 1 || t.shape[0] != static_cast<uint64_t>(rot_dims / 2))
    fail(f.path(), subject, "expected {} entries (half the rotary dimensions)", rot_dims / 2);
  const std::vector<float> fac = dequantize(t);
  const size_t n = fac.size();
  std::vector<double> wavelen(n);
  for (size_t i = 0; i < n; ++i)
    wavelen[i] = 2.0 * std::numbers::pi * std::pow(theta, 2.0 * static_cast<double>(i) / rot_dims);
  double factor = 1.0;
  for (float x : fac) {
    if (!(std::isfinite(x) && x >= 1.0f)) fail(f.path(), subject, "entry {} is not a factor >= 1", x);
    factor = std::max(factor, static_cast<double>(x));
  }
  RopeScaling s;
  if (factor == 1.0) return s;  // all ones: plain RoPE

  // Ramp entries: strictly between 1 and factor. s_i is linear in 1/wavelen:
  // s = (C / low) / (high - low) * (1/w) - low / (high - low) = A / w + B.
  auto ramp = [&](size_t i) { return fac[i] > 1.0f * (1 + 1e-6) && fac[i] < factor * (1 - 1e-6); };
  auto smooth = [&](size_t i) { return (1.0 / fac[i] - 1.0 / factor) / (1.0 - 1.0 / factor); };
  double high = 4.0, context = 8192.0;  // Llama 3 defaults, used when the ramp is too short to fit
  std::vector<size_t> idx;
  for (size_t i = 0; i < n; ++i)
    if (ramp(i)) idx.push_back(i);
  if (idx.size() >= 2) {
    const size_t a = idx.front(), b = idx.back();
    const double A = (smooth(b) - smooth(a)) / (1.0 / wavelen[b] - 1.0 / wavelen[a]);
    const double B = smooth(a) - A / wavelen[a];
    // With low = 1: B = -1 / (high - 1), A = C / (high - 1).
    if (B < 0.0) {
      high = 1.0 - 1.0 / B;
      context = std::round(-A / B);
      high = std::round(high * 1e4) / 1e4;
    }
  }
  const double low = 1.0;
  for (size_t i = 0; i < n; ++i) {
    double expect;
    if (wavelen[i] < context / high) {
      expect = 1.0;
    } else if (wavelen[i] > context / low) {
      expect = factor;
    } else {
      const double sm = (context / wavelen[i] - low) / (high - low);
      expect = 1.0 / ((1.0 - sm) / factor + sm);
    }
    if (std::fabs(expect - fac[i]) > 1e-3 * expect)
      fail(f.path(), subject,
           "per-frequency RoPE factors do not follow Llama 3 scaling (entry {} is {}, expected {})", i,
           fac[i], expect);
  }
  s.type = "llama3";
  s.factor = factor;
  s.low_freq_factor = low;
  s.high_freq_factor = high;
  s.original_max_position_embeddings = static_cast<int64_t>(context);
  return s;
}

// Token texts that end a chat turn; llama.cpp stops generation on them too
// (its end-of-generation set), and HF generation configs list them as eos.
constexpr std::array<std::string_view, 5> kEndOfTurnTexts = {
    "<end_of_turn>", "<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end|>"};


}  // namespace

GgufCommon read_gguf_common(const GgufMetadataReader& r, const GgufCommonOptions& options) {
  const GgufFile& f = r.f_;
  // --- sizes -------------------------------------------------------------
  GgufCommon c;
  ModelSpec& spec = c.spec;
  const int64_t blocks = c.blocks = r.req_int("block_count", 1, kGgufMaxLayers);
  // Blocks after the decoder's layers (Qwen 3.5's multi-token-prediction
  // blocks, llama.cpp's "nextn" layers): block_count counts them too.
  int64_t trailing = 0;
  if (options.trailing_blocks_key != nullptr) {
    trailing = r.opt_int(options.trailing_blocks_key, 0, kGgufMaxLayers).value_or(0);
    if (trailing >= blocks)
      r.bad(r.key(options.trailing_blocks_key),
            fmt::format("{} prediction blocks leave none of the {} blocks for the decoder", trailing, blocks));
  }
  spec.num_layers = blocks - trailing;
  spec.hidden_size = r.req_int("embedding_length");
  spec.context_length = r.req_int("context_length");
  const int64_t L = spec.num_layers;
  // Per-layer KV heads and MLP widths (Gemma 4) are left to the architecture.
  const bool uniform = !options.per_layer_geometry;

  const auto heads = r.opt_per_layer("attention.head_count", L, 0);
  if (!heads) fail(f.path(), r.subject(r.key("attention.head_count")), "required key is missing");
  spec.num_heads = r.uniform("attention.head_count", *heads);

  // head_count_kv defaults to head_count (llama.cpp). LFM2 lists it per layer,
  // 0 marking the short-convolution layers.
  const auto kv_heads = r.opt_per_layer("attention.head_count_kv", L, 0);
  std::vector<int64_t> kv = kv_heads ? *kv_heads : *heads;
  if (uniform) spec.num_kv_heads = r.uniform("attention.head_count_kv", kv);
  if (!options.layers_without_attention) {
    for (int64_t x : kv)
      if (x == 0) r.bad(r.key("attention.head_count_kv"), "is zero for a layer");
    for (int64_t x : *heads)
      if (x == 0) r.bad(r.key("attention.head_count"), "is zero for a layer");
  }
  if (uniform && spec.num_heads % spec.num_kv_heads != 0)
    r.bad(r.key("attention.head_count_kv"),
          fmt::format("{} query heads are not a multiple of {} kv heads", spec.num_heads,
                      spec.num_kv_heads));

  const auto ffn = r.opt_per_layer("feed_forward_length", L, 0);
  if (!ffn) fail(f.path(), r.subject(r.key("feed_forward_length")), "required key is missing");
  if (uniform) spec.intermediate_size = r.uniform("feed_forward_length", *ffn);

  // Head size: attention.key_length when present (Qwen3, Gemma; Gemma 4: of its
  // full-attention layers), else hidden / heads.
  if (auto k = r.opt_int("attention.key_length")) {
    spec.head_dim = *k;
  } else {
    if (spec.hidden_size % spec.num_heads != 0)
      r.bad(r.key("embedding_length"),
            fmt::format("{} is not a multiple of {} heads and attention.key_length is missing",
                        spec.hidden_size, spec.num_heads));
    spec.head_dim = spec.hidden_size / spec.num_heads;
  }
  if (auto v = r.opt_int("attention.value_length"); v && *v != spec.head_dim)
    r.bad(r.key("attention.value_length"),
          fmt::format("value head size {} differs from key head size {}", *v, spec.head_dim));

  const std::optional<double> eps = r.opt_float("attention.layer_norm_rms_epsilon", 0.0);
  if (!eps) fail(f.path(), r.subject(r.key("attention.layer_norm_rms_epsilon")), "required key is missing");
  spec.norm_eps = *eps;

  // --- RoPE --------------------------------------------------------------
  spec.rope.theta = r.opt_float("rope.freq_base", 0.0).value_or(10000.0);
  if (!(spec.rope.theta > 0.0)) r.bad(r.key("rope.freq_base"), "must be > 0");
  int64_t rot_dims = spec.head_dim;
  if (auto rd = r.opt_int("rope.dimension_count")) {
    if (*rd > spec.head_dim || *rd % 2 != 0)
      r.bad(r.key("rope.dimension_count"),
            fmt::format("{} rotary dimensions for head size {}", *rd, spec.head_dim));
    rot_dims = *rd;
  }
  spec.rope.partial_rotary_factor = static_cast<double>(rot_dims) / static_cast<double>(spec.head_dim);
  spec.rope.neox_style = true;  // HF rotate-half; see the header about llama's stored q/k rows
  spec.rope.scaling = read_rope_scaling(r);
  // (Gemma 4's rope_freqs.weight is its proportional RoPE, read by its architecture.)
  if (const TensorView* rf = uniform ? f.find_tensor("rope_freqs.weight") : nullptr) {
    RopeScaling from_tensor = llama3_from_rope_freqs(f, *rf, spec.rope.theta, rot_dims);
    if (from_tensor.type != "default") {
      if (spec.rope.scaling.type != "default")
        fail(f.path(), "tensor 'rope_freqs.weight'", "given together with rope scaling '{}'",
             spec.rope.scaling.type);
      spec.rope.scaling = from_tensor;
    }
  }

  // --- attention variants ---------------------------------------------------
  spec.sliding_window = r.opt_int("attention.sliding_window", 0).value_or(0);
  if (spec.sliding_window > 0 && !options.sliding_window)
    r.bad(r.key("attention.sliding_window"), "sliding-window attention is not supported for this architecture");
  spec.attn_logit_softcap = r.opt_float("attn_logit_softcapping", 0.0).value_or(0.0);
  spec.final_logit_softcap = r.opt_float("final_logit_softcapping", 0.0).value_or(0.0);
  for (int64_t i = 0; i < L && !spec.attention_bias; ++i)  // Qwen3.5's first attention layer is not blk.0
    spec.attention_bias = f.find_tensor(fmt::format("blk.{}.attn_q.bias", i)) != nullptr;
  spec.tie_word_embeddings = f.find_tensor("output.weight") == nullptr;
  spec.layer_types.assign(static_cast<size_t>(L), LayerKind::FullAttention);
  c.kv_heads = kv;
  c.ffn = *ffn;
  c.rot_dims = rot_dims;
  return c;
}

void finish_gguf_spec(const GgufMetadataReader& r, ModelSpec& spec) {
  const GgufFile& f = r.f_;
  const std::vector<std::string>* tokens = f.get_string_array("tokenizer.ggml.tokens");
  const TensorView* embd = f.find_tensor("token_embd.weight");
  if (auto v = r.opt_int("vocab_size")) {
    spec.vocab_size = *v;
  } else if (tokens != nullptr) {
    spec.vocab_size = static_cast<int64_t>(tokens->size());
  } else if (embd != nullptr && embd->shape.size() == 2) {
    spec.vocab_size = static_cast<int64_t>(embd->shape[0]);
  } else {
    fail(f.path(), "metadata 'tokenizer.ggml.tokens'",
         "required to know the vocabulary size ({} is missing too)", r.key("vocab_size"));
  }
  if (spec.vocab_size < 1) fail(f.path(), "metadata 'tokenizer.ggml.tokens'", "empty vocabulary");
  if (embd != nullptr) {
    const std::vector<uint64_t> want = {static_cast<uint64_t>(spec.vocab_size),
                                        static_cast<uint64_t>(spec.hidden_size)};
    if (embd->shape != want)
      fail(f.path(), "tensor 'token_embd.weight'", "shape [{}] does not match vocab {} x hidden {}",
           fmt::join(embd->shape, ", "), spec.vocab_size, spec.hidden_size);
  }


  auto token_id = [&](const std::string& k) -> std::optional<int64_t> {
    const std::optional<int64_t> id = f.get_int(k);
    if (id && (*id < 0 || *id >= spec.vocab_size))
      fail(f.path(), fmt::format("metadata '{}'", k), "token id {} outside the vocabulary of {}", *id,
           spec.vocab_size);
    return id;
  };
  spec.bos_token_id = token_id("tokenizer.ggml.bos_token_id").value_or(-1);
  auto add_eos = [&](int64_t id) {
    if (std::find(spec.eos_token_ids.begin(), spec.eos_token_ids.end(), id) == spec.eos_token_ids.end())
      spec.eos_token_ids.push_back(id);
  };
  for (const char* k : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                        "tokenizer.ggml.eom_token_id"})
    if (auto id = token_id(k)) add_eos(*id);
  if (tokens != nullptr) {
    const int64_t n = std::min<int64_t>(spec.vocab_size, static_cast<int64_t>(tokens->size()));
    for (int64_t i = 0; i < n; ++i)
      for (std::string_view text : kEndOfTurnTexts)
        if ((*tokens)[static_cast<size_t>(i)] == text) add_eos(i);
  }
}

ModelSpec read_shared_gguf_spec(const GgufMetadataReader& r, const GgufCommonOptions& options) {
  ModelSpec spec = read_gguf_common(r, options).spec;
  finish_gguf_spec(r, spec);
  return spec;
}

}  // namespace tessera
