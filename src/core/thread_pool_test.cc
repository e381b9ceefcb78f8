#include "core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/reference/kernels.h"

namespace tessera {
namespace {

struct Recorded {
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::set<std::thread::id> threads;
};

// Runs parallel_for and checks that the non-empty ranges are disjoint, cover
// [0, n) exactly once, and respect `grain`.
void check_cover(ThreadPool& pool, int64_t n, int64_t grain) {
  SCOPED_TRACE(testing::Message() << "threads " << pool.threads() << " n " << n << " grain " << grain);
  std::vector<std::atomic<int>> hits(static_cast<size_t>(std::max<int64_t>(n, 1)));
  for (auto& h : hits) h = 0;
  Recorded rec;
  pool.parallel_for(
      n,
      [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
        std::lock_guard<std::mutex> lock(rec.mu);
        rec.ranges.push_back({b, e});
      },
      grain);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i;
  std::vector<std::pair<int64_t, int64_t>> nonempty;
  for (auto [b, e] : rec.ranges) {
    ASSERT_LE(0, b);
    ASSERT_LE(b, e);
    ASSERT_LE(e, std::max<int64_t>(n, 0));
    if (b < e) nonempty.push_back({b, e});
  }
  if (n <= 0) {
    EXPECT_TRUE(nonempty.empty());
    return;
  }
  std::sort(nonempty.begin(), nonempty.end());
  ASSERT_EQ(nonempty.front().first, 0);
  ASSERT_EQ(nonempty.back().second, n);
  for (size_t i = 1; i < nonempty.size(); ++i) ASSERT_EQ(nonempty[i - 1].second, nonempty[i].first);
  if (n >= grain) {
    for (auto [b, e] : nonempty) EXPECT_GE(e - b, grain) << "range " << b << ".." << e;
  } else {
    EXPECT_EQ(nonempty.size(), 1u);  // shorter than one grain: nothing to split
  }
}

TEST(ThreadPool, ReportsThreadCount) {
  for (int t = 1; t <= 4; ++t) {
    ThreadPool pool(t);
    EXPECT_EQ(pool.threads(), t);
  }
}

TEST(ThreadPool, CoversRangeExactlyOnce) {
  for (int t = 1; t <= 4; ++t) {
    ThreadPool pool(t);
    for (int64_t n : {0, 1, 2, 3, 4, 5, 7, 8, 13, 64, 100, 1000, 12345}) check_cover(pool, n, 1);
  }
}

TEST(ThreadPool, RespectsGrain) {
  for (int t = 1; t <= 4; ++t) {
    ThreadPool pool(t);
    for (int64_t grain : {2, 3, 7, 16, 100})
      for (int64_t n : {0, 1, 5, 15, 16, 17, 31, 33, 64, 99, 100, 101, 250, 1000}) check_cover(pool, n, grain);
  }
}

TEST(ThreadPool, NegativeOrZeroNeverCallsWithWork) {
  ThreadPool pool(3);
  std::atomic<int64_t> covered{0};
  for (int64_t n : {0, -1, -100})
    pool.parallel_for(n, [&](int64_t b, int64_t e) { covered += std::max<int64_t>(0, e - b); });
  EXPECT_EQ(covered.load(), 0);
}

TEST(ThreadPool, UsesThePoolsThreadsIncludingCaller) {
  ThreadPool pool(3);
  Recorded rec;
  pool.parallel_for(300, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(rec.mu);
    if (b < e) {
      rec.ranges.push_back({b, e});
      rec.threads.insert(std::this_thread::get_id());
    }
  });
  EXPECT_GE(rec.ranges.size(), 3u);
  EXPECT_LE(rec.threads.size(), 3u);
  EXPECT_TRUE(rec.threads.count(std::this_thread::get_id()));
}

// A thread that stalls on its first piece (a late wake-up, a busy core) does
// not hold the call up: the others take the rest of its share.
TEST(ThreadPool, IdleThreadsStealFromAStalledOne) {
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  const int64_t n = 1600;
  std::atomic<int64_t> by_caller{0};
  std::atomic<bool> stalled{false};
  pool.parallel_for(n, [&](int64_t b, int64_t e) {
    if (std::this_thread::get_id() == caller) {
      by_caller += e - b;
    } else if (!stalled.exchange(true)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  // The worker keeps only the piece it stalled on (one unit: n / 16).
  EXPECT_GE(by_caller.load(), n - n / 16);
}

TEST(ThreadPool, ManyRepeatedCalls) {
  std::mt19937 rng(42);
  for (int t = 1; t <= 4; ++t) {
    ThreadPool pool(t);
    for (int call = 0; call < 2000; ++call) {
      const int64_t n = static_cast<int64_t>(rng() % 40);
      std::atomic<int64_t> sum{0};
      pool.parallel_for(n, [&](int64_t b, int64_t e) {
        int64_t s = 0;
        for (int64_t i = b; i < e; ++i) s += i + 1;
        sum += s;
      });
      ASSERT_EQ(sum.load(), n * (n + 1) / 2) << "threads " << t << " call " << call << " n " << n;
    }
  }
}

TEST(ThreadPool, ConstructAndDestroyRepeatedly) {
  for (int round = 0; round < 50; ++round) {
    const int t = 1 + round % 4;
    auto pool = std::make_unique<ThreadPool>(t);
    if (round % 3 != 0) {  // some pools never run a job
      std::atomic<int64_t> count{0};
      pool->parallel_for(10 + round, [&](int64_t b, int64_t e) { count += e - b; });
      EXPECT_EQ(count.load(), 10 + round);
    }
    pool.reset();  // must join its workers without hanging
  }
}

TEST(ThreadPool, ParallelLinearMatchesSingleThreadBitwise) {
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.0f, 1.0f);
  const int64_t rows = 3, in = 77, out = 53;
  std::vector<float> x(rows * in), w(out * in), bias(out);
  for (float& v : x) v = d(rng);
  for (float& v : w) v = d(rng);
  for (float& v : bias) v = d(rng);

  std::vector<float> single(rows * out);
  ref::linear(x.data(), rows, in, w.data(), bias.data(), out, 0, out, single.data());

  ThreadPool pool(3);
  for (int64_t grain : {1, 4, 16}) {
    std::vector<float> multi(rows * out, -1.0f);
    pool.parallel_for(
        out,
        [&](int64_t b, int64_t e) { ref::linear(x.data(), rows, in, w.data(), bias.data(), out, b, e, multi.data()); },
        grain);
    EXPECT_EQ(std::memcmp(single.data(), multi.data(), sizeof(float) * single.size()), 0) << "grain " << grain;
  }
}

}  // namespace
}  // namespace tessera
