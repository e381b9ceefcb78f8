// Runs one program: binds each op to its weights once (checking every shape
// against the program's values), then executes the ops in order over a
// workspace of value buffers. Every op runs its reference kernel
// (kernels/reference); linear layers split output features and attention
// splits heads across the thread pool, which never changes the bits.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/program.h"
#include "runtime/kv_cache.h"
#include "runtime/thread_pool.h"
#include "runtime/weight_store.h"

namespace tessera {

// Value buffers of one program, sized for its max_tokens rows.
struct Workspace {
  std::vector<std::vector<float>> f32;    // by value id (empty for i32 values)
  std::vector<std::vector<int32_t>> i32;  // by value id (empty for f32 values)

  float* f(int id) { return f32[id].data(); }
  int32_t* i(int id) { return i32[id].data(); }
};

// What a call hands a program besides its input values.
struct CallContext {
  int64_t rows = 0;                  // tokens in this call (<= max_tokens)
  std::vector<int32_t> logit_rows;   // rows (0..rows-1) whose logits are wanted
  KvCache* kv = nullptr;
  ThreadPool* pool = nullptr;
};

class BoundProgram {
 public:
  // Throws Error naming the weight whose shape does not fit.
  BoundProgram(const Program& program, const WeightStore& weights);

  const Program& program() const { return *program_; }
  Workspace make_workspace() const;
  void run(Workspace& ws, const CallContext& ctx) const;

 private:
  struct BoundOp {
    const Op* op = nullptr;
    const WeightView* w0 = nullptr;  // the op's weight (Embed table, norm weight, linear matrix)
    const float* w1 = nullptr;       // Linear bias (f32)
  };
  const Program* program_;
  std::vector<BoundOp> ops_;
};

}  // namespace tessera
