#include "core/thread_pool.h"

#include <algorithm>

#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TESSERA_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
// An instruction barrier: a short, real delay per spin (the hint Rust's
// spin_loop uses on AArch64; `yield` is a no-op on most Arm cores).
#define TESSERA_CPU_RELAX() asm volatile("isb" ::: "memory")
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

constexpr uint64_t pack(uint64_t front, uint64_t back) { return front | (back << 32); }
constexpr uint64_t front_of(uint64_t v) { return v & 0xffffffffu; }
constexpr uint64_t back_of(uint64_t v) { return v >> 32; }

// Units per thread: enough for stealing to even the threads out to about
// an eighth of a share, few enough that each is worth a compare-and-swap.
constexpr int64_t kUnitsPerThread = 8;

// Claims one unit of a share: its first (the owner) or its last (a thief);
// false once the share is empty.
bool take_unit(std::atomic<uint64_t>& share, bool first, uint64_t& unit) {
  for (uint64_t v = share.load(std::memory_order_acquire);;) {
    const uint64_t f = front_of(v), b = back_of(v);
    if (f >= b) return false;
    unit = first ? f : b - 1;
    if (share.compare_exchange_weak(v, first ? pack(f + 1, b) : pack(f, b - 1), std::memory_order_acq_rel,
                                    std::memory_order_acquire))
      return true;
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads < 1 || threads > 1024) fail("options", "threads", "must be between 1 and 1024, got {}", threads);
  shares_ = std::make_unique<Share[]>(static_cast<size_t>(threads));
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
    run_units(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

// Unit u covers grains [grains·u/units, grains·(u+1)/units); grain k starts
// at k·grain, and the last one ends at n.
void ThreadPool::run_unit(uint64_t u) const {
  auto start = [&](uint64_t v) {
    const int64_t k = grains_ * static_cast<int64_t>(v) / units_;
    return k == grains_ ? n_ : k * grain_;
  };
  (*job_)(start(u), start(u + 1));
}

void ThreadPool::run_units(int index) {
  // Own share front to back, then the others' from their backs, until every
  // share is empty.
  const int threads = this->threads();
  uint64_t unit = 0;
  for (int k = 0; k < threads; ++k) {
    std::atomic<uint64_t>& share = shares_[static_cast<size_t>((index + k) % threads)].front_back;
    while (take_unit(share, k == 0, unit)) run_unit(unit);
  }
}

void ThreadPool::parallel_for(int64_t n, RangeFn fn, int64_t grain) {
  if (n <= 0) return;
  const int64_t g = std::max<int64_t>(1, grain);
  const int64_t parts = std::min<int64_t>(threads(), std::max<int64_t>(1, n / g));
  if (parts <= 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  // Units of whole grains; thread p's share is units [units·p/parts,
  // units·(p+1)/parts) (threads past `parts` start with none and only steal).
  n_ = n;
  grain_ = g;
  grains_ = n / g;
  units_ = std::min<int64_t>(grains_, parts * kUnitsPerThread);
  for (int64_t p = 0; p < threads(); ++p) {
    const uint64_t f = p < parts ? static_cast<uint64_t>(units_ * p / parts) : 0;
    const uint64_t b = p < parts ? static_cast<uint64_t>(units_ * (p + 1) / parts) : 0;
    shares_[static_cast<size_t>(p)].front_back.store(pack(f, b), std::memory_order_relaxed);
  }
  job_ = &fn;
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_acq_rel);  // publishes the job and the shares
  generation_.notify_all();
  run_units(0);
  for (int left = pending_.load(std::memory_order_acquire); left != 0; left = pending_.load(std::memory_order_acquire))
    wait_change(pending_, left);
}

}  // namespace tessera
