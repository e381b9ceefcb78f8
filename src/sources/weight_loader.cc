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

std::string gguf_tensor_name(const GgufTensorRules& rules, const std::string& hf) {
  // An architecture's own names: a few pairs each, searched in order.
  const auto own = [](const auto& pairs, const std::string& key) -> const std::string* {
    for (const auto& [from, to] : pairs)
      if (from == key) return &to;
    return nullptr;
  };
  if (const std::string* g = own(rules.names, hf)) return *g;
  static const std::map<std::string, std::string> top = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
  };
  if (auto it = top.find(hf); it != top.end()) return it->second;
  static const std::regex layer_re(R"(model\.layers\.(\d+)\.(.+))");
  std::smatch m;
  if (!std::regex_match(hf, m, layer_re)) return "";
  // HF suffix -> llama.cpp suffix. Llama's post_attention_layernorm is the
  // pre-MLP norm (ffn_norm); architectures whose norm follows attention
  // (Gemma) name it in their layer_names.
  static const std::map<std::string, std::string> shared = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
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
  const std::string suffix = m[2].str();
  if (const std::string* g = own(rules.layer_names, suffix)) return fmt::format("blk.{}.{}", m[1].str(), *g);
  auto it = shared.find(suffix);
  if (it == shared.end()) return "";
  return fmt::format("blk.{}.{}", m[1].str(), it->second);
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void subtract_one(F32Tensor& t) {
  for (float& x : t.data) x -= 1.0f;
}

void reorder_rows(F32Tensor& t, const std::vector<int64_t>& source) {
  const int64_t rows = t.shape[0], cols = t.elements() / rows;
  std::vector<float> out(t.data.size());
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(&out[r * cols], &t.data[source[static_cast<size_t>(r)] * cols], cols * sizeof(float));
  t.data = std::move(out);
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

const TensorView* find_hf(const ModelSource& src, const std::string& name) {
  if (const TensorView* v = src.find(name)) return v;
  // The text model inside a multimodal checkpoint (Gemma 3 4B+, Qwen3.5 VL).
  if (name.rfind("model.", 0) == 0)
    if (const TensorView* v = src.find("model.language_model." + name.substr(6))) return v;
  return src.find("language_model." + name);
}

const GgufTensorRules& rules_of(const ModelSource& src) {
  static const GgufTensorRules kSharedNamesOnly;
  return src.gguf_rules ? *src.gguf_rules : kSharedNamesOnly;
}

// The GGUF tensor behind HF name `name`, and its GGUF name in `g`.
const TensorView& find_gguf(const ModelSource& src, const std::string& name, std::string& g) {
  g = gguf_tensor_name(rules_of(src), name);
  const TensorView* v = g.empty() ? nullptr : src.find(g);
  if (!v) fail(src.path, g.empty() ? name : g, "tensor not found in the GGUF (needed for {})", name);
  return *v;
}

}  // namespace

F32Weights load_f32_weights(const ModelSource& src, const std::vector<std::string>& names,
                            const std::function<void(size_t, size_t)>& progress) {
  F32Weights store;
  const ModelSpec& s = src.spec;
  const GgufTensorRules& rules = rules_of(src);
  size_t done = 0;
  for (const std::string& name : names) {
    F32Tensor t;
    if (src.format == SourceFormat::Gguf) {
      std::string g;
      t = to_f32(find_gguf(src, name, g), src.path);
      if (rules.restore) rules.restore(s, g, t, src.path);
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
  const GgufTensorRules& rules = rules_of(src);
  std::string g;
  const TensorView& v = find_gguf(src, name, g);
  GgufStoredTensor t{&v, {}};
  if (rules.stored_rows) {
    std::optional<std::vector<int64_t>> rows = rules.stored_rows(src.spec, g, v);
    if (!rows) return std::nullopt;
    t.row_source = std::move(*rows);
  }
  return t;
}

}  // namespace tessera
