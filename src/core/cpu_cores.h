// How many threads a model runs with when the user names none: the number of
// physical cores this process may run on (as llama.cpp defaults to), since a
// second hardware thread of a core shares its vector units and adds little to
// kernels that keep them busy.
#pragma once

namespace tessera {

// Distinct (package, core) pairs among the CPUs in this process's affinity
// mask, read from /sys/devices/system/cpu/cpuN/topology; where that is not
// readable (another OS, a sandbox), the CPUs in the mask, else
// std::thread::hardware_concurrency(); at least 1. Computed once.
int physical_core_count();

// physical_core_count() if `requested` is 0, else `requested`: what
// LoadOptions::threads = 0 (the default at every door) means.
inline int resolve_thread_count(int requested) { return requested == 0 ? physical_core_count() : requested; }

}  // namespace tessera
