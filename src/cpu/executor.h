// The CPU backend's Executable (backend/backend.h): binds each op of one
// program to its weights and to a kernel once — the placement plan —
// checking every shape against the program's values, then executes the ops
// in order over a workspace of value buffers (its CallBuffers).
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
#include "backend/arithmetic.h"
#include "backend/backend.h"
#include "backend/weight_store.h"
#include "core/thread_pool.h"
#include "state/sequence_state.h"

namespace tessera {

// Row blocks (kDefaultRowBlock, backend/backend.h): a call of more tokens
// runs each run of row-local ops one block of rows at a time, so the values
// that live only inside such a run — the normed input, the projections'
// outputs, the MLP's gate and up — hold one block's rows instead of the
// whole call's: for a 512-token prefill of the Qwen2.5-0.5B shape, 5 MiB
// instead of 23 (docs/BENCHMARKING.md, "Memory"). Every row's arithmetic is
// the same as in one whole call, so the bits are too.

// Value buffers of one program, grown to the largest call run so far
// (BoundProgram::fit): a session of short calls never holds a long call's rows.
struct Workspace final : CallBuffers {
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

  float* f32_rows(int id) override { return f(id); }
  int32_t* i32_rows(int id) override { return i(id); }
  bool fitted_for(int64_t rows, int64_t logit_rows) const override {
    return rows_fitted >= rows && logit_rows_fitted >= logit_rows;
  }
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

class BoundProgram final : public Executable {
 public:
  // Throws Error naming the weight whose shape does not fit. `row_block`:
  // tokens per row block (kDefaultRowBlock; 0: every call runs whole).
  // `arithmetic`: the integer-dot linears' level (backend/arithmetic.h):
  // their activation passes, and whether long calls may take the GEMMs.
  // Linear layers split output features and attention splits heads across
  // `pool`, which never changes the bits.
  BoundProgram(const Program& program, const WeightStore& weights, Isa isa, QLinearCache& cache, ThreadPool& pool,
               int64_t row_block = kDefaultRowBlock, Arithmetic arithmetic = Arithmetic::Exact);

  const Program& program() const override { return *program_; }
  Isa isa() const { return isa_; }
  Arithmetic arithmetic() const { return arithmetic_; }
  const std::vector<OpPlacement>& placement() const override { return placement_; }
  // An empty workspace; fit() sizes it for a call.
  Workspace make_workspace() const;
  std::unique_ptr<CallBuffers> make_buffers() const override;
  // Grows `ws` to hold the values of a call of ctx.rows tokens and
  // ctx.logit_rows; done by run(), and needed before writing the inputs.
  void fit(Workspace& ws, const CallContext& ctx) const;
  void run(Workspace& ws, const CallContext& ctx) const;
  // The seam's entries: `buffers` are this backend's (a Workspace).
  void fit(CallBuffers& buffers, const CallContext& ctx) const override;
  void run(CallBuffers& buffers, const CallContext& ctx) const override;
  // Bytes of the value buffers a call of `rows` tokens (and one logit row) needs.
  int64_t buffer_bytes(int64_t rows) const override;

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
  // run_op by op family (cpu/executor_ops.h), one file each.
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
  ThreadPool* pool_;
  std::vector<BoundOp> ops_;
  std::vector<OpPlacement> placement_;
  int64_t row_block_;
  int64_t embed_cols_ = 0;  // the Embed op's output columns (0: none in this program)
  // By op index: for the first op of a run of row-local ops that holds a
  // Linear, the index one past its last op; 0 otherwise.
  std::vector<size_t> segment_end_;
  std::vector<char> block_local_;  // by value id
};

}  // namespace tessera
