// AVX2 interleaved linear; contract and layout in kernels/interleaved_linear.h.
//
// A 64-byte weight vector is two 32-byte halves: rows 0-7 and rows 8-15 of
// the group, one row per int32 lane. Without an unsigned×signed 4-byte dot,
// each 4-column dot is vpmaddubsw (bytes into int16 pairs) then vpmaddwd
// against ones (pairs into the int32 lane):
//   small_unsigned weights (u ≤ 127): u · q pairs stay below 2·127·127 <
//     32768, and the sum starts from −weight_offset · Σq as with VNNI; when
//     every u ≤ 64 (blk4's codes) the two vectors' pairs are added in int16
//     before one vpmaddwd (2·2·64·127 < 32768);
//   else (weight_offset 128, any int8 value v = u − 128): |v| times q with
//     v's sign (vpsignb), |v| ≤ 128, so pairs stay below 2·128·127, and the
//     sum starts from 0.
// Either way the int32 group sums are the exact ones the contract names;
// with one segment per block (Whole: a scale per 32 activation columns)
// they are added in int32 over the block before one convert and multiply.
#include <immintrin.h>

#include "kernels/interleaved_linear.h"
#include "kernels/interleaved_walk.h"

#define TESSERA_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace tessera::kernels {

namespace {

constexpr int kPrefetchVectors = 48;  // 64-byte vectors: 3 KB ahead of a row group's weight stream

// Rows 8h..8h+7's values of a block: f32, f16, or int8 factors (p) times
// f16 super-block multipliers (m), the product exact.
template <class Fm>
TESSERA_AVX2 inline __m256 load8(const uint8_t* p, const uint8_t* m, int h) {
  if constexpr (Fm::Super)
    return _mm256_mul_ps(
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(m + 16 * h))),
        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * h)))));
  else if constexpr (Fm::F32) return _mm256_load_ps(reinterpret_cast<const float*>(p) + 8 * h);
  else return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(p + 16 * h)));
}

// The high bits of one half of a group's nibbles, moved from the plane to bit 4.
template <int HB>
TESSERA_AVX2 inline __m256i plane_bits(__m256i plane, int shift) {
  const __m256i moved = shift >= 0 ? _mm256_slli_epi16(plane, shift) : _mm256_srli_epi16(plane, -shift);
  return _mm256_and_si256(moved, _mm256_set1_epi8(static_cast<char>(((1 << HB) - 1) << 4)));
}

enum class Dot { Small, SmallPairs, Signed };

template <class Fm, Dot D, bool Whole>
struct Tile {
  static constexpr bool B4 = Fm::B4, Lookup = Fm::Lookup, Off = Fm::Off;
  static constexpr int PB = Fm::PB;
  const InterleavedWeights& w;
  const float* bias;

  template <int RG, int TT>
  TESSERA_AVX2 void operator()(std::integral_constant<int, RG>, std::integral_constant<int, TT>, int64_t g,
                               const TokenBlock<TT>& tk) const {
    const __m256i nibble = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8(-128);
    const __m256i table = _mm256_load_si256(reinterpret_cast<const __m256i*>(w.table()));
    const __m256i* wd[RG];
    for (int r = 0; r < RG; ++r) wd[r] = reinterpret_cast<const __m256i*>(w.group_data(g + r));
    __m256 acc[RG][2][TT];
    for (int r = 0; r < RG; ++r)
      for (int h = 0; h < 2; ++h)
        for (int t = 0; t < TT; ++t) acc[r][h][t] = _mm256_setzero_ps();
    const int64_t blocks = w.blocks();
    for (int64_t b = 0; b < blocks; ++b) {
      __m256 part[RG][2][TT];
      __m256i dsum[RG][2][TT];  // Whole: the block's int32 sums
#pragma GCC unroll 4
      for (int kk = 0; kk < PB; ++kk) {
        const int64_t k = b * PB + kk;
        __m256i w0[RG][2], w1[RG][2];
        // Each row group's weights are one sequential stream: fetch every
        // line of it a few kilobytes ahead (decode reads them from memory).
        for (int r = 0; r < RG; ++r) {
          const char* line = reinterpret_cast<const char*>(wd[r] + 2 * ((B4 ? Fm::nibble_vector(k) : 2 * k) + kPrefetchVectors));
          _mm_prefetch(line, _MM_HINT_T0);
          if (!B4) _mm_prefetch(line + 64, _MM_HINT_T0);
          if (Fm::HB > 0 && kk % Fm::Unit == 0)
            _mm_prefetch(reinterpret_cast<const char*>(wd[r] + 2 * (Fm::plane_vector(k) + kPrefetchVectors)), _MM_HINT_T0);
        }
        for (int r = 0; r < RG; ++r)
          for (int h = 0; h < 2; ++h) {
            if constexpr (B4) {
              const __m256i v = _mm256_load_si256(wd[r] + 2 * Fm::nibble_vector(k) + h);
              w0[r][h] = _mm256_and_si256(v, nibble);
              w1[r][h] = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
              if constexpr (Fm::HB > 0) {
                const __m256i plane = _mm256_load_si256(wd[r] + 2 * Fm::plane_vector(k) + h);
                w0[r][h] = _mm256_or_si256(w0[r][h], plane_bits<Fm::HB>(plane, Fm::plane_shift(kk, 0)));
                w1[r][h] = _mm256_or_si256(w1[r][h], plane_bits<Fm::HB>(plane, Fm::plane_shift(kk, 1)));
              }
              if constexpr (Lookup) {
                w0[r][h] = _mm256_shuffle_epi8(table, w0[r][h]);
                w1[r][h] = _mm256_shuffle_epi8(table, w1[r][h]);
              }
            } else {
              w0[r][h] = _mm256_load_si256(wd[r] + 4 * k + h);
              w1[r][h] = _mm256_load_si256(wd[r] + 4 * k + 2 + h);
            }
            if constexpr (D == Dot::Signed) {
              w0[r][h] = _mm256_xor_si256(w0[r][h], flip);  // v = u − 128 as a signed byte
              w1[r][h] = _mm256_xor_si256(w1[r][h], flip);
            }
          }
        for (int t = 0; t < TT; ++t) {
          const __m256i a0 = _mm256_set1_epi32(tk.q4[t][2 * k]), a1 = _mm256_set1_epi32(tk.q4[t][2 * k + 1]);
          const int64_t seg = Whole ? b : k;
          const __m256i start = D == Dot::Signed || (Whole && kk > 0) ? _mm256_setzero_si256()
                                                                        : _mm256_set1_epi32(tk.start[t][seg]);
          const __m256 s = _mm256_set1_ps(tk.s[t][seg]);
          for (int r = 0; r < RG; ++r)
            for (int h = 0; h < 2; ++h) {
              __m256i d;
              if constexpr (D == Dot::Signed) {
                const __m256i p0 = _mm256_maddubs_epi16(_mm256_abs_epi8(w0[r][h]), _mm256_sign_epi8(a0, w0[r][h]));
                const __m256i p1 = _mm256_maddubs_epi16(_mm256_abs_epi8(w1[r][h]), _mm256_sign_epi8(a1, w1[r][h]));
                d = _mm256_add_epi32(_mm256_madd_epi16(p0, ones), _mm256_madd_epi16(p1, ones));
              } else if constexpr (D == Dot::SmallPairs) {
                const __m256i p =
                    _mm256_add_epi16(_mm256_maddubs_epi16(w0[r][h], a0), _mm256_maddubs_epi16(w1[r][h], a1));
                d = _mm256_add_epi32(start, _mm256_madd_epi16(p, ones));
              } else {
                d = _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(w0[r][h], a0), ones),
                                     _mm256_madd_epi16(_mm256_maddubs_epi16(w1[r][h], a1), ones));
                d = _mm256_add_epi32(start, d);
              }
              if constexpr (Whole) {
                dsum[r][h][t] = kk == 0 ? d : _mm256_add_epi32(dsum[r][h][t], d);
                if (kk == PB - 1) part[r][h][t] = _mm256_mul_ps(_mm256_cvtepi32_ps(dsum[r][h][t]), s);
              } else {
                const __m256 f = _mm256_cvtepi32_ps(d);
                part[r][h][t] = kk == 0 ? _mm256_mul_ps(f, s) : _mm256_fmadd_ps(f, s, part[r][h][t]);
              }
            }
        }
      }
      for (int r = 0; r < RG; ++r)
        for (int h = 0; h < 2; ++h) {
          const __m256 ws =
              load8<Fm>(w.group_scales(g + r, b), Fm::Super ? w.group_scale_multipliers(g + r, b) : nullptr, h);
          for (int t = 0; t < TT; ++t) acc[r][h][t] = _mm256_fmadd_ps(ws, part[r][h][t], acc[r][h][t]);
          if constexpr (Off) {
            const __m256 wo =
                load8<Fm>(w.group_offsets(g + r, b), Fm::Super ? w.group_offset_multipliers(g + r, b) : nullptr, h);
            for (int t = 0; t < TT; ++t)
              acc[r][h][t] = _mm256_fmadd_ps(wo, _mm256_set1_ps(tk.u[t][b]), acc[r][h][t]);
          }
        }
    }
    for (int r = 0; r < RG; ++r) {
      const int64_t n0 = (g + r) * kInterleavedRows;
      const int64_t valid = std::min<int64_t>(kInterleavedRows, w.rows() - n0);
      for (int t = 0; t < TT; ++t) {
        alignas(32) float out[16];
        _mm256_store_ps(out, acc[r][0][t]);
        _mm256_store_ps(out + 8, acc[r][1][t]);
        float* yr = tk.y[t] + n0;
        for (int64_t i = 0; i < valid; ++i) yr[i] = bias ? out[i] + bias[n0 + i] : out[i];
      }
    }
  }
};

// Whether every u ≤ 64 (pairs of the two vectors may add in int16).
bool u_within_64(const InterleavedWeights& w) {
  if (w.code_bits() == 5 || w.code_bits() == 6) return true;  // u is the code: ≤ 63
  if (w.code_bits() != 4) return false;
  for (int i = 0; i < 16; ++i)
    if (w.table()[i] > 64) return false;
  return true;
}

}  // namespace

void interleaved_linear_avx2(const InterleavedWeights& w, const Int8Activations& acts, const float* bias,
                             int64_t g_begin, int64_t g_end, float* y, int64_t ldy) {
  with_form(w, [&](auto form) {
    using Fm = decltype(form);
    auto go = [&](auto tile) { interleaved_walk<4, 4, 2>(w, acts, g_begin, g_end, y, ldy, tile); };
    auto dot = [&](auto whole) {
      constexpr bool W = decltype(whole)::value;
      if constexpr (Fm::SmallCodes) go(Tile<Fm, Dot::SmallPairs, W>{w, bias});
      else if (!w.small_unsigned()) go(Tile<Fm, Dot::Signed, W>{w, bias});
      else if (u_within_64(w)) go(Tile<Fm, Dot::SmallPairs, W>{w, bias});
      else go(Tile<Fm, Dot::Small, W>{w, bias});
    };
    if (whole_block_segments(w, acts)) dot(std::true_type{});
    else dot(std::false_type{});
  });
}

}  // namespace tessera::kernels
