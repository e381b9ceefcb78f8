#include "model/program_builder.h"

#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace tessera::model {

int ProgramBuilder::value(const std::string& name, int64_t cols, ValueType type, RowsKind rows) {
  const int existing = p_.find_value(name);
  if (existing >= 0) {
    const Value& v = p_.values[existing];
    if (v.cols != cols || v.type != type || v.rows != rows)
      fail(p_.name, name, "value redeclared with a different shape ({} vs {} columns)", v.cols, cols);
    return existing;
  }
  p_.values.push_back(Value{name, type, rows, cols});
  return static_cast<int>(p_.values.size()) - 1;
}

void ProgramBuilder::input(int id) { p_.inputs.push_back(id); }
void ProgramBuilder::output(int id) { p_.outputs.push_back(id); }

Op& ProgramBuilder::add(OpKind kind, std::vector<int> inputs, std::vector<int> outputs,
                        std::vector<std::string> weights) {
  Op op;
  op.kind = kind;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.weights = std::move(weights);
  p_.ops.push_back(std::move(op));
  return p_.ops.back();
}

std::string layer_weight(int64_t layer, const std::string& suffix) {
  return fmt::format("model.layers.{}.{}", layer, suffix);
}

int64_t rotary_dim(const ModelSpec& s, int64_t layer) {
  const bool local = s.layer_types[layer] == LayerKind::SlidingAttention && s.rope_local;
  const RopeSpec& r = local ? *s.rope_local : s.rope;
  // Proportional RoPE (Gemma 4) turns the whole head in halves; the pairs
  // past its factor get zero frequencies (RopeTable), so they stay put.
  if (r.scaling.type == "proportional") return layer_head_dim(s, layer);
  int64_t d = static_cast<int64_t>(static_cast<double>(layer_head_dim(s, layer)) * r.partial_rotary_factor);
  return d - d % 2;
}

void build_embedding(ProgramBuilder& b, const ModelSpec& s) {
  const int ids = b.value("ids", 1, ValueType::I32);
  b.input(ids);
  const int x = b.value("x", s.hidden_size);
  Op& op = b.add(OpKind::Embed, {ids}, {x}, {"model.embed_tokens.weight"});
  // Gemma multiplies by sqrt(hidden_size) rounded to the weights' dtype (f32 here).
  op.scale = s.scale_embeddings ? static_cast<float>(std::sqrt(static_cast<double>(s.hidden_size))) : 1.0f;
}

void build_head(ProgramBuilder& b, const ModelSpec& s, const std::string& final_norm, bool argmax) {
  const int x = b.value("x", s.hidden_size);
  const int xs = b.value("x_selected", s.hidden_size, ValueType::F32, RowsKind::LogitRows);
  b.add(OpKind::SelectRows, {x}, {xs});
  Op& norm = b.add(OpKind::RmsNorm, {xs}, {xs}, {final_norm});
  norm.eps = static_cast<float>(s.norm_eps);
  norm.plus_one = s.norm_weight_plus_one;
  const int logits = b.value("logits", s.vocab_size, ValueType::F32, RowsKind::LogitRows);
  b.add(OpKind::Linear, {xs}, {logits},
        {s.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight"});
  if (s.final_logit_softcap > 0) {
    Op& cap = b.add(OpKind::Softcap, {logits}, {logits});
    cap.softcap = static_cast<float>(s.final_logit_softcap);
  }
  b.output(logits);
  if (argmax) {
    const int ids = b.value("next_ids", 1, ValueType::I32, RowsKind::LogitRows);
    b.add(OpKind::Argmax, {logits}, {ids});
    b.output(ids);
  }
}

void build_rms_norm(ProgramBuilder& b, const ModelSpec& s, int x, int y, const std::string& weight_name,
                    int64_t layer) {
  Op& op = b.add(OpKind::RmsNorm, {x}, {y}, {layer_weight(layer, weight_name)});
  op.eps = static_cast<float>(s.norm_eps);
  op.plus_one = s.norm_weight_plus_one;
  op.layer = layer;
}

void build_attention(ProgramBuilder& b, const ModelSpec& s, int64_t layer, int in, int out, float softcap,
                     const AttentionWeights& names) {
  const int64_t hd = layer_head_dim(s, layer);
  const int64_t kvh = layer_num_kv_heads(s, layer);
  const int64_t qw = s.num_heads * hd, kvw = kvh * hd;
  const LayerKind kind = s.layer_types[layer];
  const bool sliding = kind == LayerKind::SlidingAttention;
  const bool local_rope = sliding && s.rope_local.has_value();
  const int64_t rot = rotary_dim(s, layer);
  // Gemma 4: the last layers attend over an earlier layer's keys and values
  // (kv_source_layer) and compute none; full-attention layers may take their
  // values from the k projection (attention_k_eq_v).
  const bool shared = layer_shares_kv(s, layer);
  const bool k_eq_v = s.attention_k_eq_v && kind == LayerKind::FullAttention;
  // Values of full-attention layers get their own names where their width
  // differs or KV is shared: a KV-sharing layer reads its source's k and v of
  // the call by name, which no layer of the other kind may overwrite.
  const bool own_names = kind == LayerKind::FullAttention &&
                         (s.num_kv_shared_layers > 0 || hd != s.head_dim || kvh != s.num_kv_heads);
  const std::string sfx = own_names ? ".full" : "";
  const int q = b.value("q" + sfx, qw), k = b.value("k" + sfx, kvw), v = b.value("v" + sfx, kvw);
  const std::string table = local_rope ? "rope_local" : "rope";
  const int cos = b.value(table + ".cos", rot / 2), sin = b.value(table + ".sin", rot / 2);
  const int positions = b.value("positions", 1, ValueType::I32);

  auto proj = [&](int dst, const std::string& name) {
    std::vector<std::string> w = {layer_weight(layer, name + ".weight")};
    if (s.attention_bias) w.push_back(layer_weight(layer, name + ".bias"));
    b.add(OpKind::Linear, {in}, {dst}, std::move(w)).layer = layer;
  };
  int gate = -1;
  if (names.output_gate) {
    const int qg = b.value("q_gate" + sfx, 2 * qw);
    gate = b.value("attn_gate" + sfx, qw);
    proj(qg, names.q);
    Op& split = b.add(OpKind::SplitHeads, {qg}, {q, gate});
    split.heads = s.num_heads;
    split.head_dim = hd;
    split.layer = layer;
  } else {
    proj(q, names.q);
  }
  if (!shared) {
    proj(k, names.k);
    if (!k_eq_v) proj(v, names.v);
  }
  auto head_norm = [&](int x, int y, const std::string* weight, bool whole_row = false) {
    Op& op = b.add(OpKind::RmsNorm, {x}, {y});
    if (weight) op.weights = {layer_weight(layer, *weight + ".weight")};
    op.eps = static_cast<float>(s.norm_eps);
    op.plus_one = s.norm_weight_plus_one;
    op.group = whole_row ? 0 : hd;
    op.layer = layer;
  };
  // Gemma 4's weightless v norm (of the raw k when k = v, so before k's norm).
  if (s.v_norm && !shared) head_norm(k_eq_v ? k : v, v, nullptr);
  if (s.qk_norm) {
    head_norm(q, q, &names.q_norm, names.qk_norm_across_heads);
    if (!shared) head_norm(k, k, &names.k_norm, names.qk_norm_across_heads);
  }
  for (auto [id, heads] : {std::pair{q, s.num_heads}, std::pair{k, kvh}}) {
    if (shared && id == k) continue;
    Op& op = b.add(OpKind::Rope, {id, cos, sin}, {id});
    op.heads = heads;
    op.head_dim = hd;
    op.rot_dim = rot;
    op.neox = (local_rope ? *s.rope_local : s.rope).neox_style;
    op.layer = layer;
  }
  const int attn = b.value("attn" + sfx, qw);
  Op& a = b.add(OpKind::Attention, {q, k, v, positions}, {attn});
  a.layer = layer;
  a.kv_layer = kv_source_layer(s, layer);
  a.heads = s.num_heads;
  a.kv_heads = kvh;
  a.head_dim = hd;
  a.window = sliding ? s.sliding_window : 0;
  const double scalar = s.query_pre_attn_scalar > 0 ? s.query_pre_attn_scalar : static_cast<double>(hd);
  a.scale = static_cast<float>(1.0 / std::sqrt(scalar));
  a.softcap = softcap;
  // The call's rows go into the cache after the last attention that reads the
  // cache as it was before the call: a layer's own attention, or, for a layer
  // whose KV later layers share, the last of those (its rows, still in k and
  // v, were handed to them directly; storing first could overwrite ring slots
  // that their first queries still need).
  // (b.add may move the ops: `a` is not used past this point.)
  const int64_t kv_layer = a.kv_layer, window = a.window;
  int64_t last_reader = layer;
  for (int64_t l = layer + 1; l < s.num_layers; ++l)
    if (kv_source_layer(s, l) == kv_layer) last_reader = l;
  if (last_reader == layer) {
    Op& store = b.add(OpKind::KvStore, {k, v, positions}, {});
    store.layer = layer;
    store.kv_layer = kv_layer;
    store.window = window;
  }
  if (gate >= 0) {
    Op& g = b.add(OpKind::GatedActivation, {gate, attn}, {attn});
    g.activation = Activation::Sigmoid;
    g.layer = layer;
  }
  b.add(OpKind::Linear, {attn}, {out}, {layer_weight(layer, names.o + ".weight")}).layer = layer;
}

void build_gated_mlp(ProgramBuilder& b, const ModelSpec& s, int64_t layer, int in, int out, const MlpWeights& names) {
  const int64_t inter = layer_intermediate_size(s, layer);
  // Gemma 4's double-wide MLPs get their own values.
  const std::string sfx = inter != s.intermediate_size ? ".wide" : "";
  const int gate = b.value("gate" + sfx, inter), up = b.value("up" + sfx, inter);
  b.add(OpKind::Linear, {in}, {gate}, {layer_weight(layer, names.gate + ".weight")}).layer = layer;
  b.add(OpKind::Linear, {in}, {up}, {layer_weight(layer, names.up + ".weight")}).layer = layer;
  Op& act = b.add(OpKind::GatedActivation, {gate, up}, {gate});
  act.activation = s.activation;
  act.layer = layer;
  b.add(OpKind::Linear, {gate}, {out}, {layer_weight(layer, names.down + ".weight")}).layer = layer;
}

}  // namespace tessera::model
