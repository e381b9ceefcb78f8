// AMX tile instructions and the tile configuration the AMX kernels share
// (x86-64 builds only; kernels/qlinear_amx.cc, kernels/interleaved_linear_amx.cc).
//
// The tile instructions are written as inline asm with a "memory" clobber
// rather than GCC's _tile_* macros, which pass only addresses: the compiler
// could then drop or move the stores that fill a panel or the tile
// configuration (GCC 12 does drop the configuration's stores in some builds,
// which kills the process with SIGILL at the first tile instruction).
#pragma once

#include <cstdint>

#define TILE_LOAD(tmm, base, stride) \
  asm volatile("tileloadd (%0,%1,1), %%tmm" #tmm ::"r"(base), "r"(static_cast<long>(stride)) : "memory")
#define TILE_STORE(tmm, base, stride) \
  asm volatile("tilestored %%tmm" #tmm ", (%0,%1,1)" ::"r"(base), "r"(static_cast<long>(stride)) : "memory")
#define TILE_ZERO(tmm) asm volatile("tilezero %%tmm" #tmm ::)
// C += A · B (AT&T operand order: B, A, C): bf16 pairs into f32, and
// signed bytes of A times unsigned bytes of B into int32 (exact).
#define TILE_DPBF16PS(c, a, b) asm volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
#define TILE_DPBSUD(c, a, b) asm volatile("tdpbsud %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
#define TILE_RELEASE() asm volatile("tilerelease" ::: "memory")

namespace tessera::kernels {

// The 64-byte tile configuration (palette 1): tile i has rows[i] rows of
// colsb[i] bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};

  void set(int tile, int tile_rows, int bytes) {
    rows[tile] = static_cast<uint8_t>(tile_rows);
    colsb[tile] = static_cast<uint16_t>(bytes);
  }
  void load() const { asm volatile("ldtilecfg %0" ::"m"(*this) : "memory"); }
};

}  // namespace tessera::kernels
