#include "kernels/refine_scan.h"

#include <algorithm>
#include <cmath>
#include <limits>

// GCC 12 warns that the intrinsics headers' _mm512_undefined_* operands "may
// be used uninitialized" inside the widening converts; they are don't-care inputs.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#if TESSERA_X86
#include <immintrin.h>
#endif

namespace tessera::kernels {

namespace {

double min_of(double a, double b) { return a < b ? a : b; }  // as _mm*_min_pd(a, b)
double max_of(double running, double v) { return running < v ? v : running; }  // as _mm*_max_pd(v, running)

struct OutputBounds {
  double b1, b2;
};

OutputBounds output_bounds(float s, float norm, const RefineMargins& g) {
  const double w = 127.0 * std::fabs(static_cast<double>(s)), nn = static_cast<double>(norm);
  return {min_of(w * g.e1, nn * g.q1) + w * g.rho, min_of(w * g.e2, nn * g.q2) + w * g.rho};
}

RefineBounds bounds_from(const float* y, const float* scale, const float* norm, int64_t from, int64_t n,
                         const RefineMargins& g, RefineBounds r) {
  for (int64_t m = from; m < n; ++m) {
    const OutputBounds b = output_bounds(scale[m], norm[m], g);
    r.best_lower = max_of(r.best_lower, static_cast<double>(y[m]) - b.b1);
    r.b2_max = max_of(r.b2_max, b.b2);
  }
  return r;
}

// The vector code's running maxima, `lanes` of each, folded into one
// RefineBounds with the scalar tail [from, n) (max is exact in any order).
RefineBounds finish_bounds(const double* lower, const double* b2, int lanes, const float* y, const float* scale,
                           const float* norm, int64_t from, int64_t n, const RefineMargins& g) {
  RefineBounds r{-std::numeric_limits<double>::infinity(), 0.0};
  for (int j = 0; j < lanes; ++j) {
    r.best_lower = max_of(r.best_lower, lower[j]);
    r.b2_max = max_of(r.b2_max, b2[j]);
  }
  return bounds_from(y, scale, norm, from, n, g, r);
}

// Candidates among outputs [from, n), from a multiple of 4.
void candidates_from(const float* y, const float* scale, const float* norm, int64_t from, int64_t n,
                     const RefineMargins& g, const RefineBounds& bounds, std::vector<int64_t>& blocks) {
  for (int64_t b0 = from; b0 < n; b0 += 4) {
    bool any = false;
    for (int64_t m = b0; m < std::min(n, b0 + 4); ++m) any |= refine_is_candidate(y[m], scale[m], norm[m], g, bounds);
    if (any) blocks.push_back(b0 / 4);
  }
}

#if TESSERA_X86
// output_bounds of 8 outputs (AVX-512) or 4 (AVX2) at once.
struct Margins512 {
  __m512d e1, e2, q1, q2, rho;
};
struct Bounds512 {
  __m512d b1, b2;
};

__attribute__((target("avx512f"))) inline __m512d load8(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }

__attribute__((target("avx512f"))) inline Margins512 margins512(const RefineMargins& g) {
  return {_mm512_set1_pd(g.e1), _mm512_set1_pd(g.e2), _mm512_set1_pd(g.q1), _mm512_set1_pd(g.q2),
          _mm512_set1_pd(g.rho)};
}

__attribute__((target("avx512f"))) inline Bounds512 output_bounds8(const float* scale, const float* norm,
                                                                    const Margins512& g) {
  const __m512d w = _mm512_mul_pd(_mm512_set1_pd(127.0), _mm512_abs_pd(load8(scale))), nn = load8(norm);
  const __m512d wrho = _mm512_mul_pd(w, g.rho);
  return {_mm512_add_pd(_mm512_min_pd(_mm512_mul_pd(w, g.e1), _mm512_mul_pd(nn, g.q1)), wrho),
          _mm512_add_pd(_mm512_min_pd(_mm512_mul_pd(w, g.e2), _mm512_mul_pd(nn, g.q2)), wrho)};
}

__attribute__((target("avx512f"))) RefineBounds refine_bounds_avx512(const float* y, const float* scale,
                                                                      const float* norm, int64_t n,
                                                                      const RefineMargins& g) {
  const Margins512 g8 = margins512(g);
  const __m512d none = _mm512_set1_pd(-std::numeric_limits<double>::infinity());
  __m512d lower[2] = {none, none}, b2max[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()};
  int64_t m = 0;
  for (; m + 16 <= n; m += 16) {  // two independent chains of maxima
    for (int h = 0; h < 2; ++h) {
      const Bounds512 b = output_bounds8(scale + m + 8 * h, norm + m + 8 * h, g8);
      lower[h] = _mm512_max_pd(_mm512_sub_pd(load8(y + m + 8 * h), b.b1), lower[h]);
      b2max[h] = _mm512_max_pd(b.b2, b2max[h]);
    }
  }
  alignas(64) double l[16], b[16];
  _mm512_store_pd(l, lower[0]);
  _mm512_store_pd(l + 8, lower[1]);
  _mm512_store_pd(b, b2max[0]);
  _mm512_store_pd(b + 8, b2max[1]);
  return finish_bounds(l, b, 16, y, scale, norm, m, n, g);
}

__attribute__((target("avx512f"))) void refine_candidates_avx512(const float* y, const float* scale,
                                                                 const float* norm, int64_t n, const RefineMargins& g,
                                                                 const RefineBounds& bounds,
                                                                 std::vector<int64_t>& blocks) {
  const Margins512 g8 = margins512(g);
  const __m512d b2max = _mm512_set1_pd(bounds.b2_max), lower = _mm512_set1_pd(bounds.best_lower);
  int64_t m = 0;
  for (; m + 8 <= n; m += 8) {  // two blocks per vector
    const Bounds512 b = output_bounds8(scale + m, norm + m, g8);
    const __m512d v = _mm512_add_pd(_mm512_add_pd(_mm512_add_pd(load8(y + m), b.b1), b.b2), b2max);
    const unsigned hits = _mm512_cmp_pd_mask(v, lower, _CMP_GE_OQ);
    if (hits == 0) continue;  // the common case
    if (hits & 0x0f) blocks.push_back(m / 4);
    if (hits & 0xf0) blocks.push_back(m / 4 + 1);
  }
  candidates_from(y, scale, norm, m, n, g, bounds, blocks);
}

struct Margins256 {
  __m256d e1, e2, q1, q2, rho;
};
struct Bounds256 {
  __m256d b1, b2;
};

__attribute__((target("avx2"))) inline __m256d load4(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }

__attribute__((target("avx2"))) inline Margins256 margins256(const RefineMargins& g) {
  return {_mm256_set1_pd(g.e1), _mm256_set1_pd(g.e2), _mm256_set1_pd(g.q1), _mm256_set1_pd(g.q2),
          _mm256_set1_pd(g.rho)};
}

__attribute__((target("avx2"))) inline Bounds256 output_bounds4(const float* scale, const float* norm,
                                                                 const Margins256& g) {
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
  const __m256d w = _mm256_mul_pd(_mm256_set1_pd(127.0), _mm256_and_pd(load4(scale), abs_mask)), nn = load4(norm);
  const __m256d wrho = _mm256_mul_pd(w, g.rho);
  return {_mm256_add_pd(_mm256_min_pd(_mm256_mul_pd(w, g.e1), _mm256_mul_pd(nn, g.q1)), wrho),
          _mm256_add_pd(_mm256_min_pd(_mm256_mul_pd(w, g.e2), _mm256_mul_pd(nn, g.q2)), wrho)};
}

__attribute__((target("avx2"))) RefineBounds refine_bounds_avx2(const float* y, const float* scale, const float* norm,
                                                                 int64_t n, const RefineMargins& g) {
  const Margins256 g4 = margins256(g);
  const __m256d none = _mm256_set1_pd(-std::numeric_limits<double>::infinity());
  __m256d lower[2] = {none, none}, b2max[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
  int64_t m = 0;
  for (; m + 8 <= n; m += 8) {
    for (int h = 0; h < 2; ++h) {
      const Bounds256 b = output_bounds4(scale + m + 4 * h, norm + m + 4 * h, g4);
      lower[h] = _mm256_max_pd(_mm256_sub_pd(load4(y + m + 4 * h), b.b1), lower[h]);
      b2max[h] = _mm256_max_pd(b.b2, b2max[h]);
    }
  }
  alignas(32) double l[8], b[8];
  _mm256_store_pd(l, lower[0]);
  _mm256_store_pd(l + 4, lower[1]);
  _mm256_store_pd(b, b2max[0]);
  _mm256_store_pd(b + 4, b2max[1]);
  return finish_bounds(l, b, 8, y, scale, norm, m, n, g);
}

__attribute__((target("avx2"))) void refine_candidates_avx2(const float* y, const float* scale, const float* norm,
                                                             int64_t n, const RefineMargins& g,
                                                             const RefineBounds& bounds, std::vector<int64_t>& blocks) {
  const Margins256 g4 = margins256(g);
  const __m256d b2max = _mm256_set1_pd(bounds.b2_max), lower = _mm256_set1_pd(bounds.best_lower);
  int64_t m = 0;
  for (; m + 4 <= n; m += 4) {  // one block per vector
    const Bounds256 b = output_bounds4(scale + m, norm + m, g4);
    const __m256d v = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(load4(y + m), b.b1), b.b2), b2max);
    if (_mm256_movemask_pd(_mm256_cmp_pd(v, lower, _CMP_GE_OQ)) != 0) blocks.push_back(m / 4);
  }
  candidates_from(y, scale, norm, m, n, g, bounds, blocks);
}
#endif  // TESSERA_X86

}  // namespace

bool refine_is_candidate(float y, float scale, float norm, const RefineMargins& g, const RefineBounds& bounds) {
  const OutputBounds b = output_bounds(scale, norm, g);
  return static_cast<double>(y) + b.b1 + b.b2 + bounds.b2_max >= bounds.best_lower;
}

RefineBounds refine_bounds_scalar(const float* y, const float* scale, const float* norm, int64_t n,
                                  const RefineMargins& g) {
  return bounds_from(y, scale, norm, 0, n, g, {-std::numeric_limits<double>::infinity(), 0.0});
}

void refine_candidates_scalar(const float* y, const float* scale, const float* norm, int64_t n,
                              const RefineMargins& g, const RefineBounds& bounds, std::vector<int64_t>& blocks) {
  candidates_from(y, scale, norm, 0, n, g, bounds, blocks);
}

RefineBounds refine_bounds(Isa isa, const float* y, const float* scale, const float* norm, int64_t n,
                           const RefineMargins& g) {
  switch (isa) {
#if TESSERA_X86
    case Isa::Avx512:
    case Isa::Amx: return refine_bounds_avx512(y, scale, norm, n, g);
    case Isa::Avx2: return refine_bounds_avx2(y, scale, norm, n, g);
#endif
    default: return refine_bounds_scalar(y, scale, norm, n, g);
  }
}

void refine_candidates(Isa isa, const float* y, const float* scale, const float* norm, int64_t n,
                       const RefineMargins& g, const RefineBounds& bounds, std::vector<int64_t>& blocks) {
  switch (isa) {
#if TESSERA_X86
    case Isa::Avx512:
    case Isa::Amx: return refine_candidates_avx512(y, scale, norm, n, g, bounds, blocks);
    case Isa::Avx2: return refine_candidates_avx2(y, scale, norm, n, g, bounds, blocks);
#endif
    default: return refine_candidates_scalar(y, scale, norm, n, g, bounds, blocks);
  }
}

}  // namespace tessera::kernels
