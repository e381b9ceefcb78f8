// AMX bf16 tile GEMM for batched prefill; contract in kernels/qlinear_amx.h.
//
// Tiles (all 16 rows × 64 bytes): C0..C3 = tmm0..3 (f32 [16 features][16
// tokens]), A0/A1 = tmm4/5 (bf16 weights, features 0-15 / 16-31 of the
// panel, 32 columns), B0/B1 = tmm6/7 (bf16 activation pairs, token blocks
// b / b+1). Per 32-column step: 4 tile loads, 4 TDPBF16PS.
//
// The tile instructions are written as inline asm with a "memory" clobber
// rather than GCC's _tile_* macros, which pass only addresses: the compiler
// could then drop or move the stores that fill the panel or the tile
// configuration (GCC 12 does drop the configuration's stores in some builds,
// which kills the process with SIGILL at the first tile instruction).
// GCC 12 warns that the intrinsics headers' _mm512_undefined_* operands (in
// the widening and conversion intrinsics) are used uninitialized; they are
// don't-care inputs.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "kernels/qlinear_amx.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "kernels/lut_unpack_avx512.h"
#include "kernels/transpose16_avx512.h"

#define TESSERA_AMX_HOST __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vbmi")))

#define TILE_LOAD(tmm, base, stride) \
  asm volatile("tileloadd (%0,%1,1), %%tmm" #tmm ::"r"(base), "r"(static_cast<long>(stride)) : "memory")
#define TILE_STORE(tmm, base, stride) \
  asm volatile("tilestored %%tmm" #tmm ", (%0,%1,1)" ::"r"(base), "r"(static_cast<long>(stride)) : "memory")
#define TILE_ZERO(tmm) asm volatile("tilezero %%tmm" #tmm ::)
// C += A · B (AT&T operand order: B, A, C).
#define TILE_DPBF16PS(c, a, b) asm volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)

namespace tessera::kernels {

namespace {

constexpr int64_t kPanelRows = 32;  // weight rows expanded per pass (two A tiles)

// The 64-byte tile configuration (palette 1): every tile 16 rows × 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

void load_tile_config() {
  TileConfig cfg;
  for (int i = 0; i < 8; ++i) {
    cfg.colsb[i] = 64;
    cfg.rows[i] = 16;
  }
  asm volatile("ldtilecfg %0" ::"m"(cfg) : "memory");
}

// 32 int8 weights (v, sign-extended to 32-bit lanes in two halves) as bf16,
// exactly (|w| <= 127).
TESSERA_AMX_HOST inline void store_bf16_32(__m128i lo16, __m128i hi16, uint16_t* dst) {
  const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo16));
  const __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi16));
  _mm512_storeu_si512(dst, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
}

// Row n of w as bf16 values. lut4, 32 columns per step: 16 packed bytes are
// widened to 32-bit lanes, each lane's two nibbles become the word indices
// (low nibble → even column in the low half, high nibble → odd column) into
// a 16-entry bf16 palette held in one register (vpermw). lut3 / lut2, 64
// columns per step: unpacked into int8 weights (kernels/lut_unpack_avx512.h),
// then widened as int8 rows are.
TESSERA_AMX_HOST void expand_row(const QLinearWeights& w, int64_t n, uint16_t* dst) {
  const int64_t cols = w.cols();
  const uint8_t* row = w.row(n);
  if (w.format() == WeightFormat::Lut4) {
    alignas(64) uint16_t tbl[32];
    for (int i = 0; i < 32; ++i) tbl[i] = bf16_bits(static_cast<float>(w.table(n)[i % 16]));
    const __m512i palette = _mm512_load_si512(tbl);
    const __m512i low = _mm512_set1_epi32(0x0f);
    const __m512i high = _mm512_set1_epi32(0xf0);
    for (int64_t c = 0; c < cols; c += 32) {
      const __m512i d = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c / 2)));
      const __m512i idx =
          _mm512_or_si512(_mm512_and_si512(d, low), _mm512_slli_epi32(_mm512_and_si512(d, high), 12));
      _mm512_storeu_si512(dst + c, _mm512_permutexvar_epi16(idx, palette));
    }
    return;
  }
  if (w.bits() == 3 || w.bits() == 2) {
    const __m512i table = _mm512_loadu_si512(w.table(n));
    for (int64_t c = 0; c < cols; c += 64) {
      const uint8_t* p = row + c / 8 * w.bits();
      const __m512i v = w.bits() == 3 ? unpack_lut64<3>(p, table) : unpack_lut64<2>(p, table);
      store_bf16_32(_mm512_castsi512_si128(v), _mm512_extracti32x4_epi32(v, 1), dst + c);
      store_bf16_32(_mm512_extracti32x4_epi32(v, 2), _mm512_extracti32x4_epi32(v, 3), dst + c + 32);
    }
    return;
  }
  for (int64_t c = 0; c < cols; c += 32)
    store_bf16_32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c)),
                  _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c + 16)), dst + c);
}

// One weight panel (kPanelRows rows, bf16, row stride cols) against every
// token block pair of the call.
TESSERA_AMX_HOST void panel_times_tokens(const QLinearWeights& w, const uint16_t* panel, const Bf16Activations& a,
                                         const float* bias, int64_t n0, int64_t n1, float* y, int64_t ldy) {
  const int64_t cols = w.cols(), steps = cols / 32, stride = cols * 2;
  const uint16_t* a0 = panel;
  const uint16_t* a1 = panel + 16 * cols;
  alignas(64) float c[4][16][16];
  for (int64_t b = 0; b < a.blocks; b += 2) {
    const uint32_t* b0 = a.block(b);
    const uint32_t* b1 = a.block(b + 1);
    TILE_ZERO(0);
    TILE_ZERO(1);
    TILE_ZERO(2);
    TILE_ZERO(3);
    for (int64_t s = 0; s < steps; ++s) {
      TILE_LOAD(4, a0 + 32 * s, stride);
      TILE_LOAD(5, a1 + 32 * s, stride);
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
  thread_local std::vector<uint16_t> panel;
  if (panel.size() < static_cast<size_t>(kPanelRows * cols)) panel.resize(static_cast<size_t>(kPanelRows * cols));
  load_tile_config();
  for (int64_t n0 = n_begin; n0 < n_end; n0 += kPanelRows) {
    const int64_t n1 = std::min(n_end, n0 + kPanelRows);
    for (int64_t n = n0; n < n1; ++n) expand_row(w, n, panel.data() + (n - n0) * cols);
    // Rows past the range multiply as zeros and are not written.
    std::fill(panel.begin() + (n1 - n0) * cols, panel.begin() + kPanelRows * cols, uint16_t{0});
    panel_times_tokens(w, panel.data(), acts, bias, n0, n1, y, ldy);
  }
  asm volatile("tilerelease" ::: "memory");
}

}  // namespace tessera::kernels
