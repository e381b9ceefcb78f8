// The backend seam: what runs a program, kept apart from what decides which
// program to run. A Backend binds each Program of a model to the model's
// weights once — choosing a kernel for every op and checking every shape —
// and hands back an Executable; a Session (runtime/session.h) then runs calls
// on Executables through CallBuffers, never seeing how or where the
// arithmetic happens.
//
//   runtime (Model, Session) ──bind(Program, WeightStore)──▶ Backend
//                            ◀──────── Executable ──────────
//   Session: make_buffers() once per program, then per call:
//            fit(buffers, call); write inputs; run(buffers, call); read outputs
//
// The one backend today is the CPU's (cpu/cpu_backend.h: placement, the
// executor, workspaces, the kernels of the instruction set chosen at load).
// Only the loader that picks a backend (runtime/model.cc) names it; above
// the seam nothing names a CPU type (scripts/check_layers.py fails on an
// include of cpu/ from anywhere else).
//
// Every backend keeps the runtime's contract: a call's bits depend only on
// the sequence's own tokens and state and the Arithmetic level, never on
// threads, row blocks, or the other rows of a call (CallContext::row_states,
// decode_kernels).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/arithmetic.h"
#include "backend/weight_store.h"
#include "graph/program.h"
#include "state/sequence_state.h"

namespace tessera {

// Tokens per row block, the default: a backend that splits long calls runs
// each run of row-local ops (norms, linears, RoPE, MLP between two attention
// ops) one block of rows at a time, so values that live only inside such a
// run hold one block's rows, never the whole call's (cpu/executor.h). The
// bits are those of the whole call.
constexpr int64_t kDefaultRowBlock = 128;

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
  OpProfile* profile = nullptr;      // optional: per-op timing
  // Rows whose input embedding is given instead of looked up by id (an
  // image's soft tokens): the Embed op writes `values` ([rows][hidden],
  // unscaled) over rows [row, row + rows) of its output.
  struct EmbeddingRows {
    int64_t row = 0, rows = 0;
    const float* values = nullptr;
  };
  std::vector<EmbeddingRows> embeddings;
  // Bidirectional blocks (Gemma's image spans), per row of the call: empty,
  // causal everywhere; else every Attention lets row t also see the call's
  // later rows before block_end[t] (ref::KvSpan::block_end).
  std::vector<int32_t> block_end;
  // Every Linear takes the kernel path of a one-token call, whose bits do
  // not depend on the number of tokens: each row then has the bits a decode
  // step of that token alone would give. Speculative verification
  // (generation/speculative.h) and batched decode set it.
  bool decode_kernels = false;
  // Optional: called before every Linear with its weight's name and its
  // input [rows][cols] (calibration, convert/calibration.h). Set, it sees
  // whole calls: row blocks are off.
  const std::function<void(const std::string& weight, const float* x, int64_t rows, int64_t cols)>*
      on_linear_input = nullptr;
};

// Where one op of a bound program runs, for the audit.
struct OpPlacement {
  std::string kernel;     // e.g. "linear.lut4.avx512", "rms_norm.avx2", "linear.f32.reference"
  bool fallback = false;  // a reference kernel standing in for a missing optimized one
};

// A program's value buffers on its backend, sized by Executable::fit for the
// largest call so far. The host views below are where a call's inputs are
// written before run() and its outputs read after it: `rows` rows of the
// value's columns from the returned pointer (logit rows for the head's values).
class CallBuffers {
 public:
  virtual ~CallBuffers() = default;
  virtual float* f32_rows(int value_id) = 0;
  virtual int32_t* i32_rows(int value_id) = 0;
  // Whether a call of `rows` tokens and `logit_rows` logit rows finds them
  // sized (fit would not grow them).
  virtual bool fitted_for(int64_t rows, int64_t logit_rows) const = 0;
};

// One program bound to one backend's kernels and to the model's weights.
class Executable {
 public:
  virtual ~Executable() = default;
  virtual const Program& program() const = 0;
  // Empty buffers; fit() sizes them for a call.
  virtual std::unique_ptr<CallBuffers> make_buffers() const = 0;
  // Grows `buffers` for a call of ctx.rows tokens and ctx.logit_rows; done
  // by run(), and needed before writing the inputs.
  virtual void fit(CallBuffers& buffers, const CallContext& ctx) const = 0;
  virtual void run(CallBuffers& buffers, const CallContext& ctx) const = 0;
  // Where each op (by index in program().ops) runs.
  virtual const std::vector<OpPlacement>& placement() const = 0;
  // Bytes of the buffers a call of `rows` tokens (and one logit row) needs.
  virtual int64_t buffer_bytes(int64_t rows) const = 0;
};

// What a backend says about itself (bench, audit, serve's banner).
struct BackendInfo {
  std::string name;                   // "cpu"
  std::string level;                  // its kernels' level: "avx2", "avx512", "amx", "neon", "scalar"
  std::vector<std::string> variants;  // variants of that level it runs, e.g. "avx_vnni"
  bool runs(const std::string& variant) const {
    return std::find(variants.begin(), variants.end(), variant) != variants.end();
  }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendInfo info() const = 0;
  virtual Arithmetic arithmetic() const = 0;
  // Binds `program` to `weights`; throws Error naming the weight whose shape
  // or format does not fit. Programs bound by one backend share its
  // kernel-ready forms of the weights (the decode and prefill programs read
  // the same ones); the backend must outlive them, and so must `program`
  // and `weights`.
  virtual std::unique_ptr<Executable> bind(const Program& program, const WeightStore& weights) = 0;
};

}  // namespace tessera
