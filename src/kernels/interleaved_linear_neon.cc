// NEON (+ the ARMv8.2 dot product) interleaved linear; contract and layout
// in kernels/interleaved_linear.h. Compiled only for AArch64 (CMakeLists.txt).
//
// A 64-byte weight vector is four q registers, register h holding rows
// 4h..4h+3 of the group as four int32 lanes of 4 bytes each: SDOT
// (vdotq_s32) against a token's 4 activation bytes duplicated into every
// lane adds 4 columns to 4 rows. SDOT is signed × signed, so the weights
// enter as signed bytes: u itself when every u ≤ 127 (small_unsigned; the
// sum then starts from −weight_offset · Σq, as with VNNI), else v = u − 128
// (u xor 0x80; the sum starts from 0). 4-bit codes are split from their
// nibbles and, unless they are the values, looked up with TBL; 5- and 6-bit
// codes or their nibbles with their high bits shifted out of the plane.
#include <arm_neon.h>

#include "kernels/interleaved_linear.h"
#include "kernels/interleaved_walk.h"

// arm_neon.h declares vdotq_s32 for armv8.2-a+dotprod callers.
#define TESSERA_NEON_DOT __attribute__((target("arch=armv8.2-a+dotprod")))

namespace tessera::kernels {

namespace {

// Rows 4h..4h+3's values of a block: f32, f16, or int8 factors (p) times
// f16 super-block multipliers (m), the product exact.
template <class Fm>
inline float32x4_t load4(const uint8_t* p, const uint8_t* m, int h) {
  if constexpr (Fm::Super) {
    const int8x8_t f8 = vld1_s8(reinterpret_cast<const int8_t*>(p) + 4 * (h & 2));  // rows 8(h/2)..8(h/2)+7
    const int16x8_t f16 = vmovl_s8(f8);
    const int32x4_t f32 = h % 2 ? vmovl_high_s16(f16) : vmovl_s16(vget_low_s16(f16));
    const float32x4_t mult = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(m) + 4 * h)));
    return vmulq_f32(mult, vcvtq_f32_s32(f32));
  } else if constexpr (Fm::F32) {
    return vld1q_f32(reinterpret_cast<const float*>(p) + 4 * h);
  } else {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p) + 4 * h)));
  }
}

// The high bits of one half of a group's nibbles, moved from the plane to bit 4.
template <int HB>
inline uint8x16_t plane_bits(uint8x16_t plane, int shift) {
  return vandq_u8(vshlq_u8(plane, vdupq_n_s8(static_cast<int8_t>(shift))), vdupq_n_u8(((1 << HB) - 1) << 4));
}

// Whole: one segment per block (a scale per 32 activation columns): the
// block's SDOTs chain in int32 before one convert and multiply.
template <class Fm, bool Signed, bool Whole>
struct Tile {
  static constexpr bool B4 = Fm::B4, Lookup = Fm::Lookup, Off = Fm::Off;
  static constexpr int PB = Fm::PB;
  const InterleavedWeights& w;
  const float* bias;

  template <int RG, int TT>
  TESSERA_NEON_DOT void operator()(std::integral_constant<int, RG>, std::integral_constant<int, TT>, int64_t g,
                                   const TokenBlock<TT>& tk) const {
    const uint8x16_t nibble = vdupq_n_u8(0x0f), flip = vdupq_n_u8(0x80);
    const uint8x16_t table = vld1q_u8(w.table());
    const uint8_t* wd[RG];
    for (int r = 0; r < RG; ++r) wd[r] = w.group_data(g + r);
    float32x4_t acc[RG][4][TT];
    for (int r = 0; r < RG; ++r)
      for (int h = 0; h < 4; ++h)
        for (int t = 0; t < TT; ++t) acc[r][h][t] = vdupq_n_f32(0.0f);
    const int64_t blocks = w.blocks();
    for (int64_t b = 0; b < blocks; ++b) {
      float32x4_t part[RG][4][TT];
      int32x4_t dsum[RG][4][TT];  // Whole: the block's int32 sums
      for (int kk = 0; kk < PB; ++kk) {
        const int64_t k = b * PB + kk;
        int8x16_t w0[RG][4], w1[RG][4];
        for (int r = 0; r < RG; ++r)
          for (int h = 0; h < 4; ++h) {
            uint8x16_t u0, u1;
            if constexpr (B4) {
              const uint8x16_t v = vld1q_u8(wd[r] + 64 * Fm::nibble_vector(k) + 16 * h);
              u0 = vandq_u8(v, nibble);
              u1 = vshrq_n_u8(v, 4);
              if constexpr (Fm::HB > 0) {
                const uint8x16_t plane = vld1q_u8(wd[r] + 64 * Fm::plane_vector(k) + 16 * h);
                u0 = vorrq_u8(u0, plane_bits<Fm::HB>(plane, Fm::plane_shift(kk, 0)));
                u1 = vorrq_u8(u1, plane_bits<Fm::HB>(plane, Fm::plane_shift(kk, 1)));
              }
              if constexpr (Lookup) {
                u0 = vqtbl1q_u8(table, u0);
                u1 = vqtbl1q_u8(table, u1);
              }
            } else {
              u0 = vld1q_u8(wd[r] + 128 * k + 16 * h);
              u1 = vld1q_u8(wd[r] + 128 * k + 64 + 16 * h);
            }
            if constexpr (Signed) {
              u0 = veorq_u8(u0, flip);
              u1 = veorq_u8(u1, flip);
            }
            w0[r][h] = vreinterpretq_s8_u8(u0);
            w1[r][h] = vreinterpretq_s8_u8(u1);
          }
        for (int t = 0; t < TT; ++t) {
          const int8x16_t a0 = vreinterpretq_s8_s32(vdupq_n_s32(tk.q4[t][2 * k]));
          const int8x16_t a1 = vreinterpretq_s8_s32(vdupq_n_s32(tk.q4[t][2 * k + 1]));
          const int64_t seg = Whole ? b : k;
          const int32x4_t start = vdupq_n_s32(Signed ? 0 : tk.start[t][seg]);
          const float32x4_t s = vdupq_n_f32(tk.s[t][seg]);
          for (int r = 0; r < RG; ++r)
            for (int h = 0; h < 4; ++h) {
              if constexpr (Whole) {
                const int32x4_t from = kk > 0 ? dsum[r][h][t] : start;
                dsum[r][h][t] = vdotq_s32(vdotq_s32(from, w0[r][h], a0), w1[r][h], a1);
                if (kk == PB - 1) part[r][h][t] = vmulq_f32(vcvtq_f32_s32(dsum[r][h][t]), s);
              } else {
                const int32x4_t d = vdotq_s32(vdotq_s32(start, w0[r][h], a0), w1[r][h], a1);
                const float32x4_t f = vcvtq_f32_s32(d);
                part[r][h][t] = kk == 0 ? vmulq_f32(f, s) : vfmaq_f32(part[r][h][t], f, s);
              }
            }
        }
      }
      for (int r = 0; r < RG; ++r)
        for (int h = 0; h < 4; ++h) {
          const float32x4_t ws =
              load4<Fm>(w.group_scales(g + r, b), Fm::Super ? w.group_scale_multipliers(g + r, b) : nullptr, h);
          for (int t = 0; t < TT; ++t) acc[r][h][t] = vfmaq_f32(acc[r][h][t], ws, part[r][h][t]);
          if constexpr (Off) {
            const float32x4_t wo =
                load4<Fm>(w.group_offsets(g + r, b), Fm::Super ? w.group_offset_multipliers(g + r, b) : nullptr, h);
            for (int t = 0; t < TT; ++t) acc[r][h][t] = vfmaq_f32(acc[r][h][t], wo, vdupq_n_f32(tk.u[t][b]));
          }
        }
    }
    for (int r = 0; r < RG; ++r) {
      const int64_t n0 = (g + r) * kInterleavedRows;
      const int64_t valid = std::min<int64_t>(kInterleavedRows, w.rows() - n0);
      for (int t = 0; t < TT; ++t) {
        float out[16];
        for (int h = 0; h < 4; ++h) vst1q_f32(out + 4 * h, acc[r][h][t]);
        float* yr = tk.y[t] + n0;
        for (int64_t i = 0; i < valid; ++i) yr[i] = bias ? out[i] + bias[n0 + i] : out[i];
      }
    }
  }
};

}  // namespace

void interleaved_linear_neon(const InterleavedWeights& w, const Int8Activations& acts, const float* bias,
                             int64_t g_begin, int64_t g_end, float* y, int64_t ldy) {
  with_form(w, [&](auto form) {
    using Fm = decltype(form);
    auto go = [&](auto tile) { interleaved_walk<2, 1, 1>(w, acts, g_begin, g_end, y, ldy, tile); };
    auto sign = [&](auto whole) {
      constexpr bool W = decltype(whole)::value;
      if constexpr (Fm::SmallCodes) go(Tile<Fm, false, W>{w, bias});
      else if (w.small_unsigned()) go(Tile<Fm, false, W>{w, bias});
      else go(Tile<Fm, true, W>{w, bias});
    };
    if (whole_block_segments(w, acts)) sign(std::true_type{});
    else sign(std::false_type{});
  });
}

}  // namespace tessera::kernels
