// A 16×16 transpose of 32-bit values held in 16 AVX-512 registers (rows in,
// columns out): 16 unpacks, 16 in-lane shuffles, 32 lane shuffles.
#pragma once

#include <immintrin.h>

namespace tessera::kernels {

// r[k] = column k of the 16×16 matrix whose rows were r[0..15].
__attribute__((target("avx512f"))) inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {  // per 128-bit lane: (a0 b0 a1 b1), (a2 b2 a3 b3)
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // r[4i + e], lane L: element 4L + e of rows 4i .. 4i+3
    r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  __m512 o[16];
  for (int e = 0; e < 4; ++e) {  // gather lane L of r[e], r[4+e], r[8+e], r[12+e] into o[4L + e]
    const __m512 a = _mm512_shuffle_f32x4(r[e], r[4 + e], 0x88), b = _mm512_shuffle_f32x4(r[e], r[4 + e], 0xDD);
    const __m512 c = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], 0x88), d = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], 0xDD);
    o[e] = _mm512_shuffle_f32x4(a, c, 0x88);
    o[8 + e] = _mm512_shuffle_f32x4(a, c, 0xDD);
    o[4 + e] = _mm512_shuffle_f32x4(b, d, 0x88);
    o[12 + e] = _mm512_shuffle_f32x4(b, d, 0xDD);
  }
  for (int k = 0; k < 16; ++k) r[k] = o[k];
}

}  // namespace tessera::kernels
