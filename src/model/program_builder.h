// The helpers every architecture builder composes: a Program under
// construction (values by name, ops in order) and the blocks most decoder
// layers share — embedding, attention with its KV, gated MLP, output head.
// Each architecture's layer.cc (src/model/<arch>/) says how a layer is put
// together from these; build_programs (builders.h) turns that into one program
// per chunk and per tokens-per-call variant.
#pragma once

#include <string>

#include "core/model_spec.h"
#include "graph/program.h"

namespace tessera::model {

class ProgramBuilder {
 public:
  explicit ProgramBuilder(Program& p) : p_(p) {}

  // The id of value `name`, created with `cols` columns if new.
  int value(const std::string& name, int64_t cols, ValueType type = ValueType::F32,
            RowsKind rows = RowsKind::Tokens);
  void input(int id);
  void output(int id);
  Op& add(OpKind kind, std::vector<int> inputs, std::vector<int> outputs, std::vector<std::string> weights = {});

  Program& program() { return p_; }

 private:
  Program& p_;
};

// "model.layers.{layer}.{suffix}"
std::string layer_weight(int64_t layer, const std::string& suffix);

// ids → "x" (the residual stream), scaled by sqrt(hidden) where the spec says so.
void build_embedding(ProgramBuilder& b, const ModelSpec& s);
// "x" → "logits" for the selected rows: final norm (weight `final_norm`), lm_head (or the tied
// embedding), final softcap; with `argmax`, also "next_ids": each logits
// row's argmax (greedy decoding reads it instead of scanning the logits).
void build_head(ProgramBuilder& b, const ModelSpec& s, const std::string& final_norm, bool argmax);

// The HF names of an attention block's weights under "model.layers.N.", and
// of a gated MLP's (each + ".weight" / ".bias"). The defaults are Llama's.
struct AttentionWeights {
  std::string q = "self_attn.q_proj", k = "self_attn.k_proj", v = "self_attn.v_proj", o = "self_attn.o_proj";
  std::string q_norm = "self_attn.q_norm", k_norm = "self_attn.k_norm";
  // Qwen3.5: q_proj gives each head's query then its output gate
  // ([heads][2·head_dim]); the attention output is multiplied by
  // sigmoid(gate) before o_proj.
  bool output_gate = false;
  // OLMo 2: the q and k norms (spec.qk_norm) normalize each projection over
  // all its heads at once, with a weight as wide, instead of head by head.
  bool qk_norm_across_heads = false;
};
struct MlpWeights {
  std::string gate = "mlp.gate_proj", up = "mlp.up_proj", down = "mlp.down_proj";
};

// Self-attention of `layer` on normalized input `in`; result (after o_proj) in
// value `out`. Projections with bias where the spec says so, per-head q/k
// RMSNorm when spec.qk_norm, RoPE from the global or local table, KV stored
// after attention. `softcap` caps the attention scores (0: off); the caller
// says whether its architecture applies spec.attn_logit_softcap.
void build_attention(ProgramBuilder& b, const ModelSpec& s, int64_t layer, int in, int out, float softcap,
                     const AttentionWeights& names = {});
// down(act(gate(in)) · up(in)) → out.
void build_gated_mlp(ProgramBuilder& b, const ModelSpec& s, int64_t layer, int in, int out,
                     const MlpWeights& names = {});
// y = rms_norm(x) with the layer norm weight `weight_name` and the spec's form.
void build_rms_norm(ProgramBuilder& b, const ModelSpec& s, int x, int y, const std::string& weight_name,
                    int64_t layer);

int64_t rotary_dim(const ModelSpec& s, int64_t layer);

}  // namespace tessera::model
