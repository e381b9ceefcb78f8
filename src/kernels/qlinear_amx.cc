// AMX bf16 tile GEMM for batched prefill; contract in kernels/qlinear_amx.h.
//
// Tiles (all 16 rows × 64 bytes): C0..C3 = tmm0..3 (f32 [16 features][16
// tokens]), A0/A1 = tmm4/5 (bf16 weights, features 0-15 / 16-31 of the
// panel, 32 columns), B0/B1 = tmm6/7 (bf16 activation pairs, token blocks
// b / b+1). Per 32-column step: 4 tile loads, 4 TDPBF16PS.
//
// The tile instructions: kernels/amx_tiles.h.
// GCC 12 warns that the intrinsics headers' _mm512_undefined_* operands (in
// the widening and conversion intrinsics) are used uninitialized; they are
// don't-care inputs.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "core/aligned_vector.h"
#include "kernels/qlinear_amx.h"

#include "core/error.h"

#if !TESSERA_X86
namespace tessera::kernels {
void qlinear_amx(const QLinearWeights&, const Bf16Activations&, const float*, int64_t, int64_t, float*, int64_t) {
  fail("options", "isa", "the AMX kernel is not compiled into this build (best here: {})", isa_name(detected_isa()));
}
}  // namespace tessera::kernels
#else
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <vector>

#include "core/error.h"
#include "kernels/amx_tiles.h"
#include "kernels/lut_unpack_avx512.h"
#include "kernels/transpose16_avx512.h"

#define TESSERA_AMX_HOST __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vbmi")))

namespace tessera::kernels {

namespace {

constexpr int64_t kPanelRows = 32;  // weight rows expanded per pass (two A tiles)

// Every tile 16 rows × 64 bytes.
void load_tile_config() {
  TileConfig cfg;
  for (int i = 0; i < 8; ++i) cfg.set(i, 16, 64);
  cfg.load();
}

// 32 int8 weights (lo16: the first 16, hi16: the next 16) stored as bf16,
// exactly (|w| <= 127).
TESSERA_AMX_HOST inline void store_bf16_32(__m128i lo16, __m128i hi16, uint16_t* dst) {
  const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo16));
  const __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi16));
  _mm512_storeu_si512(dst, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
}

// The row's 16 palette entries (int8, exact in bf16) as bf16, twice: a
// 32-word vpermw table that ignores bit 4 of its indices.
TESSERA_AMX_HOST inline __m512i bf16_palette(const int8_t* table) {
  const __m512 entries = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table))));
  const __m256i words = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(entries));
  return _mm512_inserti64x4(_mm512_castsi256_si512(words), words, 1);
}

// Word w of the two interleaved halves: column 2b comes from the low-nibble
// lookup's word b, column 2b+1 from the high-nibble lookup's (index + 32).
constexpr std::array<uint16_t, 64> interleave_indices() {
  std::array<uint16_t, 64> idx{};
  for (int w = 0; w < 64; ++w) idx[w] = static_cast<uint16_t>(w / 2 + (w % 2 ? 32 : 0));
  return idx;
}
alignas(64) constexpr std::array<uint16_t, 64> kInterleave = interleave_indices();

// Row n of w as bf16 values. lut4, 64 columns per step: the 32 packed bytes
// are widened to words; vpermw looks the low nibble up in the bf16 palette
// (bits 4-7 of the word: bit 4 selects the same entry, bits 5+ are
// ignored), and again after a shift by 4 for the high nibble; two two-source
// word permutes interleave them back into column order. lut3 / lut2, 64
// columns per step: unpacked into int8 weights (kernels/lut_unpack_avx512.h),
// then widened as int8 rows are.
TESSERA_AMX_HOST void expand_row(const QLinearWeights& w, int64_t n, uint16_t* dst, int64_t chunk_stride) {
  // Columns 32k .. 32k+31 go to dst + k·chunk_stride.
  auto at = [&](int64_t c) { return dst + c / 32 * chunk_stride; };
  const int64_t cols = w.cols();
  const uint8_t* row = w.row(n);
  if (w.format() == WeightFormat::Lut4) {
    const __m512i palette = bf16_palette(w.table(n));
    const __m512i even_odd0 = _mm512_load_si512(kInterleave.data());
    const __m512i even_odd1 = _mm512_load_si512(kInterleave.data() + 32);
    for (int64_t c = 0; c < cols; c += 64) {
      const __m512i bytes = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + c / 2)));
      const __m512i lo = _mm512_permutexvar_epi16(bytes, palette);
      const __m512i hi = _mm512_permutexvar_epi16(_mm512_srli_epi16(bytes, 4), palette);
      _mm512_storeu_si512(at(c), _mm512_permutex2var_epi16(lo, even_odd0, hi));
      _mm512_storeu_si512(at(c + 32), _mm512_permutex2var_epi16(lo, even_odd1, hi));
    }
    return;
  }
  if (w.bits() == 3 || w.bits() == 2) {
    const __m512i table = _mm512_loadu_si512(w.table(n));
    for (int64_t c = 0; c < cols; c += 64) {
      const uint8_t* p = row + c / 8 * w.bits();
      const __m512i v = w.bits() == 3 ? unpack_lut64<3>(p, table) : unpack_lut64<2>(p, table);
      store_bf16_32(_mm512_castsi512_si128(v), _mm512_extracti32x4_epi32(v, 1), at(c));
      store_bf16_32(_mm512_extracti32x4_epi32(v, 2), _mm512_extracti32x4_epi32(v, 3), at(c + 32));
    }
    return;
  }
  for (int64_t c = 0; c < cols; c += 32)
    store_bf16_32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c)),
                  _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c + 16)), at(c));
}

// One weight panel (kPanelRows rows, bf16, tile-major: see qlinear_amx)
// against every token block pair of the call.
TESSERA_AMX_HOST void panel_times_tokens(const QLinearWeights& w, const uint16_t* panel, const Bf16Activations& a,
                                         const float* bias, int64_t n0, int64_t n1, float* y, int64_t ldy) {
  const int64_t steps = w.cols() / 32;
  alignas(64) float c[4][16][16];
  for (int64_t b = 0; b < a.blocks; b += 2) {
    const uint32_t* b0 = a.block(b);
    const uint32_t* b1 = a.block(b + 1);
    TILE_ZERO(0);
    TILE_ZERO(1);
    TILE_ZERO(2);
    TILE_ZERO(3);
    for (int64_t s = 0; s < steps; ++s) {
      TILE_LOAD(4, panel + kPanelRows * 32 * s, 64);
      TILE_LOAD(5, panel + kPanelRows * 32 * s + 16 * 32, 64);
      TILE_LOAD(6, b0 + 256 * s, 64);
      TILE_LOAD(7, b1 + 256 * s, 64);
      TILE_DPBF16PS(0, 4, 6);
      TILE_DPBF16PS(1, 4, 7);
      TILE_DPBF16PS(2, 5, 6);
      TILE_DPBF16PS(3, 5, 7);
    }
    TILE_STORE(0, &c[0][0][0], 64);
    TILE_STORE(1, &c[1][0][0], 64);
    TILE_STORE(2, &c[2][0][0], 64);
    TILE_STORE(3, &c[3][0][0], 64);
    // c[2i + j][r][k]: feature n0 + 16i + r, token 16(b + j) + k; transposed
    // so each token's 16 features are one vector.
    for (int i = 0; i < 2; ++i) {
      const int64_t nb = n0 + 16 * i;
      if (nb >= n1) break;
      const __mmask16 live = static_cast<__mmask16>((1u << std::min<int64_t>(16, n1 - nb)) - 1u);
      const __m512 scale = _mm512_maskz_loadu_ps(live, w.out_scale_data() + nb);
      const __m512 add = bias ? _mm512_maskz_loadu_ps(live, bias + nb) : _mm512_setzero_ps();
      for (int j = 0; j < 2; ++j) {
        __m512 v[16];
        for (int r = 0; r < 16; ++r) v[r] = _mm512_load_ps(&c[2 * i + j][r][0]);
        transpose16(v);
        for (int64_t k = 0; k < kTileTokens; ++k) {
          const int64_t t = (b + j) * kTileTokens + k;
          if (t >= a.rows) break;
          const __m512 o = _mm512_mul_ps(v[k], scale);  // qlinear_output: product, then bias
          _mm512_mask_storeu_ps(y + t * ldy + nb, live, bias ? _mm512_add_ps(o, add) : o);
        }
      }
    }
  }
}

}  // namespace

void qlinear_amx(const QLinearWeights& w, const Bf16Activations& acts, const float* bias, int64_t n_begin,
                 int64_t n_end, float* y, int64_t ldy) {
  if (!isa_supported(Isa::Amx)) fail("options", "isa", "the AMX kernel needs amx (best here: {})", isa_name(detected_isa()));
  if (acts.cols != w.cols())
    fail("", "qlinear", "activations ({} columns) do not match the weight ({} columns)", acts.cols, w.cols());
  if (n_begin >= n_end || acts.rows == 0) return;
  const int64_t cols = w.cols();
  thread_local AlignedVector<uint16_t> panel;
  if (panel.size() < static_cast<size_t>(kPanelRows * cols)) panel.resize(static_cast<size_t>(kPanelRows * cols));
  load_tile_config();
  // The panel is tile-major: the 32 rows' columns 32s .. 32s+31 are one
  // contiguous 2 KB block (A0 then A1), so each tile load reads 1 KB in
  // order, whatever the row length (rows `cols` apart made tile loads of
  // 1536-column weights hit 4 L1 sets).
  const int64_t chunk_stride = kPanelRows * 32;
  for (int64_t n0 = n_begin; n0 < n_end; n0 += kPanelRows) {
    const int64_t n1 = std::min(n_end, n0 + kPanelRows);
    for (int64_t n = n0; n < n1; ++n) expand_row(w, n, panel.data() + (n - n0) * 32, chunk_stride);
    // Rows past the range multiply as zeros and are not written.
    if (n1 - n0 < kPanelRows)
      for (int64_t s = 0; s < cols / 32; ++s)
        std::fill(panel.begin() + s * chunk_stride + (n1 - n0) * 32, panel.begin() + (s + 1) * chunk_stride, uint16_t{0});
    panel_times_tokens(w, panel.data(), acts, bias, n0, n1, y, ldy);
  }
  TILE_RELEASE();
}

}  // namespace tessera::kernels
#endif  // TESSERA_X86
