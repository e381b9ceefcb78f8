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

// Sanity bounds on sizes read from the (untrusted) file: far above any real
// model, low enough that nothing sized from them can exhaust memory.
constexpr int64_t kMaxLayers = 1 << 16;
constexpr int64_t kMaxDim = int64_t{1} << 31;

class SpecReader {
 public:
  SpecReader(const GgufFile& f, std::string arch) : f_(f), arch_(std::move(arch)) {}

  std::string key(std::string_view name) const { return fmt::format("{}.{}", arch_, name); }
  std::string subject(std::string_view full_key) const {
    return fmt::format("metadata '{}'", full_key);
  }
  [[noreturn]] void bad(std::string_view full_key, const std::string& problem) const {
    fail(f_.path(), subject(full_key), "{}", problem);
  }

  // An integer `{arch}.name` in [lo, hi]; nullopt when absent.
  std::optional<int64_t> opt_int(std::string_view name, int64_t lo = 1, int64_t hi = kMaxDim) const {
    const std::string k = key(name);
    const std::optional<int64_t> v = f_.get_int(k);
    if (v && (*v < lo || *v > hi)) bad(k, fmt::format("value {} is outside [{}, {}]", *v, lo, hi));
    return v;
  }
  int64_t req_int(std::string_view name, int64_t lo = 1, int64_t hi = kMaxDim) const {
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
      if (x < lo || x > kMaxDim) bad(k, fmt::format("value {} is outside [{}, {}]", x, lo, kMaxDim));
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

// RoPE frequency scaling from `{arch}.rope.scaling.*` (llama.cpp's names) into
// transformers' rope_scaling terms.
RopeScaling read_rope_scaling(const SpecReader& r) {
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

struct ArchName {
  std::string_view gguf;
  Architecture arch;
};
constexpr std::array<ArchName, 7> kArchs = {{
    {"llama", Architecture::Llama},
    {"qwen2", Architecture::Qwen2},
    {"qwen3", Architecture::Qwen3},
    {"gemma3", Architecture::Gemma3},
    {"lfm2", Architecture::Lfm2},
    {"qwen35", Architecture::Qwen3_5},
    {"gemma4", Architecture::Gemma4},
}};

// Token texts that end a chat turn; llama.cpp stops generation on them too
// (its end-of-generation set), and HF generation configs list them as eos.
constexpr std::array<std::string_view, 5> kEndOfTurnTexts = {
    "<end_of_turn>", "<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end|>"};

}  // namespace

ModelSpec spec_from_gguf(const GgufFile& f) {
  const std::string arch_key = "general.architecture";
  const std::optional<std::string> arch = f.get_string(arch_key);
  if (!arch) fail(f.path(), fmt::format("metadata '{}'", arch_key), "required key is missing");
  ModelSpec spec;
  bool known = false;
  for (const ArchName& a : kArchs) {
    if (a.gguf == *arch) {
      spec.arch = a.arch;
      known = true;
    }
  }
  if (!known)
    fail(f.path(), fmt::format("metadata '{}'", arch_key),
         "architecture '{}' is not supported from GGUF (supported: llama, qwen2, qwen3, gemma3, lfm2, qwen35, gemma4)",
         *arch);
  spec.source_architecture = *arch;
  const SpecReader r(f, *arch);

  // --- sizes -------------------------------------------------------------
  const int64_t blocks = r.req_int("block_count", 1, kMaxLayers);
  // Qwen3.5 GGUFs may carry the checkpoint's multi-token-prediction block(s)
  // after the decoder's layers (blk.{L}.*, llama.cpp's "nextn" layers):
  // block_count counts them too, `nextn_predict_layers` says how many.
  int64_t nextn = 0;
  if (spec.arch == Architecture::Qwen3_5) {
    nextn = r.opt_int("nextn_predict_layers", 0, kMaxLayers).value_or(0);
    if (nextn >= blocks)
      r.bad(r.key("nextn_predict_layers"),
            fmt::format("{} prediction blocks leave none of the {} blocks for the decoder", nextn, blocks));
  }
  spec.num_layers = blocks - nextn;
  spec.hidden_size = r.req_int("embedding_length");
  spec.context_length = r.req_int("context_length");
  const int64_t L = spec.num_layers;
  // Gemma 4's KV heads and MLP widths differ between layers (read in its case below).
  const bool gemma4 = spec.arch == Architecture::Gemma4;

  const auto heads = r.opt_per_layer("attention.head_count", L, 0);
  if (!heads) fail(f.path(), r.subject(r.key("attention.head_count")), "required key is missing");
  spec.num_heads = r.uniform("attention.head_count", *heads);

  // head_count_kv defaults to head_count (llama.cpp). LFM2 lists it per layer,
  // 0 marking the short-convolution layers.
  const auto kv_heads = r.opt_per_layer("attention.head_count_kv", L, 0);
  std::vector<int64_t> kv = kv_heads ? *kv_heads : *heads;
  if (!gemma4) spec.num_kv_heads = r.uniform("attention.head_count_kv", kv);
  if (spec.arch != Architecture::Lfm2) {
    for (int64_t x : kv)
      if (x == 0) r.bad(r.key("attention.head_count_kv"), "is zero for a layer");
    for (int64_t x : *heads)
      if (x == 0) r.bad(r.key("attention.head_count"), "is zero for a layer");
  }
  if (!gemma4 && spec.num_heads % spec.num_kv_heads != 0)
    r.bad(r.key("attention.head_count_kv"),
          fmt::format("{} query heads are not a multiple of {} kv heads", spec.num_heads,
                      spec.num_kv_heads));

  const auto ffn = r.opt_per_layer("feed_forward_length", L, 0);
  if (!ffn) fail(f.path(), r.subject(r.key("feed_forward_length")), "required key is missing");
  if (!gemma4) spec.intermediate_size = r.uniform("feed_forward_length", *ffn);

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
  // (Gemma 4's rope_freqs.weight is its proportional RoPE: read in its case below.)
  if (const TensorView* rf = gemma4 ? nullptr : f.find_tensor("rope_freqs.weight")) {
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
  spec.attn_logit_softcap = r.opt_float("attn_logit_softcapping", 0.0).value_or(0.0);
  spec.final_logit_softcap = r.opt_float("final_logit_softcapping", 0.0).value_or(0.0);
  for (int64_t i = 0; i < L && !spec.attention_bias; ++i)  // Qwen3.5's first attention layer is not blk.0
    spec.attention_bias = f.find_tensor(fmt::format("blk.{}.attn_q.bias", i)) != nullptr;
  spec.tie_word_embeddings = f.find_tensor("output.weight") == nullptr;
  spec.layer_types.assign(static_cast<size_t>(L), LayerKind::FullAttention);

  switch (spec.arch) {
    case Architecture::Llama:
    case Architecture::Qwen2:
      break;
    case Architecture::Qwen3:
      spec.qk_norm = true;
      break;
    case Architecture::Gemma3: {
      spec.activation = Activation::GeluTanh;
      spec.norm_weight_plus_one = true;
      spec.scale_embeddings = true;
      spec.qk_norm = true;
      // Attention scale 1/sqrt(query_pre_attn_scalar): head_dim, except Gemma 3
      // 27B (62 layers), which uses hidden / heads (llama.cpp, gemma_pytorch).
      spec.query_pre_attn_scalar = static_cast<double>(
          L == 62 ? spec.hidden_size / spec.num_heads : spec.head_dim);
      if (spec.sliding_window > 0) {
        // Local layers: 5 of every 6 (layer i is global when (i + 1) % 6 == 0),
        // unless the file gives the pattern (a period, or one bool per layer,
        // true = sliding). Local RoPE: base 10000, unscaled.
        const std::string pk = r.key("attention.sliding_window_pattern");
        const GgufValue* pattern = f.find(pk);
        if (pattern != nullptr && pattern->is_array()) {
          if (pattern->element_type() != GgufType::BOOL || static_cast<int64_t>(pattern->size()) != L)
            r.bad(pk, fmt::format("expected {} bools (one per layer)", L));
          for (int64_t i = 0; i < L; ++i)
            if (*pattern->element(static_cast<uint64_t>(i)).as_bool())
              spec.layer_types[static_cast<size_t>(i)] = LayerKind::SlidingAttention;
        } else {
          const int64_t period = r.opt_int("attention.sliding_window_pattern", 1, kMaxLayers).value_or(6);
          for (int64_t i = 0; i < L; ++i)
            if ((i + 1) % period != 0) spec.layer_types[static_cast<size_t>(i)] = LayerKind::SlidingAttention;
        }
        RopeSpec local;
        local.theta = r.opt_float("rope.freq_base_swa", 0.0).value_or(10000.0);
        local.partial_rotary_factor = spec.rope.partial_rotary_factor;
        spec.rope_local = local;
      }
      break;
    }
    case Architecture::Lfm2:
      spec.qk_norm = true;
      spec.conv_kernel = r.req_int("shortconv.l_cache", 1, 1 << 16);
      for (int64_t i = 0; i < L; ++i) {
        LayerKind& k = spec.layer_types[static_cast<size_t>(i)];
        if (kv[static_cast<size_t>(i)] == 0) k = LayerKind::ShortConv;
        else if (spec.sliding_window > 0) k = LayerKind::SlidingAttention;
      }
      break;
    case Architecture::Qwen3_5: {
      // Qwen 3.5 (llama.cpp's Qwen3_5TextModel converter, qwen35 loader): RMSNorm
      // x̂·(1 + w) (the file stores 1 + w, undone on load), q/k norms, a gated
      // q projection, and gated delta-net layers whose geometry travels in the
      // Mamba-style ssm.* keys:
      //   ssm.conv_kernel     linear_conv_kernel_dim
      //   ssm.state_size      linear_key_head_dim
      //   ssm.group_count     linear_num_key_heads
      //   ssm.time_step_rank  linear_num_value_heads
      //   ssm.inner_size      linear_value_head_dim · linear_num_value_heads
      // RoPE: rope.dimension_count = int(head_dim · partial_rotary_factor) dims
      // rotated in halves (read above). rope.dimension_sections split them among
      // the multimodal position streams, which are equal for text: not needed.
      spec.qk_norm = true;
      spec.norm_weight_plus_one = true;
      spec.linear_conv_kernel = r.req_int("ssm.conv_kernel", 1, 1 << 16);
      spec.linear_key_head_dim = r.req_int("ssm.state_size");
      spec.linear_num_key_heads = r.req_int("ssm.group_count");
      spec.linear_num_value_heads = r.req_int("ssm.time_step_rank");
      const int64_t inner = r.req_int("ssm.inner_size");
      if (inner % spec.linear_num_value_heads != 0)
        r.bad(r.key("ssm.inner_size"), fmt::format("{} is not a multiple of {} value heads (ssm.time_step_rank)",
                                                   inner, spec.linear_num_value_heads));
      spec.linear_value_head_dim = inner / spec.linear_num_value_heads;
      if (spec.linear_num_value_heads % spec.linear_num_key_heads != 0)
        r.bad(r.key("ssm.time_step_rank"),
              fmt::format("{} value heads are not a multiple of {} key heads (ssm.group_count)",
                          spec.linear_num_value_heads, spec.linear_num_key_heads));
      // Layer kinds: attention.recurrent_layers, one bool per block (true: gated
      // delta-net; the prediction blocks after the decoder are false), else every
      // full_attention_interval-th layer is full attention (llama.cpp's default 4).
      if (auto recurrent = r.opt_bool_per_layer("attention.recurrent_layers", blocks)) {
        for (int64_t i = 0; i < L; ++i)
          if ((*recurrent)[static_cast<size_t>(i)]) spec.layer_types[static_cast<size_t>(i)] = LayerKind::LinearAttention;
      } else {
        const int64_t interval = r.opt_int("full_attention_interval", 1, kMaxLayers).value_or(4);
        for (int64_t i = 0; i < L; ++i)
          if ((i + 1) % interval != 0) spec.layer_types[static_cast<size_t>(i)] = LayerKind::LinearAttention;
      }
      break;
    }
    case Architecture::Gemma4: {
      // Gemma 4 (llama.cpp's Gemma4Model converter, gemma4 loader): plain RMSNorm
      // weights, q/k norms and a weightless v norm, attention scale 1, embeddings
      // × √hidden, GELU-tanh, and per layer kind its own head size, KV heads and RoPE.
      spec.activation = Activation::GeluTanh;
      spec.scale_embeddings = true;
      spec.qk_norm = true;
      spec.v_norm = true;
      spec.query_pre_attn_scalar = 1.0;
      spec.attn_logit_softcap = 0.0;  // Gemma 4 has none (llama.cpp ignores the key too)

      // Layer kinds: attention.sliding_window_pattern, one bool per layer (true: sliding).
      const auto swa = r.opt_bool_per_layer("attention.sliding_window_pattern", L);
      if (!swa) fail(f.path(), r.subject(r.key("attention.sliding_window_pattern")), "required key is missing");
      for (int64_t i = 0; i < L; ++i)
        if ((*swa)[static_cast<size_t>(i)]) spec.layer_types[static_cast<size_t>(i)] = LayerKind::SlidingAttention;
      const bool has_sliding = std::find(swa->begin(), swa->end(), true) != swa->end();
      const bool has_full = std::find(swa->begin(), swa->end(), false) != swa->end();
      if (has_sliding && spec.sliding_window == 0)
        fail(f.path(), r.subject(r.key("attention.sliding_window")), "required: the model has sliding-window layers");
      if (!has_sliding) spec.sliding_window = 0;

      // KV sharing: the last attention.shared_kv_layers layers attend over the KV of
      // the last earlier layer of their kind, which must exist (transformers' rule,
      // the one ModelSpec carries). llama.cpp instead takes layer first_shared - 1
      // for full-attention and first_shared - 2 for sliding layers: the same layers
      // when the last two unshared layers are sliding then full, as in E2B and E4B.
      spec.num_kv_shared_layers = r.opt_int("attention.shared_kv_layers", 0, L - 1).value_or(0);
      const int64_t first_shared = L - spec.num_kv_shared_layers;
      for (int64_t i = first_shared; i < L; ++i) {
        const LayerKind k = spec.layer_types[static_cast<size_t>(i)];
        if (std::find(spec.layer_types.begin(), spec.layer_types.begin() + first_shared, k) ==
            spec.layer_types.begin() + first_shared)
          r.bad(r.key("attention.shared_kv_layers"),
                fmt::format("shared layers include {} layers but no earlier layer of that type stores KV",
                            layer_kind_name(k)));
      }

      // Head sizes: attention.key_length is the full-attention layers' (read above),
      // attention.key_length_swa the sliding layers'; values as wide as keys.
      if (!r.opt_int("attention.key_length"))
        fail(f.path(), r.subject(r.key("attention.key_length")), "required key is missing");
      spec.global_head_dim = spec.head_dim;
      spec.head_dim = r.req_int("attention.key_length_swa");
      if (auto v = r.opt_int("attention.value_length_swa"); v && *v != spec.head_dim)
        r.bad(r.key("attention.value_length_swa"),
              fmt::format("value head size {} differs from key head size {}", *v, spec.head_dim));

      // KV heads: head_count_kv is one number or one per layer; each kind's layers agree.
      int64_t kind_kv[2] = {0, 0};  // [sliding, full]
      for (int64_t i = 0; i < L; ++i) {
        int64_t& seen = kind_kv[(*swa)[static_cast<size_t>(i)] ? 0 : 1];
        const int64_t x = kv[static_cast<size_t>(i)];
        if (seen != 0 && seen != x)
          r.bad(r.key("attention.head_count_kv"),
                fmt::format("layer {} has {} KV heads, an earlier {} layer {}; layers of one kind must agree", i, x,
                            (*swa)[static_cast<size_t>(i)] ? "sliding" : "full-attention", seen));
        seen = x;
      }
      spec.num_kv_heads = kind_kv[0] != 0 ? kind_kv[0] : kind_kv[1];
      spec.global_num_kv_heads = kind_kv[1] != 0 ? kind_kv[1] : kind_kv[0];
      for (const int64_t x : {spec.num_kv_heads, spec.global_num_kv_heads})
        if (spec.num_heads % x != 0)
          r.bad(r.key("attention.head_count_kv"),
                fmt::format("{} query heads are not a multiple of {} kv heads", spec.num_heads, x));

      // MLP width: feed_forward_length is one number or one per layer; with
      // use_double_wide_mlp the converter lists the KV-sharing layers at twice the width.
      spec.intermediate_size = 0;
      for (int64_t i = 0; i < first_shared; ++i) {
        const int64_t x = (*ffn)[static_cast<size_t>(i)];
        if (x == 0 || (spec.intermediate_size != 0 && x != spec.intermediate_size))
          r.bad(r.key("feed_forward_length"),
                fmt::format("layer {} has width {}; the layers before the KV-sharing ones must agree (and be > 0)", i, x));
        spec.intermediate_size = x;
      }
      for (int64_t i = first_shared; i < L; ++i) {
        const int64_t x = (*ffn)[static_cast<size_t>(i)];
        const bool wide = x == 2 * spec.intermediate_size;
        if ((x != spec.intermediate_size && !wide) || (i > first_shared && wide != spec.double_wide_mlp))
          r.bad(r.key("feed_forward_length"),
                fmt::format("KV-sharing layer {} has width {}: expected {} for every one of them, or twice that "
                            "(double-wide MLPs) for every one",
                            i, x, spec.intermediate_size));
        spec.double_wide_mlp = wide;
      }

      // Per-layer embeddings: embedding_length_per_layer_input values per layer (0: none).
      spec.hidden_size_per_layer_input = r.opt_int("embedding_length_per_layer_input", 0).value_or(0);

      // attention_k_eq_v: full-attention layers with a k projection but no v
      // projection use the keys' projection for the values (llama.cpp: attn_v optional).
      int with_v = 0, without_v = 0;
      for (int64_t i = 0; i < first_shared; ++i) {
        if ((*swa)[static_cast<size_t>(i)] || !f.find_tensor(fmt::format("blk.{}.attn_k.weight", i))) continue;
        (f.find_tensor(fmt::format("blk.{}.attn_v.weight", i)) ? with_v : without_v)++;
      }
      if (with_v > 0 && without_v > 0)
        fail(f.path(), "tensor 'blk.*.attn_v.weight'",
             "present for some full-attention layers and absent for others (all or none: attention_k_eq_v)");
      spec.attention_k_eq_v = without_v > 0;

      if (auto n = r.opt_int("expert_count", 0); n && *n > 0)
        r.bad(r.key("expert_count"), "mixture-of-experts Gemma 4 is not supported (ModelSpec has no experts)");

      // RoPE of the full-attention layers: llama.cpp rotates rope.dimension_count
      // dims (the whole global head, in halves) at θ^(-2i/head) / d_i with per-pair
      // divisors d_i from rope_freqs.weight. The converter writes d_i = 1 for the
      // first int(prf · head / 2) pairs and 1e30 for the rest, which then never
      // turn: transformers' 'proportional' RoPE with partial_rotary_factor prf,
      // factor 1. Other divisors (or RoPE scaling keys) have no HF equivalent.
      if (spec.rope.scaling.type != "default")
        r.bad(r.key("rope.scaling.type"),
              fmt::format("RoPE scaling '{}' is not supported for Gemma 4 (its full-attention RoPE is proportional)",
                          spec.rope.scaling.type));
      if (rot_dims != spec.global_head_dim)
        r.bad(r.key("rope.dimension_count"),
              fmt::format("{} rotary dimensions for {}-wide full-attention heads: Gemma 4's proportional RoPE spans "
                          "the whole head",
                          rot_dims, spec.global_head_dim));
      if (has_full) {
        const TensorView* rf = f.find_tensor("rope_freqs.weight");
        if (rf == nullptr)
          fail(f.path(), "tensor 'rope_freqs.weight'",
               "required: it gives Gemma 4's full-attention layers their proportional RoPE");
        const std::string subject = "tensor 'rope_freqs.weight'";
        const uint64_t pairs = static_cast<uint64_t>(spec.global_head_dim / 2);
        if (rf->shape.size() != 1 || rf->shape[0] != pairs)
          fail(f.path(), subject, "expected {} entries (half the full-attention head size)", pairs);
        // A divisor this large keeps a pair still for any position below 1e6 to
        // within 1e-14 radians.
        constexpr float kStill = 1e20f;
        const std::vector<float> d = dequantize(*rf);
        size_t turning = 0;
        while (turning < d.size() && d[turning] == 1.0f) ++turning;
        for (size_t i = turning; i < d.size(); ++i)
          if (!(d[i] >= kStill))
            fail(f.path(), subject,
                 "entry {} is {}: Gemma 4's proportional RoPE needs divisors 1 (turning pairs) followed by >= 1e20 "
                 "(still pairs)",
                 i, d[i]);
        if (turning == 0) fail(f.path(), subject, "no pair turns (every divisor is >= 1e20)");
        spec.rope.scaling.type = "proportional";
        spec.rope.scaling.factor = 1.0;
        spec.rope.partial_rotary_factor = 2.0 * static_cast<double>(turning) / static_cast<double>(spec.global_head_dim);
      }
      // Sliding layers: plain RoPE over the whole (sliding) head at rope.freq_base_swa
      // (llama.cpp: the full layers' base when absent).
      if (has_sliding) {
        if (auto d = r.opt_int("rope.dimension_count_swa"); d && *d != spec.head_dim)
          r.bad(r.key("rope.dimension_count_swa"),
                fmt::format("{} rotary dimensions for {}-wide sliding heads: partial rotation of sliding layers is "
                            "not supported (transformers rotates the whole head)",
                            *d, spec.head_dim));
        RopeSpec local;
        local.theta = r.opt_float("rope.freq_base_swa", 0.0).value_or(spec.rope.theta);
        if (!(local.theta > 0.0)) r.bad(r.key("rope.freq_base_swa"), "must be > 0");
        spec.rope_local = local;
      }
      break;
    }
    default:
      break;
  }
  if (spec.sliding_window > 0 && spec.arch != Architecture::Gemma3 && spec.arch != Architecture::Lfm2 && !gemma4)
    r.bad(r.key("attention.sliding_window"), "sliding-window attention is not supported for this architecture");

  // --- vocabulary and special tokens --------------------------------------
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
         "required to know the vocabulary size ({}.vocab_size is missing too)", *arch);
  }
  if (spec.vocab_size < 1) fail(f.path(), "metadata 'tokenizer.ggml.tokens'", "empty vocabulary");
  if (embd != nullptr) {
    const std::vector<uint64_t> want = {static_cast<uint64_t>(spec.vocab_size),
                                        static_cast<uint64_t>(spec.hidden_size)};
    if (embd->shape != want)
      fail(f.path(), "tensor 'token_embd.weight'", "shape [{}] does not match vocab {} x hidden {}",
           fmt::join(embd->shape, ", "), spec.vocab_size, spec.hidden_size);
  }

  // Gemma 4's per-layer table: one row per token, each layer's values side by side.
  if (const TensorView* ple = f.find_tensor("per_layer_token_embd.weight"); ple != nullptr && gemma4) {
    const std::vector<uint64_t> want = {static_cast<uint64_t>(spec.vocab_size),
                                        static_cast<uint64_t>(spec.num_layers * spec.hidden_size_per_layer_input)};
    if (ple->shape != want)
      fail(f.path(), "tensor 'per_layer_token_embd.weight'",
           "shape [{}] does not match vocab {} x ({} layers x {} per-layer values)", fmt::join(ple->shape, ", "),
           spec.vocab_size, spec.num_layers, spec.hidden_size_per_layer_input);
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
  return spec;
}

}  // namespace tessera
