#include "runtime/thread_pool.h"

#include <algorithm>

#include "core/error.h"

namespace tessera {

ThreadPool::ThreadPool(int threads) {
  if (threads < 1 || threads > 1024) fail("options", "threads", "must be between 1 and 1024, got {}", threads);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    std::pair<int64_t, int64_t> range;
    const std::function<void(int64_t, int64_t)>* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      range = ranges_[index];
      job = job_;
    }
    if (range.first < range.second) (*job)(range.first, range.second);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain) {
  if (n <= 0) return;
  const int64_t parts = std::min<int64_t>(threads(), std::max<int64_t>(1, n / std::max<int64_t>(1, grain)));
  if (parts <= 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  std::vector<std::pair<int64_t, int64_t>> ranges(threads(), {0, 0});
  for (int64_t p = 0; p < parts; ++p) ranges[p] = {n * p / parts, n * (p + 1) / parts};
  {
    std::lock_guard<std::mutex> lock(mu_);
    ranges_ = std::move(ranges);
    job_ = &fn;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  fn(ranges_[0].first, ranges_[0].second);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
}

}  // namespace tessera
