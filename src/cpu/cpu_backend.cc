#include "cpu/cpu_backend.h"

#include "core/error.h"

namespace tessera {

CpuBackend::CpuBackend(const CpuBackendOptions& options, ThreadPool& pool) : options_(options), pool_(&pool) {
  if (!isa_supported(options.isa)) fail("cpu backend", "isa", "this CPU does not support {}", isa_name(options.isa));
}

BackendInfo CpuBackend::info() const {
  BackendInfo info;
  info.name = "cpu";
  info.level = std::string(isa_name(options_.isa));
  if (runs_avx_vnni(options_.isa)) info.variants.push_back("avx_vnni");  // the avx2 kernels' AVX-VNNI variants
  return info;
}

std::unique_ptr<Executable> CpuBackend::bind(const Program& program, const WeightStore& weights) {
  return std::make_unique<BoundProgram>(program, weights, options_.isa, cache_, *pool_, options_.row_block,
                                        options_.arithmetic);
}

}  // namespace tessera
