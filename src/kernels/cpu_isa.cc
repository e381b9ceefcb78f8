#include "kernels/cpu_isa.h"

#include <atomic>
#include <cstdlib>

#if defined(__linux__) && defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "core/error.h"

namespace tessera {

namespace {

constexpr std::string_view kNames[] = {"scalar", "avx2", "avx512", "amx", "neon"};
constexpr int kLevels = 5;

// Linux keeps the 8 KB AMX tile state off until a process asks for it; the
// first tile instruction without this permission raises SIGILL.
bool os_grants_amx_tiles() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_supports also checks that the OS saves the vector state
  // (XGETBV), so a feature the kernel cannot use is reported missing.
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vbmi");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi2");
  const bool amx = __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-bf16") &&
                   __builtin_cpu_supports("avx512bf16");
  if (avx512 && avx2 && amx && os_grants_amx_tiles()) return Isa::Amx;
  if (avx512 && avx2) return Isa::Avx512;
  if (avx2) return Isa::Avx2;
#elif defined(__aarch64__) && defined(__linux__)
  // Advanced SIMD is part of AArch64; the dot product (sdot) is optional
  // before ARMv8.4, so ask the kernel.
  if (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) return Isa::Neon;
#endif
  return Isa::Scalar;
}

Isa from_environment() {
  const char* env = std::getenv("TESSERA_ISA");
  if (env == nullptr || *env == '\0') return detected_isa();
  const std::optional<Isa> isa = isa_from_name(env);
  if (!isa) fail("environment", "TESSERA_ISA", "unknown level '{}' (expected scalar, avx2, avx512, amx or neon)", env);
  if (!isa_supported(*isa))
    fail("environment", "TESSERA_ISA", "this CPU does not support {} (best: {})", env, isa_name(detected_isa()));
  return *isa;
}

std::atomic<int> g_active{-1};
std::atomic<int> g_avx_vnni{-1};

bool detect_avx_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avxvnni") && __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

bool avx_vnni_from_environment() {
  const char* env = std::getenv("TESSERA_AVX_VNNI");
  if (env == nullptr || *env == '\0') return avx_vnni_supported();
  const std::string_view v(env);
  if (v == "0") return false;
  if (v != "1") fail("environment", "TESSERA_AVX_VNNI", "expected 0 or 1, got '{}'", v);
  if (!avx_vnni_supported()) fail("environment", "TESSERA_AVX_VNNI", "this CPU has no AVX-VNNI");
  return true;
}

}  // namespace

std::string_view isa_name(Isa isa) { return kNames[static_cast<int>(isa)]; }

std::optional<Isa> isa_from_name(std::string_view name) {
  for (int i = 0; i < kLevels; ++i)
    if (kNames[i] == name) return static_cast<Isa>(i);
  return std::nullopt;
}

Isa detected_isa() {
  static const Isa isa = detect();
  return isa;
}

// x86 levels nest (scalar < avx2 < avx512 < amx); neon stands beside them.
bool isa_supported(Isa isa) {
  const Isa best = detected_isa();
  if (isa == Isa::Scalar || isa == best) return true;
  if (isa == Isa::Neon || best == Isa::Neon) return false;
  return static_cast<int>(isa) <= static_cast<int>(best);
}

Isa active_isa() {
  int v = g_active.load(std::memory_order_acquire);
  if (v < 0) {
    v = static_cast<int>(from_environment());
    avx_vnni_enabled();  // a bad TESSERA_AVX_VNNI is refused whatever the level
    g_active.store(v, std::memory_order_release);
  }
  return static_cast<Isa>(v);
}

void set_active_isa(Isa isa) {
  if (!isa_supported(isa))
    fail("options", "isa", "this CPU does not support {} (best: {})", isa_name(isa), isa_name(detected_isa()));
  g_active.store(static_cast<int>(isa), std::memory_order_release);
}

bool avx_vnni_supported() {
  static const bool has = detect_avx_vnni();
  return has;
}

bool avx_vnni_enabled() {
  int v = g_avx_vnni.load(std::memory_order_acquire);
  if (v < 0) {
    v = avx_vnni_from_environment() ? 1 : 0;
    g_avx_vnni.store(v, std::memory_order_release);
  }
  return v == 1;
}

void set_avx_vnni(bool on) {
  if (on && !avx_vnni_supported()) fail("options", "avx_vnni", "this CPU has no AVX-VNNI");
  g_avx_vnni.store(on ? 1 : 0, std::memory_order_release);
}

}  // namespace tessera
