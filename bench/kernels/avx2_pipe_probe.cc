// Which AVX2 integer instructions share execution pipes: 8 independent
// dependency chains of one instruction, or of two alternating, 200 M
// iterations each; ns per iteration (8 instructions). If a pair takes as
// long as either alone, the two compete for the same pipes.
// docs/BENCHMARKING.md ("An AVX2-only machine") has the Zen 3 figures.
//
//   g++ -O2 -mavx2 -o /tmp/avx2_pipe_probe bench/kernels/avx2_pipe_probe.cc && /tmp/avx2_pipe_probe
#include <immintrin.h>

#include <chrono>
#include <cstdio>

namespace {

constexpr long kIterations = 200000000;

template <class A, class B>
__attribute__((always_inline)) inline void probe(const char* name, A op_a, B op_b) {
  __m256i v0 = _mm256_set1_epi8(1), v1 = _mm256_set1_epi8(2), v2 = _mm256_set1_epi8(3), v3 = _mm256_set1_epi8(4);
  __m256i v4 = _mm256_set1_epi8(5), v5 = _mm256_set1_epi8(6), v6 = _mm256_set1_epi8(7), v7 = _mm256_set1_epi8(8);
  const __m256i k = _mm256_set1_epi8(1);
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < kIterations; ++i) {
    v0 = op_a(v0, k);
    v1 = op_b(v1, k);
    v2 = op_a(v2, k);
    v3 = op_b(v3, k);
    v4 = op_a(v4, k);
    v5 = op_b(v5, k);
    v6 = op_a(v6, k);
    v7 = op_b(v7, k);
    asm volatile("" : "+x"(v0), "+x"(v1), "+x"(v2), "+x"(v3), "+x"(v4), "+x"(v5), "+x"(v6), "+x"(v7));
  }
  const auto t1 = std::chrono::steady_clock::now();
  const __m256i s = _mm256_add_epi8(_mm256_add_epi8(_mm256_add_epi8(v0, v1), _mm256_add_epi8(v2, v3)),
                                    _mm256_add_epi8(_mm256_add_epi8(v4, v5), _mm256_add_epi8(v6, v7)));
  volatile int sink = _mm256_extract_epi32(s, 0);
  (void)sink;
  std::printf("%-18s %.3f ns per 8\n", name, std::chrono::duration<double, std::nano>(t1 - t0).count() / kIterations);
}

}  // namespace

int main() {
  auto add = [](__m256i a, __m256i b) { return _mm256_add_epi32(a, b); };
  auto maddubs = [](__m256i a, __m256i b) { return _mm256_maddubs_epi16(a, b); };
  auto madd = [](__m256i a, __m256i b) { return _mm256_madd_epi16(a, b); };
  auto sign = [](__m256i a, __m256i b) { return _mm256_sign_epi8(a, b); };
  auto shufb = [](__m256i a, __m256i b) { return _mm256_shuffle_epi8(a, b); };
  auto abs8 = [](__m256i a, __m256i) { return _mm256_abs_epi8(a); };
  probe("add+add", add, add);
  probe("maddubs+maddubs", maddubs, maddubs);
  probe("maddubs+madd", maddubs, madd);
  probe("maddubs+sign", maddubs, sign);
  probe("maddubs+abs", maddubs, abs8);
  probe("maddubs+shufb", maddubs, shufb);
  probe("sign+shufb", sign, shufb);
  probe("maddubs+add", maddubs, add);
}
