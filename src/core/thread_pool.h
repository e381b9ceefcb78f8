// A persistent pool of worker threads (created once, not per op). parallel_for
// gives each thread a contiguous share of [0, n), which it runs front to back
// in pieces; a thread that finishes its share takes pieces from the back of
// the others' (work stealing), so a thread that started late, or runs on a
// slower core, does not hold the call up. Which thread computes an element
// never changes what it computes: kernels that give each output element to
// exactly one range produce the same bits for any thread count and any
// stealing.
//
// Each share is one 64-bit atomic word (front | back) on its own cache line:
// its owner advances the front with a compare-and-swap that stays in its own
// cache while nobody steals; a thief moves the back down the same way.
//
// A decode step dispatches hundreds of small ops, so hand-off must cost
// microseconds, not a condition-variable round trip: idle workers spin on an
// atomic generation counter for a short while (about 50 µs) before they
// sleep on it (C++20 atomic wait, a futex), and the caller spins likewise
// while it waits for the last range.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera {

// A non-owning reference to a callable fn(begin, end): two words, no heap
// allocation (a std::function holding a lambda that captures more than two
// pointers allocates on every call, and a decode step makes a few hundred
// parallel_for calls). Valid while the callable lives; parallel_for returns
// before the full-expression that made its argument ends.
class RangeFn {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RangeFn>>>
  RangeFn(F&& f)  // NOLINT: implicit, so lambdas pass straight in
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* obj, int64_t begin, int64_t end) {
          (*static_cast<std::remove_reference_t<F>*>(obj))(begin, end);
        }) {}
  void operator()(int64_t begin, int64_t end) const { call_(obj_, begin, end); }

 private:
  void* obj_;
  void (*call_)(void*, int64_t, int64_t);
};

class ThreadPool {
 public:
  // threads >= 1; the calling thread is one of them.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint ranges covering [0, n), each at least
  // `grain` long where possible (n < grain: one call), and returns when all
  // have finished. Not reentrant: one parallel_for at a time per pool.
  void parallel_for(int64_t n, RangeFn fn, int64_t grain = 1);

 private:
  // Thread `index`'s share of the current job, in units (see parallel_for).
  struct alignas(64) Share {
    std::atomic<uint64_t> front_back{0};  // front in the low 32 bits, back in the high
  };

  void worker_loop(int index);
  // Runs the job's units: this thread's share, then stolen ones.
  void run_units(int index);
  void run_unit(uint64_t u) const;

  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  // The current job: fn over [0, n_), cut into grains_ grains (grain_ long,
  // the last one taking the rest), grouped into units_ units of whole grains.
  const RangeFn* job_ = nullptr;
  int64_t n_ = 0, grain_ = 1, grains_ = 0, units_ = 0;
  std::unique_ptr<Share[]> shares_;
};

}  // namespace tessera
