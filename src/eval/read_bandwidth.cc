#include "eval/read_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "core/error.h"
#include "kernels/read_sum.h"

namespace tessera {

ReadBandwidth measure_read_bandwidth(Isa isa, int64_t bytes, ThreadPool& pool, double min_seconds) {
  if (bytes < 256) fail("", "bandwidth probe", "working set of {} bytes is below the 256-byte minimum", bytes);
  const int64_t words = (bytes + 255) / 256 * 32;  // whole 256-byte steps of the widest loop
  std::vector<uint64_t> buffer(static_cast<size_t>(words));
  for (int64_t i = 0; i < words; ++i) buffer[static_cast<size_t>(i)] = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
  // One range per thread, cut on 256-byte steps.
  const int64_t steps = words / 32;
  std::atomic<uint64_t> sink{0};  // the sums go somewhere observable, so the loads stay
  auto pass = [&] {
    pool.parallel_for(pool.threads(), [&](int64_t begin, int64_t end) {
      for (int64_t part = begin; part < end; ++part) {
        const int64_t s0 = steps * part / pool.threads(), s1 = steps * (part + 1) / pool.threads();
        sink.fetch_add(kernels::read_sum(isa, buffer.data() + s0 * 32, (s1 - s0) * 32), std::memory_order_relaxed);
      }
    });
  };
  using Clock = std::chrono::steady_clock;
  pass();  // untimed: faults the pages in and fills the caches
  std::vector<double> times;
  double total = 0;
  while (times.size() < 5 || total < min_seconds) {
    const auto t0 = Clock::now();
    pass();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    times.push_back(s);
    total += s;
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  ReadBandwidth r;
  r.bytes = words * 8;
  r.passes = static_cast<int>(times.size());
  r.gb_s = static_cast<double>(r.bytes) / times[times.size() / 2] * 1e-9;
  return r;
}

}  // namespace tessera
