#include "sources/weight_loader.h"

#include <cstring>
#include <regex>

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
  const bool gemma = arch == Architecture::Gemma3;
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
      if (s.arch == Architecture::Gemma3 && g.size() >= 11 && g.compare(g.size() - 11, 11, "norm.weight") == 0)
        for (float& x : t.data) x -= 1.0f;
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
  return t;
}

}  // namespace tessera
