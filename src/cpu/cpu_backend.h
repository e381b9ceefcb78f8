// The CPU backend (backend/backend.h): programs bound to the kernels of one
// instruction set (kernels/cpu_isa.h), run on the host's thread pool. It
// owns the kernel-ready forms of the weights (QLinearCache) that every
// program it binds shares, so it outlives them.
#pragma once

#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "core/thread_pool.h"
#include "cpu/executor.h"
#include "kernels/cpu_isa.h"

namespace tessera {

struct CpuBackendOptions {
  Isa isa = Isa::Scalar;  // Isa::Scalar runs every op on its reference kernel
  int64_t row_block = kDefaultRowBlock;  // tokens per row block (0: calls run whole)
  Arithmetic arithmetic = Arithmetic::Exact;
};

class CpuBackend final : public Backend {
 public:
  // Throws Error when this CPU lacks options.isa. `pool` must outlive the backend.
  CpuBackend(const CpuBackendOptions& options, ThreadPool& pool);

  BackendInfo info() const override;
  Arithmetic arithmetic() const override { return options_.arithmetic; }
  std::unique_ptr<Executable> bind(const Program& program, const WeightStore& weights) override;

 private:
  CpuBackendOptions options_;
  ThreadPool* pool_;
  QLinearCache cache_;
};

}  // namespace tessera
