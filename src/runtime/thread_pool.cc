#include "runtime/thread_pool.h"

#include <algorithm>

#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TESSERA_CPU_RELAX() _mm_pause()
#else
#define TESSERA_CPU_RELAX() std::this_thread::yield()
#endif

namespace tessera {

namespace {

constexpr int kSpinIterations = 2048;  // pause ≈ 10-140 cycles: tens of µs before sleeping

// Waits until `a` differs from `old`: spins first, then sleeps on the atomic.
template <typename T>
T wait_change(const std::atomic<T>& a, T old) {
  for (int i = 0; i < kSpinIterations; ++i) {
    const T v = a.load(std::memory_order_acquire);
    if (v != old) return v;
    TESSERA_CPU_RELAX();
  }
  for (;;) {
    a.wait(old, std::memory_order_acquire);
    const T v = a.load(std::memory_order_acquire);
    if (v != old) return v;
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads < 1 || threads > 1024) fail("options", "threads", "must be between 1 and 1024, got {}", threads);
  ranges_.assign(static_cast<size_t>(threads), {0, 0});
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    seen = wait_change(generation_, seen);
    if (stop_.load(std::memory_order_acquire)) return;
    const std::pair<int64_t, int64_t> range = ranges_[index];
    if (range.first < range.second) (*job_)(range.first, range.second);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain) {
  if (n <= 0) return;
  const int64_t parts = std::min<int64_t>(threads(), std::max<int64_t>(1, n / std::max<int64_t>(1, grain)));
  if (parts <= 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  for (int64_t p = 0; p < threads(); ++p) ranges_[p] = p < parts ? std::pair{n * p / parts, n * (p + 1) / parts} : std::pair<int64_t, int64_t>{0, 0};
  job_ = &fn;
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_acq_rel);  // publishes job_ and ranges_
  generation_.notify_all();
  fn(ranges_[0].first, ranges_[0].second);
  for (int left = pending_.load(std::memory_order_acquire); left != 0; left = pending_.load(std::memory_order_acquire))
    wait_change(pending_, left);
}

}  // namespace tessera
