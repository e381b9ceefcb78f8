// NEON (+ the ARMv8.2 dot product) integer-dot linear kernels; contract in
// kernels/qlinear.h. Compiled only for AArch64 (CMakeLists.txt).
//
// SDOT (vdotq_s32) adds, in each of its four int32 lanes, the products of
// four consecutive signed bytes: exactly the contract's lane j, which sums
// bytes 4j..4j+3 of every 64-byte vector it multiplies. A 64-byte vector is
// four q registers, register r holding lanes 4r..4r+3, so a chunk's lane
// sums are four int32x4 accumulators (the 128-column layouts add both of
// their 64-byte halves into the same four). The sums are exact and signed,
// so no +128 bias or correction is needed (the activations' bias16 is
// unused), and the activations may use either range.
//
// A row's weights are first laid out as its activations are, as int8 values
// (int8 rows are that already):
//   lut4: per 64 index bytes (128 columns), TBL looks the 16-entry palette up
//         for the low nibbles (even columns: bytes 0..63 of the chunk) and the
//         high nibbles (odd columns: bytes 64..127), as the Lut4Pairs layout
//         has them;
//   lut3 / lut2: per 48 / 32 index bytes, LD3 / LD2 split the bytes of the
//         16 blocks (3 or 2 bytes per 8 columns), shifts and masks give each
//         block's 8 indices as 8 vectors, TBL looks them up, and ST4
//         interleaves columns 0..3 of each block into the first 64 bytes of
//         the chunk and 4..7 into the second: the BlockHalves layout.
//   blk4: as lut4, the table being the tensor's codebook; blk8 rows are
//         used in place, as int8 rows are.
// The expanded row (cols bytes, in L1) is then multiplied with every token
// of a 16-token tile, so prefill expands each row once per tile and decode
// once per call. The last, partial 128-column chunk of a lut row (cols a
// multiple of 64) is expanded from a zero-filled copy, and its missing
// columns multiply activations that are zero.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "core/aligned_vector.h"
#include "kernels/qlinear.h"

// arm_neon.h declares vdotq_s32 for armv8.2-a+dotprod callers.
#define TESSERA_NEON_DOT __attribute__((target("arch=armv8.2-a+dotprod")))

namespace tessera::kernels {

namespace {

// The row's 16-byte palette (entry i at byte i mod 2^bits: every index
// 0..15 TBL can see selects its entry).
inline int8x16_t palette(const QLinearWeights& w, int64_t n) { return vld1q_s8(w.table(n)); }

inline int8x16_t look_up(int8x16_t pal, uint8x16_t idx) { return vqtbl1q_s8(pal, idx); }

// 128 columns of lut4 indices (64 bytes) into dst[0..128) (Lut4Pairs order).
inline void expand_lut4_chunk(int8x16_t pal, const uint8_t* src, int8_t* dst) {
  const uint8x16_t low = vdupq_n_u8(0x0F);
  for (int r = 0; r < 4; ++r) {
    const uint8x16_t b = vld1q_u8(src + 16 * r);
    vst1q_s8(dst + 16 * r, look_up(pal, vandq_u8(b, low)));
    vst1q_s8(dst + 64 + 16 * r, look_up(pal, vshrq_n_u8(b, 4)));
  }
}

// 128 columns of lut3 indices (48 bytes: block j's 24 bits in bytes 3j..3j+2,
// column k of the block at bits 3k..3k+2) into dst[0..128) (BlockHalves order).
inline void expand_lut3_chunk(int8x16_t pal, const uint8_t* src, int8_t* dst) {
  const uint8x16x3_t b = vld3q_u8(src);
  const uint8x16_t m = vdupq_n_u8(7);
  int8x16x4_t first, second;
  first.val[0] = look_up(pal, vandq_u8(b.val[0], m));
  first.val[1] = look_up(pal, vandq_u8(vshrq_n_u8(b.val[0], 3), m));
  first.val[2] = look_up(pal, vandq_u8(vorrq_u8(vshrq_n_u8(b.val[0], 6), vshlq_n_u8(b.val[1], 2)), m));
  first.val[3] = look_up(pal, vandq_u8(vshrq_n_u8(b.val[1], 1), m));
  second.val[0] = look_up(pal, vandq_u8(vshrq_n_u8(b.val[1], 4), m));
  second.val[1] = look_up(pal, vandq_u8(vorrq_u8(vshrq_n_u8(b.val[1], 7), vshlq_n_u8(b.val[2], 1)), m));
  second.val[2] = look_up(pal, vandq_u8(vshrq_n_u8(b.val[2], 2), m));
  second.val[3] = look_up(pal, vshrq_n_u8(b.val[2], 5));
  vst4q_s8(dst, first);  // byte 4j + k = column k of block j
  vst4q_s8(dst + 64, second);
}

// 128 columns of lut2 indices (32 bytes: block j's 16 bits in bytes 2j, 2j+1,
// column k at bits 2k..2k+1) into dst[0..128) (BlockHalves order).
inline void expand_lut2_chunk(int8x16_t pal, const uint8_t* src, int8_t* dst) {
  const uint8x16x2_t b = vld2q_u8(src);
  const uint8x16_t m = vdupq_n_u8(3);
  for (int h = 0; h < 2; ++h) {
    const uint8x16_t v = b.val[h];
    int8x16x4_t half;
    half.val[0] = look_up(pal, vandq_u8(v, m));
    half.val[1] = look_up(pal, vandq_u8(vshrq_n_u8(v, 2), m));
    half.val[2] = look_up(pal, vandq_u8(vshrq_n_u8(v, 4), m));
    half.val[3] = look_up(pal, vshrq_n_u8(v, 6));
    vst4q_s8(dst + 64 * h, half);
  }
}

// Row n's weights in its activations' layout: `chunks` chunks of 128 bytes
// into dst (lut formats; int8 rows are used in place).
void expand_row(const QLinearWeights& w, int64_t n, int64_t chunks, int8_t* dst) {
  const int8x16_t pal = palette(w, n);
  const int64_t chunk_bytes = 16 * w.bits();  // 128 indices
  const uint8_t* row = w.row(n);
  for (int64_t m = 0; m < chunks; ++m) {
    const uint8_t* src = row + m * chunk_bytes;
    alignas(16) uint8_t tail[64];
    const int64_t left = w.row_bytes() - m * chunk_bytes;
    if (left < chunk_bytes) {  // the last chunk of a row of 64 (mod 128) columns
      std::memset(tail, 0, sizeof(tail));
      std::memcpy(tail, src, static_cast<size_t>(left));
      src = tail;
    }
    int8_t* out = dst + m * 128;
    switch (w.format()) {
      case WeightFormat::Lut4:
      case WeightFormat::Blk4: expand_lut4_chunk(pal, src, out); break;
      case WeightFormat::Lut3: expand_lut3_chunk(pal, src, out); break;
      default: expand_lut2_chunk(pal, src, out); break;
    }
  }
}

// Blocked weights (blk4 / blk8): the block scale (or offset) of each q
// register's four lanes of chunk m of row n — one block per register, the
// lanes past the row's end 0.
template <bool kOffset>
inline float32x4_t register_block_value(const QLinearWeights& w, int64_t n, int64_t m, int64_t chunk_cols, int r) {
  const int64_t c = m * chunk_cols + r * (chunk_cols / 4);
  if (c >= w.cols()) return vdupq_n_f32(0.0f);
  const int64_t b = c / w.block_cols();
  return vdupq_n_f32(kOffset ? w.block_offset(n, b) : w.block_scale(n, b));
}

// Output n of token t from the row's int8 weights wq (in the layout of acts):
// per chunk and pass the 16 exact lane sums, each scaled into its f32 lane
// with one fused multiply-add (pass 0, then pass 1), then qlinear_finish.
// Blocked weights (kBlocked): the passes form t, then the block scales and
// offsets apply as kernels/qlinear.h says.
template <int kPasses, int kVectors, bool kBlocked = false>
TESSERA_NEON_DOT float dot_token(const int8_t* wq, const Int8Activations& a, int64_t t, const QLinearWeights& w,
                                 const float* bias, int64_t n) {
  constexpr int64_t kChunk = 16 * kVectors;
  float32x4_t lanes[4];
  for (auto& l : lanes) l = vdupq_n_f32(0.0f);
  const int8_t* q[kPasses];
  const float* s[kPasses];
  for (int p = 0; p < kPasses; ++p) {
    q[p] = a.q_row(t, p);
    s[p] = a.scale_row(t, p);
  }
  for (int64_t m = 0; m < a.chunks; ++m) {
    int8x16_t wv[kVectors];
    for (int r = 0; r < kVectors; ++r) wv[r] = vld1q_s8(wq + m * kChunk + 16 * r);
    float32x4_t tsum[4], usum[4];
    for (int p = 0; p < kPasses; ++p) {
      const int8_t* qm = q[p] + m * kChunk;
      int32x4_t sum[4];
      for (int r = 0; r < 4; ++r) sum[r] = vdotq_s32(vdupq_n_s32(0), wv[r], vld1q_s8(qm + 16 * r));
      if constexpr (kVectors == 8)
        for (int r = 0; r < 4; ++r) sum[r] = vdotq_s32(sum[r], wv[4 + r], vld1q_s8(qm + 64 + 16 * r));
      const float* sm = s[p] + m * 16;
      for (int r = 0; r < 4; ++r) {
        const float32x4_t sr = vld1q_f32(sm + 4 * r);
        if constexpr (!kBlocked) {
          lanes[r] = vfmaq_f32(lanes[r], sr, vcvtq_f32_s32(sum[r]));
        } else {
          // The lane's Σq of this pass: bias16 = −128·Σq, exactly.
          const float32x4_t qs = vmulq_n_f32(vcvtq_f32_s32(vld1q_s32(a.bias_row(t, p) + m * 16 + 4 * r)), -1.0f / 128.0f);
          tsum[r] = p == 0 ? vmulq_f32(sr, vcvtq_f32_s32(sum[r])) : vfmaq_f32(tsum[r], sr, vcvtq_f32_s32(sum[r]));
          usum[r] = p == 0 ? vmulq_f32(sr, qs) : vfmaq_f32(usum[r], sr, qs);
        }
      }
    }
    if constexpr (kBlocked)
      for (int r = 0; r < 4; ++r) {
        lanes[r] = vfmaq_f32(lanes[r], register_block_value<false>(w, n, m, kChunk, r), tsum[r]);
        if (w.block_offsets()) lanes[r] = vfmaq_f32(lanes[r], register_block_value<true>(w, n, m, kChunk, r), usum[r]);
      }
  }
  alignas(16) float out[16];
  for (int r = 0; r < 4; ++r) vst1q_f32(out + 4 * r, lanes[r]);
  return qlinear_finish(out, w.out_scale(n), bias, n);
}

template <int kPasses>
void qlinear_passes(const QLinearWeights& w, const Int8Activations& acts, const float* bias, int64_t n_begin,
                    int64_t n_end, float* y, int64_t ldy) {
  const bool lut = w.bits() != 8;  // int8 and blk8 rows are used in place
  thread_local AlignedVector<int8_t> expanded;
  if (lut && expanded.size() < static_cast<size_t>(acts.chunks * 128))
    expanded.resize(static_cast<size_t>(acts.chunks * 128));
  for (int64_t t0 = 0; t0 < acts.rows; t0 += kTokenTile) {
    const int64_t t1 = std::min(acts.rows, t0 + kTokenTile);
    for (int64_t n = n_begin; n < n_end; ++n) {
      const int8_t* wq = reinterpret_cast<const int8_t*>(w.row(n));
      if (lut) {
        expand_row(w, n, acts.chunks, expanded.data());
        wq = expanded.data();
      }
      for (int64_t t = t0; t < t1; ++t) {
        float& out = y[t * ldy + n];
        if (w.blocked()) out = lut ? dot_token<kPasses, 8, true>(wq, acts, t, w, bias, n)
                                   : dot_token<kPasses, 4, true>(wq, acts, t, w, bias, n);
        else out = lut ? dot_token<kPasses, 8>(wq, acts, t, w, bias, n) : dot_token<kPasses, 4>(wq, acts, t, w, bias, n);
      }
    }
  }
}

}  // namespace

void qlinear_neon(const QLinearWeights& w, const Int8Activations& acts, const float* bias, int64_t n_begin,
                  int64_t n_end, float* y, int64_t ldy) {
  if (acts.passes == 2) qlinear_passes<2>(w, acts, bias, n_begin, n_end, y, ldy);
  else qlinear_passes<1>(w, acts, bias, n_begin, n_end, y, ldy);
}

}  // namespace tessera::kernels
