// A persistent pool of worker threads (created once, not per op). parallel_for
// splits [0, n) into one contiguous range per thread, by index only, so which
// thread computes an element never changes what it computes: kernels that give
// each output element to exactly one range produce the same bits for any
// thread count.
//
// A decode step dispatches hundreds of small ops, so hand-off must cost
// microseconds, not a condition-variable round trip: idle workers spin on an
// atomic generation counter for a short while (about 50 µs) before they
// sleep on it (C++20 atomic wait, a futex), and the caller spins likewise
// while it waits for the last range.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

namespace tessera {

class ThreadPool {
 public:
  // threads >= 1; the calling thread is one of them.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint ranges covering [0, n), each at least
  // `grain` long where possible, and returns when all have finished.
  // Not reentrant: one parallel_for at a time per pool.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 1);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  std::vector<std::pair<int64_t, int64_t>> ranges_;
};

}  // namespace tessera
