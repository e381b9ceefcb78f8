// The read pass of the bandwidth probe (eval/read_bandwidth.h): the sum
// (mod 2⁶⁴) of an array of 64-bit words, with the widest loads the level
// has and four independent accumulators, so it is limited by how fast the
// bytes arrive, not by the adds. The sum is returned so the compiler
// cannot drop the loads; every level gives the same value (tested against
// the scalar twin).
#pragma once

#include <cstdint>

#include "kernels/cpu_isa.h"

namespace tessera::kernels {

uint64_t read_sum(Isa isa, const uint64_t* words, int64_t n);
uint64_t read_sum_scalar(const uint64_t* words, int64_t n);

}  // namespace tessera::kernels
