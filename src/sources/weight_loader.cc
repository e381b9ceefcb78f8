#include "sources/weight_loader.h"

#include <cmath>
#include <cstring>
#include <regex>
#include <string_view>

#include <fmt/format.h>

#include "core/error.h"
#include "core/half.h"
#include "core/ggml_dequant.h"

namespace tessera {

int64_t F32Tensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string gguf_tensor_name(Architecture arch, const std::string& hf) {
  static const std::map<std::string, std::string> top = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
  };
  // LFM2's final norm keeps the name of where the original model applied it
  // (llama.cpp: LLM_TENSOR_OUTPUT_NORM_LFM2).
  if (arch == Architecture::Lfm2 && hf == "model.embedding_norm.weight") return "token_embd_norm.weight";
  // Gemma 4's per-layer embeddings: the token table, and the projection of the
  // token embedding (and its norm) that is added to it.
  static const std::map<std::string, std::string> gemma4_top = {
      {"model.embed_tokens_per_layer.weight", "per_layer_token_embd.weight"},
      {"model.per_layer_model_projection.weight", "per_layer_model_proj.weight"},
      {"model.per_layer_projection_norm.weight", "per_layer_proj_norm.weight"},
  };
  if (arch == Architecture::Gemma4)
    if (auto it = gemma4_top.find(hf); it != gemma4_top.end()) return it->second;
  if (auto it = top.find(hf); it != top.end()) return it->second;
  static const std::regex layer_re(R"(model\.layers\.(\d+)\.(.+))");
  std::smatch m;
  if (!std::regex_match(hf, m, layer_re)) return "";
  static const std::map<std::string, std::string> lfm2 = {
      {"operator_norm.weight", "attn_norm.weight"},
      {"ffn_norm.weight", "ffn_norm.weight"},
      {"self_attn.out_proj.weight", "attn_output.weight"},
      {"self_attn.q_layernorm.weight", "attn_q_norm.weight"},
      {"self_attn.k_layernorm.weight", "attn_k_norm.weight"},
      {"conv.conv.weight", "shortconv.conv.weight"},
      {"conv.in_proj.weight", "shortconv.in_proj.weight"},
      {"conv.out_proj.weight", "shortconv.out_proj.weight"},
      {"feed_forward.w1.weight", "ffn_gate.weight"},
      {"feed_forward.w3.weight", "ffn_up.weight"},
      {"feed_forward.w2.weight", "ffn_down.weight"},
  };
  if (arch == Architecture::Lfm2)
    if (auto it = lfm2.find(m[2].str()); it != lfm2.end()) return fmt::format("blk.{}.{}", m[1].str(), it->second);
  // Qwen3.5's gated delta-net (llama.cpp stores it under Mamba's ssm_* names)
  // and the post-attention norm, which is its pre-MLP norm.
  static const std::map<std::string, std::string> qwen3_5 = {
      {"linear_attn.in_proj_qkv.weight", "attn_qkv.weight"},
      {"linear_attn.in_proj_z.weight", "attn_gate.weight"},
      {"linear_attn.in_proj_b.weight", "ssm_beta.weight"},
      {"linear_attn.in_proj_a.weight", "ssm_alpha.weight"},
      {"linear_attn.A_log", "ssm_a"},
      {"linear_attn.dt_bias", "ssm_dt.bias"},
      {"linear_attn.conv1d.weight", "ssm_conv1d.weight"},
      {"linear_attn.norm.weight", "ssm_norm.weight"},
      {"linear_attn.out_proj.weight", "ssm_out.weight"},
      {"post_attention_layernorm.weight", "post_attention_norm.weight"},
  };
  if (arch == Architecture::Qwen3_5)
    if (auto it = qwen3_5.find(m[2].str()); it != qwen3_5.end())
      return fmt::format("blk.{}.{}", m[1].str(), it->second);
  // Gemma 4's per-layer input block and layer scalar.
  static const std::map<std::string, std::string> gemma4 = {
      {"per_layer_input_gate.weight", "inp_gate.weight"},
      {"per_layer_projection.weight", "proj.weight"},
      {"post_per_layer_input_norm.weight", "post_norm.weight"},
      {"layer_scalar", "layer_output_scale.weight"},
  };
  if (arch == Architecture::Gemma4)
    if (auto it = gemma4.find(m[2].str()); it != gemma4.end()) return fmt::format("blk.{}.{}", m[1].str(), it->second);
  const bool gemma = arch == Architecture::Gemma3 || arch == Architecture::Gemma4;
  // HF suffix -> llama.cpp suffix. Llama's post_attention_layernorm is the
  // pre-MLP norm (ffn_norm); Gemma's is the norm after attention.
  const std::map<std::string, std::string> suffixes = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"post_attention_layernorm.weight", gemma ? "post_attention_norm.weight" : "ffn_norm.weight"},
      {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
      {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
  };
  auto it = suffixes.find(m[2].str());
  if (it == suffixes.end()) return "";
  return fmt::format("blk.{}.{}", m[1].str(), it->second);
}

namespace {

F32Tensor to_f32(const TensorView& v, const std::string& origin) {
  F32Tensor t;
  for (uint64_t d : v.shape) t.shape.push_back(static_cast<int64_t>(d));
  const uint64_t n = v.elements();
  t.data.resize(n);
  switch (v.dtype) {
    case DType::F32:
      std::memcpy(t.data.data(), v.data, n * sizeof(float));
      break;
    case DType::F16:
      for (uint64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, v.data + 2 * i, 2);
        t.data[i] = f16_to_f32(h);
      }
      break;
    case DType::BF16:
      for (uint64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, v.data + 2 * i, 2);
        t.data[i] = bf16_to_f32(h);
      }
      break;
    default:
      if (!can_dequantize(v.dtype)) fail(origin, v.name, "tensor format {} cannot be converted to f32", dtype_name(v.dtype));
      t.data = dequantize(v);
  }
  return t;
}

// GGUF llama attn_q/attn_k: HF row h·d + s·d/2 + i  <-  GGUF row h·d + 2i + s.
std::vector<int64_t> unpermuted_order(int64_t rows, int64_t heads) {
  const int64_t d = rows / heads, half = d / 2;
  std::vector<int64_t> order(static_cast<size_t>(rows));
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t s = 0; s < 2; ++s)
      for (int64_t i = 0; i < half; ++i) order[h * d + s * half + i] = h * d + 2 * i + s;
  return order;
}

void unpermute_rows(F32Tensor& t, int64_t heads) {
  const int64_t rows = t.shape[0], cols = t.elements() / rows;
  const std::vector<int64_t> order = unpermuted_order(rows, heads);
  std::vector<float> out(t.data.size());
  for (int64_t r = 0; r < rows; ++r) std::memcpy(&out[r * cols], &t.data[order[r] * cols], cols * sizeof(float));
  t.data = std::move(out);
}

// The heads whose rows llama.cpp permuted in tensor g (0: none).
int64_t permuted_heads(const ModelSpec& s, const std::string& g) {
  if (s.arch != Architecture::Llama) return 0;
  if (g.find(".attn_q.") != std::string::npos) return s.num_heads;
  if (g.find(".attn_k.") != std::string::npos) return s.num_kv_heads;
  return 0;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Qwen3.5's gated delta-net has n_v value heads, r = n_v / n_k per key head.
// HF orders them grouped by key head (value head g·r + j is key head g's j-th);
// llama.cpp's converter reorders them tiled (GGUF head j·n_k + g), which lets
// ggml broadcast the key heads, in every tensor with a per-value-head part:
//   attn_qkv, ssm_conv1d  rows from 2·n_k·d_k on (the v part), d_v rows per head
//   attn_gate             rows, d_v per head
//   ssm_beta, ssm_alpha   rows, 1 per head;  ssm_a, ssm_dt.bias: entries, 1 per head
//   ssm_out               columns, d_v per head
struct VHeadLayout {
  int64_t offset = 0;     // first reordered row / column
  int64_t head_size = 0;  // rows / columns per value head
  bool columns = false;
};

std::optional<VHeadLayout> v_head_layout(const ModelSpec& s, const std::string& g) {
  if (s.arch != Architecture::Qwen3_5) return std::nullopt;
  auto ends = [&](std::string_view suffix) { return ends_with(g, suffix); };
  const int64_t qk = 2 * s.linear_num_key_heads * s.linear_key_head_dim, dv = s.linear_value_head_dim;
  if (ends(".attn_qkv.weight") || ends(".ssm_conv1d.weight")) return VHeadLayout{qk, dv, false};
  if (ends(".attn_gate.weight")) return VHeadLayout{0, dv, false};
  if (ends(".ssm_beta.weight") || ends(".ssm_alpha.weight") || ends(".ssm_a") || ends(".ssm_dt.bias"))
    return VHeadLayout{0, 1, false};
  if (ends(".ssm_out.weight")) return VHeadLayout{0, dv, true};
  return std::nullopt;
}

// For each HF index of a tensor's first dimension (or, for `columns`, its
// last), the GGUF index holding it: the inverse of the converter's reorder.
std::vector<int64_t> v_head_source(const ModelSpec& s, const VHeadLayout& l, int64_t n) {
  const int64_t nk = s.linear_num_key_heads, r = s.linear_num_value_heads / nk;
  std::vector<int64_t> src(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) src[static_cast<size_t>(i)] = i;
  for (int64_t g = 0; g < nk; ++g)
    for (int64_t j = 0; j < r; ++j)
      for (int64_t e = 0; e < l.head_size; ++e) {
        const int64_t hf = l.offset + (g * r + j) * l.head_size + e;
        if (hf < n) src[static_cast<size_t>(hf)] = l.offset + (j * nk + g) * l.head_size + e;
      }
  return src;
}

void reorder_v_heads(F32Tensor& t, const ModelSpec& s, const VHeadLayout& l, const std::string& origin,
                     const std::string& g) {
  if (t.shape.empty()) fail(origin, g, "is a scalar; the gated delta-net needs one entry per value head");
  const int64_t n = l.columns ? t.shape.back() : t.shape[0];
  if (n != l.offset + s.linear_num_value_heads * l.head_size)
    fail(origin, g, "{} {} where the gated delta-net geometry gives {}", n, l.columns ? "columns" : "rows",
         l.offset + s.linear_num_value_heads * l.head_size);
  const std::vector<int64_t> src = v_head_source(s, l, n);
  std::vector<float> out(t.data.size());
  if (l.columns) {
    for (int64_t row = 0; row < t.elements() / n; ++row)
      for (int64_t c = 0; c < n; ++c) out[row * n + c] = t.data[row * n + src[static_cast<size_t>(c)]];
  } else {
    const int64_t cols = t.elements() / n;
    for (int64_t row = 0; row < n; ++row)
      std::memcpy(&out[row * cols], &t.data[src[static_cast<size_t>(row)] * cols], cols * sizeof(float));
  }
  t.data = std::move(out);
}

// Norm weights llama.cpp's converter stores as 1 + w (the HF model scales by
// 1 + w): every Gemma 3 norm; every Qwen3.5 norm but the delta-net's gated
// output norm (ssm_norm), which scales by w.
bool stored_plus_one(const ModelSpec& s, const std::string& g) {
  if (!ends_with(g, "norm.weight")) return false;
  if (s.arch == Architecture::Gemma3) return true;
  return s.arch == Architecture::Qwen3_5 && !ends_with(g, ".ssm_norm.weight");
}

const TensorView* find_hf(const ModelSource& src, const std::string& name) {
  if (const TensorView* v = src.find(name)) return v;
  // The text model inside a multimodal checkpoint (Gemma 3 4B+, Qwen3.5 VL).
  if (name.rfind("model.", 0) == 0)
    if (const TensorView* v = src.find("model.language_model." + name.substr(6))) return v;
  return src.find("language_model." + name);
}

}  // namespace

F32Weights load_f32_weights(const ModelSource& src, const std::vector<std::string>& names,
                            const std::function<void(size_t, size_t)>& progress) {
  F32Weights store;
  const ModelSpec& s = src.spec;
  size_t done = 0;
  for (const std::string& name : names) {
    F32Tensor t;
    if (src.format == SourceFormat::Gguf) {
      const std::string g = gguf_tensor_name(s.arch, name);
      const TensorView* v = g.empty() ? nullptr : src.find(g);
      if (!v) fail(src.path, g.empty() ? name : g, "tensor not found in the GGUF (needed for {})", name);
      t = to_f32(*v, src.path);
      if (const int64_t heads = permuted_heads(s, g)) unpermute_rows(t, heads);
      // (1 + w) - 1 is exact for the stored values in [0.5, 2] (Sterbenz), and
      // adding the 1 back in the model then restores the stored value exactly.
      if (stored_plus_one(s, g))
        for (float& x : t.data) x -= 1.0f;
      if (const auto l = v_head_layout(s, g)) reorder_v_heads(t, s, *l, src.path, g);
      // Qwen3.5's ssm_a is -exp(A_log): A_log = log(-ssm_a), in double and
      // rounded once (it reproduces A_log unless exp's rounding lost its last bit).
      if (s.arch == Architecture::Qwen3_5 && ends_with(g, ".ssm_a"))
        for (float& x : t.data) {
          if (!(x < 0.0f && std::isfinite(x)))
            fail(src.path, g, "entry {} is not a finite negative number (ssm_a = -exp(A_log))", x);
          x = static_cast<float>(std::log(-static_cast<double>(x)));
        }
    } else {
      const TensorView* v = find_hf(src, name);
      if (!v) fail(src.path, name, "tensor not found in the checkpoint");
      t = to_f32(*v, src.path);
    }
    // A depthwise convolution's [channels][1][kernel] (HF) is the same values
    // as GGUF's [channels][kernel]: every consumer sees the rank-2 form.
    if (t.shape.size() == 3 && t.shape[1] == 1) t.shape = {t.shape[0], t.shape[2]};
    store[name] = std::move(t);
    if (progress) progress(++done, names.size());
  }
  return store;
}

std::optional<GgufStoredTensor> gguf_stored_tensor(const ModelSource& src, const std::string& name) {
  if (src.format != SourceFormat::Gguf) return std::nullopt;
  const std::string g = gguf_tensor_name(src.spec.arch, name);
  const TensorView* v = g.empty() ? nullptr : src.find(g);
  if (!v) fail(src.path, g.empty() ? name : g, "tensor not found in the GGUF (needed for {})", name);
  GgufStoredTensor t{v, {}};
  if (const int64_t heads = permuted_heads(src.spec, g); heads && v->shape.size() == 2)
    t.row_source = unpermuted_order(static_cast<int64_t>(v->shape[0]), heads);
  // Stored values that are not the HF values (norms stored as 1 + w, Qwen3.5's
  // ssm_a) or not in whole rows of them (ssm_out's reordered columns) must be
  // loaded through load_f32_weights.
  if (stored_plus_one(src.spec, g) || (src.spec.arch == Architecture::Qwen3_5 && ends_with(g, ".ssm_a")))
    return std::nullopt;
  if (const auto l = v_head_layout(src.spec, g)) {
    if (l->columns || v->shape.empty() ||
        static_cast<int64_t>(v->shape[0]) != l->offset + src.spec.linear_num_value_heads * l->head_size)
      return std::nullopt;  // (load_f32_weights reports the mismatch)
    t.row_source = v_head_source(src.spec, *l, static_cast<int64_t>(v->shape[0]));
  }
  return t;
}

}  // namespace tessera
