// Runs one program: binds each op to its weights and to a kernel once — the
// placement plan — checking every shape against the program's values, then
// executes the ops in order over a workspace of value buffers.
//
// Placement, per op, for the instruction set chosen at load (kernels/cpu_isa.h):
//   Linear on lut4 / int8 weights   kernels/qlinear.h (int8 activations);
//                                   at Isa::Amx, calls of kAmxMinTokens or
//                                   more tokens: kernels/qlinear_amx.h (bf16)
//   Linear on f32 / f16 / bf16      kernels/float_linear.h (the reference's bits)
//   Linear on other formats         reference kernel (fallback)
//   RMSNorm, RoPE, attention, gated activation, add, softcap, argmax
//                                   kernels/vector_ops.h of that level
//   ShortConv, CausalConv, DeltaRule,
//   SplitHeads                      kernels/vector_ops.h of that level
//   Embed, KvStore, SelectRows      row copies (no arithmetic to place)
// At Isa::Scalar every op runs its reference kernel. Linear layers split
// output features and attention splits heads across the thread pool, which
// never changes the bits.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/program.h"
#include "kernels/cpu_isa.h"
#include "kernels/int16_activations.h"
#include "kernels/int8_activations.h"
#include "kernels/interleaved_linear.h"
#include "kernels/qlinear.h"
#include "kernels/qlinear_amx.h"
#include "kernels/qlinear_refine.h"
#include "kernels/vector_ops.h"
#include "runtime/arithmetic.h"
#include "state/sequence_state.h"
#include "runtime/thread_pool.h"
#include "runtime/weight_store.h"

namespace tessera {

// Tokens per row block. A call of more tokens runs each run of row-local ops
// (the norms, linears, RoPE and MLP between two attention ops) one block of
// rows at a time, so the values that live only inside such a run — the
// normed input, the projections' outputs, the MLP's gate and up — hold one
// block's rows instead of the whole call's: for a 512-token prefill of the
// Qwen2.5-0.5B shape, 5 MiB instead of 23 (docs/BENCHMARKING.md, "Memory").
// Every row's arithmetic is the same as in one whole call, so the bits are too.
constexpr int64_t kDefaultRowBlock = 128;

// Value buffers of one program, grown to the largest call run so far
// (BoundProgram::fit): a session of short calls never holds a long call's rows.
struct Workspace {
  std::vector<std::vector<float>> f32;    // by value id (empty for i32 values)
  std::vector<std::vector<int32_t>> i32;  // by value id (empty for f32 values)
  // By value id: elements from the buffer's start to the current row block's
  // first row (0 outside row blocks, and for block-local values).
  std::vector<int64_t> offset;
  kernels::Int8Activations acts;          // the last quantized Linear input
  kernels::Bf16Activations bf16_acts;     // the same, for the AMX kernels
  kernels::Int16Activations i16_acts;     // the same, for the int16 GEMM
  kernels::RefineScratch refine;          // the output head's top-logit refinement
  // The most rows / logit rows fit() has sized the buffers for: a call
  // within both finds them grown (a larger one grows them first).
  int64_t rows_fitted = 0, logit_rows_fitted = 0;

  float* f(int id) { return f32[id].data() + offset[id]; }
  int32_t* i(int id) { return i32[id].data() + offset[id]; }
};

// Wall time per op of a program, summed over calls (tessera audit).
struct OpProfile {
  std::vector<double> seconds;
  std::vector<int64_t> calls;
};

// What a call hands a program besides its input values.
struct CallContext {
  int64_t rows = 0;                  // tokens in this call (<= max_tokens)
  std::vector<int32_t> logit_rows;   // rows (0..rows-1) whose logits are wanted
  SequenceState* state = nullptr;    // the sequence's per-layer state (KV, conv tails)
  // Set instead of `state` for a step of several sequences at once (one
  // token each, Session::decode_batch): row r is the next token of the
  // sequence whose state is row_states[r], at position row_states[r]->length().
  // The ops that read or write state handle each row against its own.
  std::vector<SequenceState*> row_states;
  ThreadPool* pool = nullptr;
  OpProfile* profile = nullptr;      // optional: per-op timing
  // Every Linear takes the kernel path of a one-token call (the integer-dot
  // kernels, whose bits do not depend on the number of tokens), never the
  // int16 GEMM or AMX tiles of longer calls: each row then has the bits a
  // decode step of that token alone would give. Speculative verification
  // (generation/speculative.h) sets it so that its output equals plain decode's.
  bool decode_kernels = false;
  // Optional: called before every Linear with its weight's name and its
  // input [rows][cols] (calibration, convert/calibration.h).
  // Set, it sees whole calls: row blocks are off.
  const std::function<void(const std::string& weight, const float* x, int64_t rows, int64_t cols)>*
      on_linear_input = nullptr;
};

// Which kernel an op runs, for the audit.
struct KernelPlacement {
  std::string kernel;     // e.g. "linear.lut4.avx512", "rms_norm.avx2", "linear.f32.reference"
  bool fallback = false;  // a reference kernel standing in for a missing optimized one
};

// Kernel-ready forms of weights, shared by every program of a model (the
// decode and prefill programs use the same weights): the integer kernels'
// view and, for an output head, what its top-logit refinement precomputes.
struct QLinearEntry {
  std::shared_ptr<const kernels::QLinearWeights> weights;
  // Blocked weights at the fast level: the 16-row interleaved layout
  // (kernels/interleaved_linear.h) the layers' linears run on.
  std::shared_ptr<const kernels::InterleavedWeights> interleaved;
  std::shared_ptr<const kernels::RefineHead> refine;  // heads only
};
struct QLinearCache {
  std::map<std::string, QLinearEntry> entries;  // by weight name
  // Where the interleaved layouts live (huge pages). The stored bytes each
  // was laid out from are given back to the system as it is made
  // (release_pages): reading one of those weights through its WeightView
  // afterwards finds zeros where the bundle was read into memory.
  std::shared_ptr<HugePageArena> arena = std::make_shared<HugePageArena>();
};

class BoundProgram {
 public:
  // Throws Error naming the weight whose shape does not fit. `row_block`:
  // tokens per row block (kDefaultRowBlock; 0: every call runs whole).
  // `arithmetic`: the integer-dot linears' level (runtime/arithmetic.h):
  // their activation passes, and whether long calls may take the GEMMs.
  BoundProgram(const Program& program, const WeightStore& weights, Isa isa, QLinearCache& cache,
               int64_t row_block = kDefaultRowBlock, Arithmetic arithmetic = Arithmetic::Exact);

  const Program& program() const { return *program_; }
  Isa isa() const { return isa_; }
  Arithmetic arithmetic() const { return arithmetic_; }
  const std::vector<KernelPlacement>& placement() const { return placement_; }
  // An empty workspace; fit() sizes it for a call.
  Workspace make_workspace() const;
  // Grows `ws` to hold the values of a call of ctx.rows tokens and
  // ctx.logit_rows; done by run(), and needed before writing the inputs.
  void fit(Workspace& ws, const CallContext& ctx) const;
  void run(Workspace& ws, const CallContext& ctx) const;
  // Bytes of the value buffers a call of `rows` tokens (and one logit row) needs.
  int64_t workspace_bytes(int64_t rows) const;

 private:
  struct BoundOp {
    const Op* op = nullptr;
    const WeightView* w0 = nullptr;  // the op's weight (Embed table, norm weight, linear matrix)
    const float* w1 = nullptr;       // Linear bias (f32)
    std::shared_ptr<const kernels::QLinearWeights> qw;  // Linear with an integer kernel
    // Set: qw's values interleaved 16 rows at a time, which this Linear runs on
    // (the fast level's blocked weights, kernels/interleaved_linear.h).
    std::shared_ptr<const kernels::InterleavedWeights> iw;
    kernels::ActLayout act_layout = kernels::ActLayout::Natural;  // how its input is quantized
    const QLinearEntry* table = nullptr;  // Embed: its table's kernel forms (an interleaved tied head)
    bool float_linear = false;       // Linear on f32/f16/bf16 weights with a vector kernel
    bool reuse_acts = false;         // the input is already quantized in ws.acts (or ws.bf16_acts, ws.i16_acts)
    int act_passes = 2;              // int8 activation passes (kernels/int8_activations.h)
    int act_qmax = 127;              // their range (kernels::layer_act_qmax; the head: full)
    int64_t act_block = kernels::kActBlock;  // columns per activation scale (the fast level's interleaved layers: 32)
    bool refine_top = false;         // output head: one pass, top candidates redone with two
    std::shared_ptr<const kernels::RefineHead> refine;  // refine_top: the head's row norms
    // Weights rearranged at bind time: ShortConv / CausalConv taps tap-major
    // [kernel][channels]; DeltaRule −exp(A_log) [heads] then dt_bias [heads].
    std::vector<float> prepared;
    // Linears that read the same quantized input back to back (q/k/v,
    // gate/up) run as one parallel_for on the integer-dot path: the first
    // holds how many (1: alone), the rest 0.
    int linear_group = 1;
  };
  enum class LinearPath { Reference, IntegerDot, Amx, I16Gemm, Float };
  LinearPath linear_path(const BoundOp& b, int64_t rows) const;
  void run_op(const BoundOp& b, Workspace& ws, const CallContext& ctx) const;
  // run_op by op family (runtime/executor_ops.h), one file each.
  void run_linear(const BoundOp& b, Workspace& ws, const CallContext& ctx) const;
  void run_attention(const BoundOp& b, Workspace& ws, const CallContext& ctx) const;
  void run_sequence_mixer(const BoundOp& b, Workspace& ws, const CallContext& ctx) const;
  void run_elementwise(const BoundOp& b, Workspace& ws, const CallContext& ctx) const;
  // Rows [row0, row0 + rows) of the call, on `state` at its length().
  void run_delta_rule(const BoundOp& b, Workspace& ws, const CallContext& ctx, SequenceState& state, int64_t row0,
                      int64_t rows) const;
  // The stateful ops (attention, KV store, convolutions, delta rule) of a
  // step of several sequences (CallContext::row_states): each row against its
  // own state, as a one-token call would run it.
  void run_rows_on_own_states(const BoundOp& b, Workspace& ws, const CallContext& ctx) const;
  // ops_[first .. first+count): a linear group on the integer-dot path.
  void run_linear_group(size_t first, size_t count, Workspace& ws, const CallContext& ctx) const;
  // How many ops starting at ops_[i] this call runs as one step (1, or a group).
  size_t step_length(size_t i, int64_t rows) const;
  // Rows per block of a call of `rows` tokens; `rows` itself if it runs whole.
  int64_t block_rows(const CallContext& ctx) const;
  // Runs (timed into ctx.profile, counting a call if `count`) the step at ops_[i]; returns its length.
  size_t run_step(size_t i, Workspace& ws, const CallContext& ctx, bool count) const;
  // Finds the runs of row-local ops and the values that live inside one.
  void find_row_blocks();

  const Program* program_;
  Isa isa_;
  Arithmetic arithmetic_;
  const kernels::VectorOps* vops_;
  std::vector<BoundOp> ops_;
  std::vector<KernelPlacement> placement_;
  int64_t row_block_;
  // By op index: for the first op of a run of row-local ops that holds a
  // Linear, the index one past its last op; 0 otherwise.
  std::vector<size_t> segment_end_;
  std::vector<char> block_local_;  // by value id
};

}  // namespace tessera
