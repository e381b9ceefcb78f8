// This CPU's integer multiply-add peak on one thread: 16 independent
// `vpdpbusd zmm` chains (64 int8 multiply-adds each) in inline asm, so the
// compiler can neither fold nor spill them. The figure the kernels' GMAC/s
// are compared against in docs/BENCHMARKING.md.
//
//   g++ -O2 -o /tmp/vnni_peak bench/kernels/vnni_peak_probe.cc && /tmp/vnni_peak
// GCC 12 warns that the intrinsics headers' _mm512_undefined_* operands "may
// be used uninitialized"; they are don't-care inputs.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#include <chrono>
#include <cstdio>
__attribute__((target("avx512f,avx512vnni"))) double run() {
  __m512i a0=_mm512_set1_epi32(1),a1=a0,a2=a0,a3=a0,a4=a0,a5=a0,a6=a0,a7=a0,a8=a0,a9=a0,a10=a0,a11=a0,a12=a0,a13=a0,a14=a0,a15=a0;
  const __m512i x = _mm512_set1_epi32(0x01010101), y = _mm512_set1_epi32(0x02020202);
  const long iters = 20000000;
  auto t0 = std::chrono::steady_clock::now();
  for (long k = 0; k < iters; ++k) {
    asm volatile(
      "vpdpbusd %[x], %[y], %[a0]\n vpdpbusd %[x], %[y], %[a1]\n vpdpbusd %[x], %[y], %[a2]\n vpdpbusd %[x], %[y], %[a3]\n"
      "vpdpbusd %[x], %[y], %[a4]\n vpdpbusd %[x], %[y], %[a5]\n vpdpbusd %[x], %[y], %[a6]\n vpdpbusd %[x], %[y], %[a7]\n"
      : [a0]"+v"(a0),[a1]"+v"(a1),[a2]"+v"(a2),[a3]"+v"(a3),[a4]"+v"(a4),[a5]"+v"(a5),[a6]"+v"(a6),[a7]"+v"(a7)
      : [x]"v"(x),[y]"v"(y));
    asm volatile(
      "vpdpbusd %[x], %[y], %[a0]\n vpdpbusd %[x], %[y], %[a1]\n vpdpbusd %[x], %[y], %[a2]\n vpdpbusd %[x], %[y], %[a3]\n"
      "vpdpbusd %[x], %[y], %[a4]\n vpdpbusd %[x], %[y], %[a5]\n vpdpbusd %[x], %[y], %[a6]\n vpdpbusd %[x], %[y], %[a7]\n"
      : [a0]"+v"(a8),[a1]"+v"(a9),[a2]"+v"(a10),[a3]"+v"(a11),[a4]"+v"(a12),[a5]"+v"(a13),[a6]"+v"(a14),[a7]"+v"(a15)
      : [x]"v"(x),[y]"v"(y));
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  volatile int sink = _mm512_reduce_add_epi32(_mm512_add_epi32(a0, a15)); (void)sink;
  return iters * 16.0 * 64 / s / 1e9;
}
int main() {
  for (int i = 0; i < 3; ++i) std::printf("vpdpbusd zmm: %.1f GMAC/s\n", run());
}
