#include "kernels/cpu_isa.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace tessera {
namespace {

constexpr Isa kAll[] = {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Amx, Isa::Neon};

TEST(CpuIsa, NamesRoundTrip) {
  for (Isa isa : kAll) EXPECT_EQ(isa_from_name(isa_name(isa)), isa) << isa_name(isa);
  EXPECT_FALSE(isa_from_name("sve").has_value());
  EXPECT_FALSE(isa_from_name("").has_value());
}

TEST(CpuIsa, ScalarAndTheDetectedLevelAreSupported) {
  EXPECT_TRUE(isa_supported(Isa::Scalar));
  EXPECT_TRUE(isa_supported(detected_isa()));
}

// A build runs only its own architecture's levels: x86's nest (scalar <
// avx2 < avx512 < amx), neon stands apart.
TEST(CpuIsa, LevelsOfTheOtherArchitectureAreNeverSupported) {
  const Isa best = detected_isa();
  if (TESSERA_X86 || best != Isa::Neon) {
    EXPECT_FALSE(isa_supported(Isa::Neon));
  }
  if (!TESSERA_X86) {
    for (Isa isa : {Isa::Avx2, Isa::Avx512, Isa::Amx}) EXPECT_FALSE(isa_supported(isa)) << isa_name(isa);
  }
  if (!TESSERA_ARM64) {
    EXPECT_NE(best, Isa::Neon);
  }
  if (best == Isa::Amx) {
    EXPECT_TRUE(isa_supported(Isa::Avx512));
  }
  if (best == Isa::Avx512 || best == Isa::Amx) {
    EXPECT_TRUE(isa_supported(Isa::Avx2));
  }
}

TEST(CpuIsa, SettingAnUnsupportedLevelIsAnError) {
  const Isa before = active_isa();
  for (Isa isa : kAll) {
    if (isa_supported(isa)) {
      set_active_isa(isa);
      EXPECT_EQ(active_isa(), isa);
    } else {
      EXPECT_THROW(set_active_isa(isa), Error) << isa_name(isa);
    }
  }
  set_active_isa(before);
}

}  // namespace
}  // namespace tessera
