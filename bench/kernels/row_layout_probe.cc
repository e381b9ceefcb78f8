// Many tokens per weight read: what the weight layout costs a blk8 linear at
// one int8 activation pass (the fast level), on this CPU, without the runtime.
//
// Both variants compute, per output row n and token t,
//   y[t, n] = Σ_blocks ws[n, b] · Σ_{8-column groups k of b} s[t, k] · (exact int32 Σ w·q over the 8 columns)
// on the same random data (blk8: 32-column weight blocks with an f32 scale;
// activations int8 with a scale per 8 columns), everything in L1 / L2.
//
//   horizontal  today's kernels (kernels/qlinear_avx512.cc, the buffered
//               walk of blocked_rows_all_tokens at one pass): a row's 64
//               columns per vpdpbusd into 16 lanes of 4 columns, then per
//               lane a convert, a multiply by the activation scale and an FMA
//               with the block scale; 8 rows in flight; the rows' lanes
//               reduced at the end. Its buffer (weights biased +128, block
//               scales spread over lanes) is formed once here, before timing:
//               a lower bound on the kernel's cost.
//   vertical    weights repacked 16 rows x 4 columns per 64 bytes, so each
//               int32 lane is one output row: per 8 columns 2 vpdpbusd
//               against the token's 4 activation bytes broadcast, a convert
//               and an FMA with the (broadcast) activation scale, per 32
//               columns one FMA with the 16 rows' block scales; TT tokens
//               share each weight vector; no lane reduction.
// Multiply-adds per second (T · rows · cols / time), one thread, for T = 1,
// 4, 8 and 32 tokens, and the two variants' largest difference from a double
// evaluation (they differ from each other only in f32 rounding order).
//
//   g++ -O2 -std=c++20 -o /tmp/row_layout_probe bench/kernels/row_layout_probe.cc && /tmp/row_layout_probe
// GCC 12 warns that the intrinsics headers' _mm512_undefined_* operands "may
// be used uninitialized"; they are don't-care inputs.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#define PROBE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))

namespace {

constexpr int kRows = 2048, kCols = 640;  // Gemma 3 270M's gate / up projections
constexpr int kBlock = 32, kGroup = 8;    // weight block, activation scale group

// Vectors kept in std::vector: wrapped, so the allocator honours their alignment.
struct alignas(64) Zi {
  __m512i v;
};
struct alignas(64) Zf {
  __m512 v;
};

struct Problem {
  int tokens;
  std::vector<int8_t> w;    // [rows][cols]
  std::vector<float> ws;    // [rows][cols / 32]
  std::vector<int8_t> q;    // [tokens][cols]
  std::vector<float> s;     // [tokens][cols / 8]
  std::vector<int32_t> qsum;  // [tokens][cols / 8]: Σ q of the group (for the +128 bias)
};

Problem make_problem(int tokens) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(-127, 127);
  std::uniform_real_distribution<float> scale(0.001f, 0.01f);
  Problem p{tokens, {}, {}, {}, {}, {}};
  p.w.resize(size_t(kRows) * kCols);
  for (auto& v : p.w) v = static_cast<int8_t>(byte(rng));
  p.ws.resize(size_t(kRows) * kCols / kBlock);
  for (auto& v : p.ws) v = scale(rng);
  p.q.resize(size_t(tokens) * kCols);
  for (auto& v : p.q) v = static_cast<int8_t>(byte(rng));
  p.s.resize(size_t(tokens) * kCols / kGroup);
  for (auto& v : p.s) v = scale(rng);
  p.qsum.assign(size_t(tokens) * kCols / kGroup, 0);
  for (int t = 0; t < tokens; ++t)
    for (int c = 0; c < kCols; ++c) p.qsum[size_t(t) * kCols / kGroup + c / kGroup] += p.q[size_t(t) * kCols + c];
  return p;
}

std::vector<double> reference(const Problem& p) {
  std::vector<double> y(size_t(p.tokens) * kRows);
  for (int t = 0; t < p.tokens; ++t)
    for (int n = 0; n < kRows; ++n) {
      double sum = 0;
      for (int c = 0; c < kCols; ++c)
        sum += double(p.ws[size_t(n) * kCols / kBlock + c / kBlock]) * p.s[size_t(t) * kCols / kGroup + c / kGroup] *
               p.w[size_t(n) * kCols + c] * p.q[size_t(t) * kCols + c];
      y[size_t(t) * kRows + n] = sum;
    }
  return y;
}

// ---- horizontal: today's layout ----
struct Horizontal {
  std::vector<Zi> wv;    // [rows][chunks]: 64 weight bytes + 128
  std::vector<Zf> wsl;    // [rows][chunks]: the two block scales over 16 lanes
  std::vector<Zf> sl;     // [tokens][chunks]: activation scales over 16 lanes
  std::vector<Zi> bl;    // [tokens][chunks]: −128 · Σq of each lane's 4 columns
  std::vector<Zi> qv;    // [tokens][chunks]
};

PROBE_AVX512 Horizontal make_horizontal(const Problem& p) {
  const int chunks = kCols / 64;
  Horizontal h;
  h.wv.resize(size_t(kRows) * chunks);
  h.wsl.resize(size_t(kRows) * chunks);
  for (int n = 0; n < kRows; ++n)
    for (int m = 0; m < chunks; ++m) {
      alignas(64) uint8_t b[64];
      alignas(64) float l[16];
      for (int i = 0; i < 64; ++i) b[i] = static_cast<uint8_t>(p.w[size_t(n) * kCols + 64 * m + i] + 128);
      for (int j = 0; j < 16; ++j) l[j] = p.ws[size_t(n) * kCols / kBlock + (64 * m + 4 * j) / kBlock];
      h.wv[size_t(n) * chunks + m].v = _mm512_load_si512(b);
      h.wsl[size_t(n) * chunks + m].v = _mm512_load_ps(l);
    }
  h.sl.resize(size_t(p.tokens) * chunks);
  h.bl.resize(size_t(p.tokens) * chunks);
  h.qv.resize(size_t(p.tokens) * chunks);
  for (int t = 0; t < p.tokens; ++t)
    for (int m = 0; m < chunks; ++m) {
      alignas(64) float l[16];
      alignas(64) int32_t b[16];
      for (int j = 0; j < 16; ++j) {
        const int c = 64 * m + 4 * j;
        l[j] = p.s[size_t(t) * kCols / kGroup + c / kGroup];
        int32_t sum = 0;
        for (int i = 0; i < 4; ++i) sum += p.q[size_t(t) * kCols + c + i];
        b[j] = -128 * sum;
      }
      h.sl[size_t(t) * chunks + m].v = _mm512_load_ps(l);
      h.bl[size_t(t) * chunks + m].v = _mm512_load_si512(b);
      h.qv[size_t(t) * chunks + m].v = _mm512_loadu_si512(p.q.data() + size_t(t) * kCols + 64 * m);
    }
  return h;
}

PROBE_AVX512 void run_horizontal(const Horizontal& h, int tokens, float* y) {
  constexpr int R = 8;
  const int chunks = kCols / 64;
  for (int n = 0; n < kRows; n += R)
    for (int t = 0; t < tokens; ++t) {
      __m512 acc[R];
      for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
      for (int m = 0; m < chunks; ++m) {
        const __m512i a = h.qv[size_t(t) * chunks + m].v, b = h.bl[size_t(t) * chunks + m].v;
        const __m512 s = h.sl[size_t(t) * chunks + m].v;
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const size_t i = size_t(n + r) * chunks + m;
          const __m512i d = _mm512_dpbusd_epi32(b, h.wv[i].v, a);
          acc[r] = _mm512_fmadd_ps(h.wsl[i].v, _mm512_mul_ps(_mm512_cvtepi32_ps(d), s), acc[r]);
        }
      }
      for (int r = 0; r < R; ++r) y[size_t(t) * kRows + n + r] = _mm512_reduce_add_ps(acc[r]);
    }
}

// ---- vertical: 16 rows x 4 columns per vector ----
struct Vertical {
  std::vector<Zi> wv;  // [rows / 16][cols / 4]
  std::vector<Zf> wsv;  // [rows / 16][cols / 32]: the 16 rows' block scales
  std::vector<int32_t> q4;  // [tokens][cols / 4]: 4 activation bytes
  std::vector<int32_t> bias;  // [tokens][cols / 8]: −128 · Σq
};

PROBE_AVX512 Vertical make_vertical(const Problem& p) {
  Vertical v;
  v.wv.resize(size_t(kRows / 16) * (kCols / 4));
  v.wsv.resize(size_t(kRows / 16) * (kCols / kBlock));
  for (int g = 0; g < kRows / 16; ++g) {
    for (int c4 = 0; c4 < kCols / 4; ++c4) {
      alignas(64) uint8_t b[64];
      for (int r = 0; r < 16; ++r)
        for (int i = 0; i < 4; ++i) b[4 * r + i] = static_cast<uint8_t>(p.w[size_t(16 * g + r) * kCols + 4 * c4 + i] + 128);
      v.wv[size_t(g) * (kCols / 4) + c4].v = _mm512_load_si512(b);
    }
    for (int blk = 0; blk < kCols / kBlock; ++blk) {
      alignas(64) float l[16];
      for (int r = 0; r < 16; ++r) l[r] = p.ws[size_t(16 * g + r) * kCols / kBlock + blk];
      v.wsv[size_t(g) * (kCols / kBlock) + blk].v = _mm512_load_ps(l);
    }
  }
  v.q4.resize(size_t(p.tokens) * kCols / 4);
  for (size_t i = 0; i < v.q4.size(); ++i) std::copy_n(p.q.data() + 4 * i, 4, reinterpret_cast<int8_t*>(&v.q4[i]));
  v.bias.resize(p.qsum.size());
  for (size_t i = 0; i < v.bias.size(); ++i) v.bias[i] = -128 * p.qsum[i];
  return v;
}

template <int TT>
PROBE_AVX512 void vertical_tile(const Vertical& v, const Problem& p, int t0, float* y) {
  constexpr int kC4 = kCols / 4, kG8 = kCols / kGroup;
  for (int g = 0; g < kRows / 16; ++g) {
    const Zi* w = v.wv.data() + size_t(g) * kC4;
    __m512 acc[TT];
    for (int t = 0; t < TT; ++t) acc[t] = _mm512_setzero_ps();
    for (int blk = 0; blk < kCols / kBlock; ++blk) {
      __m512 tb[TT];
#pragma GCC unroll 4
      for (int k = 0; k < kBlock / kGroup; ++k) {
        const int g8 = blk * (kBlock / kGroup) + k, c4 = 2 * g8;
        const __m512i w0 = w[c4].v, w1 = w[c4 + 1].v;
#pragma GCC unroll 8
        for (int t = 0; t < TT; ++t) {
          const size_t tt = size_t(t0 + t);
          __m512i d = _mm512_set1_epi32(v.bias[tt * kG8 + g8]);
          d = _mm512_dpbusd_epi32(d, w0, _mm512_set1_epi32(v.q4[tt * kC4 + c4]));
          d = _mm512_dpbusd_epi32(d, w1, _mm512_set1_epi32(v.q4[tt * kC4 + c4 + 1]));
          const __m512 s = _mm512_set1_ps(p.s[tt * kG8 + g8]);
          tb[t] = k == 0 ? _mm512_mul_ps(_mm512_cvtepi32_ps(d), s) : _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), s, tb[t]);
        }
      }
      const __m512 ws = v.wsv[size_t(g) * (kCols / kBlock) + blk].v;
      for (int t = 0; t < TT; ++t) acc[t] = _mm512_fmadd_ps(ws, tb[t], acc[t]);
    }
    for (int t = 0; t < TT; ++t) _mm512_storeu_ps(y + size_t(t0 + t) * kRows + 16 * g, acc[t]);
  }
}

PROBE_AVX512 void run_vertical(const Vertical& v, const Problem& p, float* y) {
  int t = 0;
  for (; t + 4 <= p.tokens; t += 4) vertical_tile<4>(v, p, t, y);
  for (; t < p.tokens; ++t) vertical_tile<1>(v, p, t, y);
}

template <class F>
double gmacs(int tokens, F&& run) {
  run();  // warm
  int reps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    run();
    ++reps;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (elapsed < 0.3);
  return double(reps) * tokens * kRows * kCols / elapsed / 1e9;
}

double max_error(const std::vector<float>& y, const std::vector<double>& ref) {
  double e = 0, scale = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    e = std::max(e, std::abs(y[i] - ref[i]));
    scale = std::max(scale, std::abs(ref[i]));
  }
  return e / scale;
}

}  // namespace

int main() {
  if (!__builtin_cpu_supports("avx512vnni")) {
    std::printf("this CPU has no AVX-512 VNNI\n");
    return 0;
  }
  std::printf("blk8 linear %d x %d, one activation pass, one thread\n", kRows, kCols);
  std::printf("%6s %22s %22s %8s %24s\n", "tokens", "horizontal GMAC/s", "vertical GMAC/s", "ratio",
              "max rel. error h / v");
  for (int tokens : {1, 4, 8, 32}) {
    const Problem p = make_problem(tokens);
    const std::vector<double> ref = reference(p);
    const Horizontal h = make_horizontal(p);
    const Vertical v = make_vertical(p);
    std::vector<float> yh(size_t(tokens) * kRows), yv(yh.size());
    const double gh = gmacs(tokens, [&] { run_horizontal(h, tokens, yh.data()); });
    const double gv = gmacs(tokens, [&] { run_vertical(v, p, yv.data()); });
    std::printf("%6d %22.1f %22.1f %8.2f %12.2e / %.2e\n", tokens, gh, gv, gv / gh, max_error(yh, ref),
                max_error(yv, ref));
  }
  return 0;
}
