// Programs: the unit the runtime executes. A model is a list of programs; each
// is an ordered list of ops over named values with explicit inputs and
// outputs, covering a contiguous range of layers (a chunk). The programs of
// one step (e.g. decode T=1) run in order, each chunk's "hidden" output being
// the next one's input. Prefill variants are the same ops built for up to T
// tokens per call; every variant reads the same weights by name.
//
// Values are two-dimensional: `rows` × `cols`, where rows is the number of
// tokens of the call (RowsKind::Tokens) or the number of positions whose
// logits are wanted (RowsKind::LogitRows). Weights are not values: ops name
// them (HF parameter names, e.g. "model.layers.3.self_attn.q_proj.weight").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/model_spec.h"

namespace tessera {

enum class ValueType { F32, I32 };
enum class RowsKind { Tokens, LogitRows };

struct Value {
  std::string name;
  ValueType type = ValueType::F32;
  RowsKind rows = RowsKind::Tokens;
  int64_t cols = 0;
};

enum class OpKind {
  Embed,            // in: ids(i32)            w: table             out: x        (scale)
  RmsNorm,          // in: x                   w: weight (or none)  out: y        (eps, plus_one, cols per row = group)
  Linear,           // in: x                   w: weight [, bias]   out: y
  Rope,             // in: x, cos, sin         (in place on x)                    (heads, head_dim, rot_dim, neox)
  Attention,        // in: q, k, v             state: KV of `kv_layer`  out: o    (heads, kv_heads, head_dim, window, scale, softcap)
  KvStore,          // in: k, v                state: KV of `kv_layer` (appends the call's rows)
  GatedActivation,  // in: gate, up            out: y                             (activation)
  Add,              // in: x                   (in place on out[0]: y += x)
  SelectRows,       // in: x                   out: the rows whose logits are wanted
  Softcap,          // in place on x                                              (softcap)
  Argmax,           // in: logits              out: ids(i32), one per row: the first index of the row's maximum
  ShortConv,        // in: bcx [B|C|x]  w: conv [channels][1][kernel]  out: bx, y  state: conv tail of `layer`  (kernel)
                    //   y = C · causal_conv(B · x) (ref::short_conv); stores the call's bx rows in the tail
  SliceCols,        // in: x [W]  out: y: columns [col_offset, col_offset + y's cols) of each row    (col_offset)
  Scale,            // in place on x: x *= scale, times the one value of w when given (Gemma 4's layer_scalar)
  SplitHeads,       // in: x [heads · 2·head_dim]  out: a, b [heads · head_dim]: each head's first and second half
                    //   (Qwen3.5's q_proj: query | output gate)                       (heads, head_dim)
  CausalConv,       // in: x  w: conv [channels][1][kernel]  out: y = silu(causal_conv(x))  state: conv tail of `layer`
                    //   (ref::causal_conv_silu; stores the call's x rows in the tail)   (kernel)
  DeltaRule,        // in: qkv (after the conv), a, b  w: A_log, dt_bias  out: o   state: recurrent matrices of `layer`
                    //   Qwen3.5's gated delta rule (ref::delta_rule_step per position and value head)
                    //   (heads = value heads, kv_heads = key heads, head_dim = key dim, value_dim)
};

struct Op {
  OpKind kind = OpKind::Add;
  std::vector<int> inputs;   // value ids
  std::vector<int> outputs;  // value ids (in-place ops name their target here)
  std::vector<std::string> weights;
  int64_t layer = -1;        // decoder layer (-1: embedding / head)
  // Attributes; which ones an op reads is listed beside OpKind.
  float eps = 0.0f;
  bool plus_one = false;
  int64_t group = 0;         // RmsNorm: normalize each run of `group` values (per head); 0: whole row
  int64_t heads = 0, kv_heads = 0, head_dim = 0, rot_dim = 0;
  bool neox = true;
  int64_t window = 0;
  int64_t kv_layer = -1;
  int64_t kernel = 0;        // ShortConv, CausalConv: taps of the causal convolution
  int64_t value_dim = 0;     // DeltaRule: value head size
  int64_t col_offset = 0;    // SliceCols: first column taken
  float scale = 1.0f;
  float softcap = 0.0f;
  Activation activation = Activation::SiLU;
};

enum class ProgramKind { Decode, Prefill };

struct Program {
  std::string name;            // "decode.c0", "prefill32.c1", ...
  ProgramKind kind = ProgramKind::Decode;
  int64_t max_tokens = 1;      // T: tokens per call (1 for decode)
  int64_t chunk = 0;           // index of the layer range
  int64_t layer_begin = 0, layer_end = 0;
  std::vector<Value> values;
  std::vector<int> inputs;     // value ids the caller provides
  std::vector<int> outputs;    // value ids the caller reads
  std::vector<Op> ops;

  int find_value(const std::string& name) const;  // -1 if absent
  const Value& value(const std::string& name) const;  // throws Error if absent
};

struct ProgramSet {
  std::vector<Program> programs;
  int64_t num_chunks = 1;
  std::vector<int64_t> prefill_sizes;  // T of each prefill variant, ascending

  // The chunk programs of one variant (max_tokens == T), in layer order.
  std::vector<const Program*> variant(int64_t max_tokens) const;
};

const char* op_kind_name(OpKind k);
nlohmann::ordered_json program_to_json(const Program& p);
// Every weight name any program reads (sorted, unique).
std::vector<std::string> weights_used(const ProgramSet& set);

}  // namespace tessera
