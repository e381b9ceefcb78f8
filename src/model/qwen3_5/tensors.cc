// How llama.cpp's converter stores Qwen 3.5's tensors, and how to undo it:
//   * every norm weight but the delta-net's gated output norm (ssm_norm) is
//     stored as 1 + w (the HF model scales by 1 + w there);
//   * A_log is stored as ssm_a = -exp(A_log);
//   * the delta-net's value heads are reordered (v_head_layout below).
#include <cmath>

#include "model/qwen3_5/qwen3_5.h"

namespace tessera::model::qwen3_5 {

namespace {

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
  if (!l.columns) {
    reorder_rows(t, src);
    return;
  }
  std::vector<float> out(t.data.size());
  for (int64_t row = 0; row < t.elements() / n; ++row)
    for (int64_t c = 0; c < n; ++c) out[row * n + c] = t.data[row * n + src[static_cast<size_t>(c)]];
  t.data = std::move(out);
}

bool stored_plus_one(const std::string& g) { return ends_with(g, "norm.weight") && !ends_with(g, ".ssm_norm.weight"); }

bool is_ssm_a(const std::string& g) { return ends_with(g, ".ssm_a"); }

}  // namespace

void restore_tensor(const ModelSpec& s, const std::string& g, F32Tensor& t, const std::string& origin) {
  if (stored_plus_one(g)) subtract_one(t);
  if (const auto l = v_head_layout(s, g)) reorder_v_heads(t, s, *l, origin, g);
  // A_log = log(-ssm_a), in double and rounded once (it reproduces A_log
  // unless exp's rounding lost its last bit).
  if (is_ssm_a(g))
    for (float& x : t.data) {
      if (!(x < 0.0f && std::isfinite(x)))
        fail(origin, g, "entry {} is not a finite negative number (ssm_a = -exp(A_log))", x);
      x = static_cast<float>(std::log(-static_cast<double>(x)));
    }
}

std::optional<std::vector<int64_t>> stored_rows(const ModelSpec& s, const std::string& g, const TensorView& v) {
  if (stored_plus_one(g) || is_ssm_a(g)) return std::nullopt;
  if (const auto l = v_head_layout(s, g)) {
    if (l->columns || v.shape.empty() ||
        static_cast<int64_t>(v.shape[0]) != l->offset + s.linear_num_value_heads * l->head_size)
      return std::nullopt;  // (load_f32_weights reports the mismatch)
    return v_head_source(s, *l, static_cast<int64_t>(v.shape[0]));
  }
  return std::vector<int64_t>{};
}

}  // namespace tessera::model::qwen3_5
