#include "kernels/read_sum.h"

#if TESSERA_X86
#include <immintrin.h>
#endif
#if TESSERA_ARM64
#include <arm_neon.h>
#endif

namespace tessera::kernels {

namespace {

#if TESSERA_X86

__attribute__((target("avx512f"))) uint64_t read_sum_avx512(const uint64_t* w, int64_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {  // 256 bytes: four cache lines
    a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(w + i));
    a1 = _mm512_add_epi64(a1, _mm512_loadu_si512(w + i + 8));
    a2 = _mm512_add_epi64(a2, _mm512_loadu_si512(w + i + 16));
    a3 = _mm512_add_epi64(a3, _mm512_loadu_si512(w + i + 24));
  }
  // Lanes added as unsigned words (_mm512_reduce_add_epi64 adds them as
  // signed long long, an overflow UBSan rightly reports).
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
  uint64_t s = 0;
  for (uint64_t lane : lanes) s += lane;
  for (; i < n; ++i) s += w[i];
  return s;
}

__attribute__((target("avx2"))) uint64_t read_sum_avx2(const uint64_t* w, int64_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {  // 128 bytes: two cache lines
    a0 = _mm256_add_epi64(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i)));
    a1 = _mm256_add_epi64(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i + 4)));
    a2 = _mm256_add_epi64(a2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i + 8)));
    a3 = _mm256_add_epi64(a3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i + 12)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                     _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
  uint64_t s = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (; i < n; ++i) s += w[i];
  return s;
}
#endif

#if TESSERA_ARM64
uint64_t read_sum_neon(const uint64_t* w, int64_t n) {
  uint64x2_t a0 = vdupq_n_u64(0), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {  // 64 bytes: one cache line
    a0 = vaddq_u64(a0, vld1q_u64(w + i));
    a1 = vaddq_u64(a1, vld1q_u64(w + i + 2));
    a2 = vaddq_u64(a2, vld1q_u64(w + i + 4));
    a3 = vaddq_u64(a3, vld1q_u64(w + i + 6));
  }
  uint64_t s = vaddvq_u64(vaddq_u64(vaddq_u64(a0, a1), vaddq_u64(a2, a3)));
  for (; i < n; ++i) s += w[i];
  return s;
}
#endif

}  // namespace

uint64_t read_sum_scalar(const uint64_t* w, int64_t n) {
  uint64_t s0 = 0, s1 = 0;
  int64_t i = 0;
  for (; i + 2 <= n; i += 2) {
    s0 += w[i];
    s1 += w[i + 1];
  }
  if (i < n) s0 += w[i];
  return s0 + s1;
}

uint64_t read_sum(Isa isa, const uint64_t* words, int64_t n) {
  switch (isa) {
#if TESSERA_X86
    case Isa::Amx:
    case Isa::Avx512: return read_sum_avx512(words, n);
    case Isa::Avx2: return read_sum_avx2(words, n);
#endif
#if TESSERA_ARM64
    case Isa::Neon: return read_sum_neon(words, n);
#endif
    default: break;
  }
  return read_sum_scalar(words, n);
}

}  // namespace tessera::kernels
