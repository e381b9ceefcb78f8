// Read-bandwidth probe: the ceiling of a memory-bound decode step.
//
// A decode step of a small model reads every weight once (plus the KV
// cache), so its rate can be at most bandwidth ÷ bytes per step, where the
// bandwidth is the one for a working set of that size: a few tens of MiB
// stay in the large shared cache and read at about twice the main-memory
// rate on the machines we measure. The probe allocates a buffer of exactly
// that size, reads it once untimed (page faults, cache fill), then times
// whole passes with the widest loads of the level (kernels/read_sum.h),
// split into one contiguous range per thread of the pool, as the kernels'
// row split is. It reports the median pass, so it is comparable with a mean
// decode rate, and is run in the same process as the decode it judges.
#pragma once

#include <cstdint>

#include "kernels/cpu_isa.h"
#include "core/thread_pool.h"

namespace tessera {

struct ReadBandwidth {
  int64_t bytes = 0;   // working set read per pass
  int passes = 0;      // timed passes
  double gb_s = 0;     // bytes / median pass time, in 10⁹ bytes per second
};

// bytes >= 256 (Error otherwise); at least 5 timed passes and min_seconds of them.
ReadBandwidth measure_read_bandwidth(Isa isa, int64_t bytes, ThreadPool& pool, double min_seconds = 0.25);

}  // namespace tessera
