// ModelSpec: one normalized description of a decoder-only language model,
// whatever it was read from (HF config.json or GGUF metadata). Everything
// downstream (program builders, converter, runtime) reads this struct, never
// the source's own key names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

// How one decoder layer mixes tokens.
enum class LayerKind {
  FullAttention,     // causal attention over the whole context
  SlidingAttention,  // causal attention over the last `sliding_window` tokens
  LinearAttention,   // gated delta-net (Qwen3.5)
  ShortConv,         // gated short convolution (LFM2)
};

// Sigmoid is only a gate's activation (Qwen3.5's attention output gate:
// o · sigmoid(g)), never a model's MLP activation.
enum class Activation { SiLU, GeluTanh, Gelu, Sigmoid };

// RoPE frequency scaling, as in transformers' `rope_parameters`/`rope_scaling`.
struct RopeScaling {
  std::string type = "default";  // default | linear | dynamic | yarn | llama3 | longrope
  double factor = 1.0;
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  int64_t original_max_position_embeddings = 0;
  double beta_fast = 32.0, beta_slow = 1.0;  // yarn
  std::optional<double> attention_factor;    // yarn
};

struct RopeSpec {
  double theta = 10000.0;
  double partial_rotary_factor = 1.0;  // fraction of the layer's head size (layer_head_dim) that is rotated
  bool neox_style = true;              // rotate halves (HF) vs interleaved pairs
  RopeScaling scaling;
};

struct ModelSpec {
  // The name of the architecture unit that read it and builds its programs
  // ("llama", "gemma3", ...: src/model/<arch>/, registered in model/architectures.cc).
  std::string arch;
  std::string source_architecture;  // e.g. "LlamaForCausalLM" or GGUF "llama"

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // of every attention layer but Gemma 4 full-attention ones (see below)
  int64_t head_dim = 0;      // likewise
  int64_t context_length = 0;  // max_position_embeddings

  double norm_eps = 1e-6;
  bool norm_weight_plus_one = false;  // Gemma: y = x_hat * (1 + w)
  bool qk_norm = false;               // RMSNorm on q and k per head (Qwen3, Gemma 3)
  bool v_norm = false;                // RMSNorm without weight on v per head (Gemma 4): v / rms(v)
  bool attention_bias = false;        // bias on q/k/v projections (Qwen2)
  bool tie_word_embeddings = false;
  bool scale_embeddings = false;      // Gemma: embeddings * sqrt(hidden_size)
  Activation activation = Activation::SiLU;

  RopeSpec rope;                       // global (full-attention) layers
  std::optional<RopeSpec> rope_local;  // sliding layers, when they differ (Gemma 3)

  std::vector<LayerKind> layer_types;  // one per layer
  int64_t sliding_window = 0;          // 0: no sliding layers

  double attn_logit_softcap = 0.0;   // 0: off
  double final_logit_softcap = 0.0;  // 0: off
  double query_pre_attn_scalar = 0.0;  // attention scale = 1/sqrt(this); 0: head_dim

  int64_t bos_token_id = -1;
  std::vector<int64_t> eos_token_ids;

  // Architecture-specific extras (0 when unused).
  int64_t conv_kernel = 0;                 // LFM2 short conv L_cache
  int64_t linear_num_key_heads = 0;        // Qwen3.5 gated delta-net
  int64_t linear_num_value_heads = 0;
  int64_t linear_key_head_dim = 0;
  int64_t linear_value_head_dim = 0;
  int64_t linear_conv_kernel = 0;
  int64_t hidden_size_per_layer_input = 0;  // Gemma 4 per-layer embeddings

  // Gemma 4 attention and MLP geometry that differs between layers. Use the
  // layer_* functions below rather than reading these directly.
  //
  // global_head_dim, global_num_kv_heads: head size and KV head count of the
  //   FullAttention layers (their q/k/v/o projections, q/k/v norms and RoPE use
  //   them); 0 means "same as head_dim / num_kv_heads", as in every other model.
  //   Gemma 4 E2B: sliding layers 256-wide heads, full layers 512-wide.
  //
  // num_kv_shared_layers = n: the last n layers (i >= num_layers - n) compute only
  //   q. Each attends over the keys and values (after k/v norm and RoPE) that the
  //   last earlier layer of the same LayerKind, j < num_layers - n, computed for
  //   the same positions; kv_source_layer() gives j. They have no k/v projections.
  //
  // attention_k_eq_v: FullAttention layers have no v projection. With
  //   k = x·Wk (per head): keys = RoPE(k_norm(k)), values = v_norm(k).
  //   Sliding layers keep their own v projection.
  //
  // double_wide_mlp: the KV-sharing layers (the last num_kv_shared_layers) have
  //   an MLP twice as wide: gate/up x → 2·intermediate_size, down back to hidden.
  //   False whenever num_kv_shared_layers is 0.
  int64_t global_head_dim = 0;
  int64_t global_num_kv_heads = 0;
  int64_t num_kv_shared_layers = 0;
  bool attention_k_eq_v = false;
  bool double_wide_mlp = false;
};

// Per-layer geometry (0 <= layer < num_layers), resolving the Gemma 4 fields above.
int64_t layer_head_dim(const ModelSpec& s, int64_t layer);
int64_t layer_num_kv_heads(const ModelSpec& s, int64_t layer);
int64_t layer_intermediate_size(const ModelSpec& s, int64_t layer);
// True for the last num_kv_shared_layers layers, which reuse an earlier layer's KV.
bool layer_shares_kv(const ModelSpec& s, int64_t layer);
// The layer whose keys and values `layer` attends over: itself, or for a
// KV-sharing layer the last non-sharing layer of the same LayerKind (-1 if there
// is none, which spec_from_* never produces).
int64_t kv_source_layer(const ModelSpec& s, int64_t layer);

const char* layer_kind_name(LayerKind k);
const char* activation_name(Activation a);

}  // namespace tessera
