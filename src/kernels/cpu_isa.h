// Which vector instruction set the optimized kernels use.
//
// Levels on x86-64, each a superset of the one before:
//   scalar   plain C++ (the reference kernels and the scalar twins of the
//            optimized ones); always available, on every CPU
//   avx2     AVX2 + FMA + F16C + BMI2 (x86-64 since Haswell / Excavator)
//   avx512   AVX-512 F/BW/VL/DQ + VNNI + VBMI (Ice Lake, Sapphire Rapids, Zen 4)
//   amx      avx512 + AVX512-BF16 + AMX tiles with BF16 (Sapphire Rapids and
//            later), granted by the OS (Linux arch_prctl XTILEDATA): batched
//            prefill linears run as bf16 tile GEMMs (kernels/qlinear_amx.h);
//            everything else runs the avx512 kernels
// and on 64-bit Arm:
//   neon     Advanced SIMD + the ARMv8.2 dot product (sdot: Cortex-A55/A76
//            and later, Apple M1 and later, Graviton 2 and later)
//
// A build carries the levels of the architecture it is compiled for (the x86
// kernels are not compiled into an Arm build, nor the Arm ones into an x86
// build); scalar is in every build.
// The level is chosen once per process: the best the CPU (and OS) supports,
// or the one the environment variable TESSERA_ISA names (scalar|avx2|avx512|amx|neon),
// so every level can be run and tested on one machine. Naming a level the
// CPU lacks is an error, not a silent downgrade.
#pragma once

#include <optional>
#include <string_view>

namespace tessera {

// The architecture the build targets.
#if defined(__x86_64__)
#define TESSERA_X86 1
#else
#define TESSERA_X86 0
#endif
#if defined(__aarch64__)
#define TESSERA_ARM64 1
#else
#define TESSERA_ARM64 0
#endif

enum class Isa { Scalar = 0, Avx2 = 1, Avx512 = 2, Amx = 3, Neon = 4 };

// The level whose vector kernels a level runs (amx runs avx512's).
inline Isa vector_isa(Isa isa) { return isa == Isa::Amx ? Isa::Avx512 : isa; }

std::string_view isa_name(Isa isa);
std::optional<Isa> isa_from_name(std::string_view name);

// The best level this CPU supports.
Isa detected_isa();
bool isa_supported(Isa isa);

// The level kernels use: TESSERA_ISA if set (Error if unknown or unsupported),
// else detected_isa(). Read once; set_active_isa() overrides it (tests).
Isa active_isa();
void set_active_isa(Isa isa);  // Error if the CPU lacks it

// AVX-VNNI: the VEX-encoded vpdpwssd / vpdpbusd on 256-bit vectors (Alder
// Lake and later Intel cores, which lack AVX-512; Zen 5). Not a level of its
// own: the avx2 level's kernels use it where the CPU has it, with the same
// bits as without (it fuses the multiply and the add of exact int32 sums).
// TESSERA_AVX_VNNI=0 switches it off, so the plain AVX2 code can be run and
// measured on such a CPU; read once. set_avx_vnni() overrides it (tests).
bool avx_vnni_supported();
bool avx_vnni_enabled();
void set_avx_vnni(bool on);  // Error if on and the CPU lacks it
// Whether a level's integer kernels run their AVX-VNNI variants: avx2 with
// AVX-VNNI enabled (what audit and bench report, and the kernel names say).
inline bool runs_avx_vnni(Isa isa) { return isa == Isa::Avx2 && avx_vnni_enabled(); }

}  // namespace tessera
