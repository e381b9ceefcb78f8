#include "kernels/float_linear.h"

#include "kernels/reference/kernels.h"

namespace tessera::kernels {

bool float_linear_supported(const WeightView& w) {
  const bool format = w.format == WeightFormat::F32 || w.format == WeightFormat::F16 || w.format == WeightFormat::BF16;
  return format && w.shape.size() == 2 && w.data != nullptr;
}

bool float_linear_vectorized(Isa isa) {
  return TESSERA_X86 && (isa == Isa::Avx2 || isa == Isa::Avx512 || isa == Isa::Amx);
}

void float_linear(Isa isa, const WeightView& w, const float* x, int64_t tokens, const float* bias, int64_t n_begin,
                  int64_t n_end, float* y, int64_t ldy) {
  switch (isa) {
#if TESSERA_X86
    case Isa::Amx:
    case Isa::Avx512: return float_linear_avx512(w, x, tokens, bias, n_begin, n_end, y, ldy);
    case Isa::Avx2: return float_linear_avx2(w, x, tokens, bias, n_begin, n_end, y, ldy);
#endif
    default: break;
  }
  // The reference itself (its `out` is only the output stride).
  ref::linear_any(x, tokens, w.cols(), w, bias, ldy, n_begin, n_end, y);
}

}  // namespace tessera::kernels
