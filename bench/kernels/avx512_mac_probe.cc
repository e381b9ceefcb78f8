// What the AVX-512 integer kernels could reach on this CPU, without them:
//
//   1. peak rates of the two VNNI dot products (12 independent chains), and
//      vpdpwssd's latency and its rate with 8 chains:
//      vpdpwssd (32 int16 multiply-adds per instruction, the prefill GEMM's)
//      and vpdpbusd (64 u8 x s8, the decode GEMV's and llama.cpp's Q4_0 x
//      Q8_0), on one thread and on two at once (a shared VM's two vCPUs
//      may share one core's vector units);
//   2. the lut4 decode GEMV's instruction mix per 128 weights of a row (one
//      load, 2 vpermb, 1 vpmultishiftqb, 4 vpdpbusd for two activation
//      passes, 2 cvt + 2 FMA), eight rows in flight, everything in L1: the
//      kernel's compute ceiling; then the same with kernels/qlinear_avx512's
//      per-chunk line prefetch; then two mixes the kernels do not run: the
//      second pass's dot products accumulated onto the first's shifted left
//      by 7 (one cvt + FMA per chunk; it would need the residual's scale tied
//      to the first pass's, s/128: a different numeric contract), and one
//      pass (what the agreement bound rules out);
//   3. the int16 GEMM's former 2-pair x 4-token tile (kernels/qlinear_i16gemm_avx512
//      runs a 2 x 6 asm tile since 2026-12-02, 9a0d731)
//      over rows of 576, 1024 and 4864 columns: its inner loop alone and with
//      the per-128-column cvt + FMA, showing what the block scales cost and
//      where the tile's operands stop fitting L1.
// docs/BENCHMARKING.md ("Prefill without AMX") has the figures of one machine.
//
//   g++ -O2 -std=c++20 -pthread -o /tmp/avx512_mac_probe bench/kernels/avx512_mac_probe.cc && /tmp/avx512_mac_probe
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#define PROBE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi")))

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Billions of instructions per second of one dot product, 12 chains (named
// variables: GCC keeps an array of them in memory, which chains every
// instruction to a store and a load).
template <bool kWords>
PROBE_AVX512 double dot_rate() {
  const __m512i a = _mm512_set1_epi16(3), b = _mm512_set1_epi16(5);
  __m512i c0 = _mm512_set1_epi32(0), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0, c8 = c0, c9 = c0,
          c10 = c0, c11 = c0;
  auto dot = [&](__m512i& acc) PROBE_AVX512 {
    acc = kWords ? _mm512_dpwssd_epi32(acc, a, b) : _mm512_dpbusd_epi32(acc, a, b);
  };
  constexpr long kIterations = 40000000;
  const auto t0 = std::chrono::steady_clock::now();
  for (long n = 0; n < kIterations; ++n) {
    dot(c0), dot(c1), dot(c2), dot(c3), dot(c4), dot(c5), dot(c6), dot(c7), dot(c8), dot(c9), dot(c10), dot(c11);
    asm volatile("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5), "+v"(c6), "+v"(c7), "+v"(c8),
                 "+v"(c9), "+v"(c10), "+v"(c11));
  }
  const double dt = seconds_since(t0);
  for (__m512i c : {c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11}) c0 = _mm512_add_epi32(c0, c);
  volatile int sink = _mm512_reduce_add_epi32(c0);
  (void)sink;
  return 12.0 * kIterations / dt / 1e9;
}

// vpdpwssd rate with 8 independent chains (the old 2 × 4 tile's sums), and
// its latency in cycles: one dependent chain against a chain of imul
// (latency 3 on every x86 core of the last decade), so no clock is assumed.
PROBE_AVX512 double dpwssd_rate_8_chains() {
  constexpr long kIterations = 40000000;
  const auto t0 = std::chrono::steady_clock::now();
  asm volatile(
      "mov %0, %%rcx\n\t"
      "1:\n\t"
      "vpdpwssd %%zmm30, %%zmm31, %%zmm0\n\t vpdpwssd %%zmm30, %%zmm31, %%zmm1\n\t"
      "vpdpwssd %%zmm30, %%zmm31, %%zmm2\n\t vpdpwssd %%zmm30, %%zmm31, %%zmm3\n\t"
      "vpdpwssd %%zmm30, %%zmm31, %%zmm4\n\t vpdpwssd %%zmm30, %%zmm31, %%zmm5\n\t"
      "vpdpwssd %%zmm30, %%zmm31, %%zmm6\n\t vpdpwssd %%zmm30, %%zmm31, %%zmm7\n\t"
      "dec %%rcx\n\t"
      "jnz 1b" ::"r"(kIterations)
      : "rcx", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "cc");
  return 8.0 * kIterations / seconds_since(t0) / 1e9;
}

PROBE_AVX512 double dpwssd_latency_cycles() {
  constexpr long kIterations = 20000000;
  auto t0 = std::chrono::steady_clock::now();
  asm volatile(
      "mov %0, %%rcx\n\t"
      "1:\n\t"
      "vpdpwssd %%zmm30, %%zmm31, %%zmm0\n\t vpdpwssd %%zmm30, %%zmm31, %%zmm0\n\t"
      "vpdpwssd %%zmm30, %%zmm31, %%zmm0\n\t vpdpwssd %%zmm30, %%zmm31, %%zmm0\n\t"
      "dec %%rcx\n\t"
      "jnz 1b" ::"r"(kIterations)
      : "rcx", "xmm0", "cc");
  const double dot = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  asm volatile(
      "mov %0, %%rcx\n\t"
      "mov $1, %%rax\n\t"
      "1:\n\t"
      "imul %%rax, %%rax\n\t imul %%rax, %%rax\n\t imul %%rax, %%rax\n\t imul %%rax, %%rax\n\t"
      "dec %%rcx\n\t"
      "jnz 1b" ::"r"(kIterations)
      : "rcx", "rax", "cc");
  return 3.0 * dot / seconds_since(t0);
}

// The lut4 GEMV's passes: two (the kernel's), two fused into one cvt + FMA,
// or one.
enum class Passes { Two, Fused, One };

// GMAC/s of the lut4 GEMV mix over `chunks` 128-column chunks of 8 rows
// (row stride rb bytes), `reps` times; with the kernel's line prefetch if kPrefetch.
template <bool kPrefetch, Passes kPasses = Passes::Two>
PROBE_AVX512 double gemv_mix(const uint8_t* w, int64_t rb, int64_t chunks, long reps) {
  constexpr int R = 8;
  __m512i tbl[R];
  __m512 acc[R];
  for (int r = 0; r < R; ++r) {
    tbl[r] = _mm512_set1_epi8(static_cast<char>(r + 1));
    acc[r] = _mm512_setzero_ps();
  }
  const __m512i lo0 = _mm512_set1_epi8(1), hi0 = _mm512_set1_epi8(2), lo1 = _mm512_set1_epi8(3),
                hi1 = _mm512_set1_epi8(4), b0 = _mm512_set1_epi32(5), b1 = _mm512_set1_epi32(6);
  const __m512 s0 = _mm512_set1_ps(1e-9f), s1 = _mm512_set1_ps(1e-12f);
  const __m512i ctl = _mm512_set1_epi64(0x3c342c241c140c04LL);
  const char* c = reinterpret_cast<const char*>(w);
  const int64_t span = R * rb, per = (span / 64 + chunks) / chunks * 64;
  const auto t0 = std::chrono::steady_clock::now();
  for (long rep = 0; rep < reps; ++rep) {
    for (int64_t m = 0; m < chunks; ++m) {
      if constexpr (kPrefetch)
        for (int64_t off = m * per; off < std::min(span, (m + 1) * per); off += 64) {
          _mm_prefetch(c + off + 1024, _MM_HINT_T0);
          _mm_prefetch(c + off + 8192, _MM_HINT_T1);
        }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512i v = _mm512_loadu_si512(w + r * rb + 64 * m);
        const __m512i lo = _mm512_permutexvar_epi8(v, tbl[r]);
        const __m512i hi = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(ctl, v), tbl[r]);
        const __m512i d0 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(b0, lo, lo0), hi, hi0);
        if constexpr (kPasses == Passes::Fused) {
          const __m512i d = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_slli_epi32(d0, 7), lo, lo1), hi, hi1);
          acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), s0, acc[r]);
        } else {
          acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d0), s0, acc[r]);
        }
        if constexpr (kPasses == Passes::Two) {
          const __m512i d1 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(b1, lo, lo1), hi, hi1);
          acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d1), s1, acc[r]);
        }
      }
    }
  }
  const double dt = seconds_since(t0);
  float sum = 0;
  for (int r = 0; r < R; ++r) sum += _mm512_reduce_add_ps(acc[r]);
  volatile float sink = sum;
  (void)sink;
  return static_cast<double>(reps) * chunks * R * 128 / dt / 1e9;
}

// GMAC/s of the int16 GEMM's 2-pair x 4-token tile over `cols` columns
// (pairs at w, w + 2·cols; tokens at x + t·cols), `reps` times; with the
// per-block cvt + FMA into eight f32 lanes if kBlockEnds.
template <bool kBlockEnds>
PROBE_AVX512 double gemm_tile(const int16_t* w, const int16_t* x, int64_t cols, long reps) {
  __m512 lanes[8];
  for (__m512& l : lanes) l = _mm512_setzero_ps();
  const __m512 scale = _mm512_set1_ps(1e-9f);
  const auto t0 = std::chrono::steady_clock::now();
  for (long rep = 0; rep < reps; ++rep) {
    for (int64_t c0 = 0; c0 < cols; c0 += 128) {
      __m512i sum[8];
      for (__m512i& s : sum) s = _mm512_setzero_si512();
      const int64_t c1 = std::min(cols, c0 + 128);
      for (int64_t c = c0; c < c1; c += 16) {
        const __m512i w0 = _mm512_loadu_si512(w + 2 * c), w1 = _mm512_loadu_si512(w + 2 * cols + 2 * c);
#pragma GCC unroll 4
        for (int t = 0; t < 4; ++t) {
          const __m512i xv = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + t * cols + c)));
          sum[t] = _mm512_dpwssd_epi32(sum[t], w0, xv);
          sum[4 + t] = _mm512_dpwssd_epi32(sum[4 + t], w1, xv);
        }
      }
      if constexpr (kBlockEnds) {
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) lanes[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[i]), scale, lanes[i]);
      } else {
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) asm volatile("" ::"v"(sum[i]));
      }
    }
  }
  const double dt = seconds_since(t0);
  float total = 0;
  for (const __m512& l : lanes) total += _mm512_reduce_add_ps(l);
  volatile float sink = total;
  (void)sink;
  return static_cast<double>(reps) * 4 * 4 * cols / dt / 1e9;  // 4 rows (2 pairs) x 4 tokens
}

}  // namespace

int main() {
  if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512vbmi")) {
    std::printf("this CPU has no AVX-512 VNNI / VBMI\n");
    return 0;
  }
  std::printf("1. dot products, G instructions/s (GMAC/s)\n");
  for (int threads : {1, 2}) {
    for (bool words : {true, false}) {
      std::vector<double> rate(threads);
      std::vector<std::thread> pool;
      for (int i = 0; i < threads; ++i)
        pool.emplace_back([&rate, i, words] { rate[i] = words ? dot_rate<true>() : dot_rate<false>(); });
      for (std::thread& t : pool) t.join();
      for (int i = 0; i < threads; ++i)
        std::printf("   %d thread(s), thread %d: %-9s %.2f (%.0f)\n", threads, i, words ? "vpdpwssd" : "vpdpbusd", rate[i],
                    rate[i] * (words ? 32 : 64));
    }
  }
  std::printf("   vpdpwssd latency %.1f cycles; 8 chains %.2f G/s (the 12 chains above hide the latency, 8 do not)\n",
              dpwssd_latency_cycles(), dpwssd_rate_8_chains());
  std::printf("2. lut4 GEMV mix, 8 rows x 512 columns in L1, GMAC/s\n");
  const int64_t rb = 288;  // 576-column lut4 rows
  std::vector<uint8_t> w(8 * rb + 16384, 7);
  std::printf("   no prefetch %.1f, the kernel's line prefetch %.1f\n", gemv_mix<false>(w.data(), rb, 4, 3000000),
              gemv_mix<true>(w.data(), rb, 4, 3000000));
  std::printf("   no prefetch, passes fused (one cvt + FMA) %.1f, one pass %.1f\n",
              gemv_mix<false, Passes::Fused>(w.data(), rb, 4, 3000000),
              gemv_mix<false, Passes::One>(w.data(), rb, 4, 3000000));
  std::printf("3. int16 GEMM tile, 2 pairs x 4 tokens, GMAC/s\n");
  for (int64_t cols : {576, 1024, 4864}) {
    std::vector<int16_t> wp(4 * cols, 1), x(4 * cols, 1);
    const long reps = 1000000000L / (16 * cols);
    std::printf("   %5lld columns (tile operands %3lld KB): inner loop %.1f, with block scales %.1f\n",
                static_cast<long long>(cols), static_cast<long long>(16 * cols / 1024),
                gemm_tile<false>(wp.data(), x.data(), cols, reps), gemm_tile<true>(wp.data(), x.data(), cols, reps));
  }
  return 0;
}
