#include "convert/palettize.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

#include "core/error.h"

namespace tessera {
namespace {

// A float's bits mapped so that unsigned order is numeric order (-0 just
// below +0; NaN never reaches here).
inline uint32_t order_key(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Sorts keys (order_key << 32 | position) by their high 32 bits, stably:
// LSD radix sort in three 11-bit passes. Positions arrive ascending, so the
// result equals sorting the whole 64-bit keys.
void radix_sort_keys(std::vector<uint64_t>& keys) {
  constexpr int kBits = 11, kBuckets = 1 << kBits;
  const size_t n = keys.size();
  std::vector<uint32_t> count(3 * kBuckets, 0);
  for (uint64_t k : keys) {
    const uint32_t hi = static_cast<uint32_t>(k >> 32);
    ++count[hi & (kBuckets - 1)];
    ++count[kBuckets + ((hi >> kBits) & (kBuckets - 1))];
    ++count[2 * kBuckets + (hi >> (2 * kBits))];
  }
  std::vector<uint64_t> tmp(n);
  for (int pass = 0; pass < 3; ++pass) {
    uint32_t* c = count.data() + pass * kBuckets;
    const int shift = 32 + pass * kBits;
    if (c[(keys[0] >> shift) & (kBuckets - 1)] == n) continue;  // one bucket: already in order
    uint32_t sum = 0;
    for (int b = 0; b < kBuckets; ++b) {
      const uint32_t v = c[b];
      c[b] = sum;
      sum += v;
    }
    for (uint64_t k : keys) tmp[c[(k >> shift) & (kBuckets - 1)]++] = k;
    keys.swap(tmp);
  }
}

inline double dist(float x, float c) { return std::fabs(static_cast<double>(x) - static_cast<double>(c)); }
inline double sq(double d) { return d * d; }

// Uniform double in [0, 1) from the raw 64-bit engine output.
inline double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Nearest-centroid assignment of the sorted values sv[0..n) to the ascending
// centroids c[0..k): cluster j is sv[L[j] .. L[j+1]). A value goes to the
// nearer of its two neighbouring centroids, ties to the lower index; of equal
// centroids only the first gets values.
void assign(const float* sv, int64_t n, const float* c, int k, int64_t* L) {
  L[0] = 0;
  L[k] = n;
  for (int j = 1; j < k; ++j) {
    if (c[j] == c[j - 1]) {
      L[j] = -1;  // filled from the right below: cluster j stays empty
      continue;
    }
    const float a = c[j - 1], b = c[j];
    L[j] = std::partition_point(sv, sv + n, [a, b](float x) { return !(dist(x, b) < dist(x, a)); }) - sv;
  }
  for (int j = k - 1; j >= 1; --j)
    if (L[j] < 0) L[j] = L[j + 1];
  for (int j = 1; j <= k; ++j) L[j] = std::max(L[j], L[j - 1]);
}

// k-means++ seeding over the sorted values (more than k distinct ones).
// Squared distances to the nearest centre so far are kept per value, with
// block sums so that a draw costs O(n / B + B) instead of O(n).
void kmeans_pp(const float* sv, const double* sw, int64_t n, int k, std::mt19937_64& rng, float* c) {
  constexpr int64_t B = 256;
  const int64_t nb = (n + B - 1) / B;
  std::vector<double> d2(static_cast<size_t>(n)), bsum(static_cast<size_t>(nb));
  auto block_sum = [&](int64_t b) {
    double s = 0;
    for (int64_t i = b * B, e = std::min(n, i + B); i < e; ++i) s += d2[i];
    bsum[b] = s;
  };
  c[0] = sv[rng() % static_cast<uint64_t>(n)];
  for (int64_t i = 0; i < n; ++i) d2[i] = sw[i] * sq(dist(sv[i], c[0]));
  for (int64_t b = 0; b < nb; ++b) block_sum(b);
  for (int m = 1; m < k; ++m) {
    double total = 0;
    for (int64_t b = 0; b < nb; ++b) total += bsum[b];
    double t = uniform01(rng) * total;
    // The block holding the draw; rounding may run past the end, then take
    // the last block with any weight.
    int64_t blk = -1;
    for (int64_t b = 0; b < nb; ++b) {
      if (bsum[b] <= 0) continue;
      blk = b;
      if (t < bsum[b]) break;
      t -= bsum[b];
    }
    // Inside it: the first value whose running sum exceeds t (never one at
    // distance 0), else its last value with weight.
    int64_t pick = -1;
    double acc = 0;
    for (int64_t i = blk * B, e = std::min(n, i + B); i < e; ++i) {
      if (d2[i] <= 0) continue;
      pick = i;
      acc += d2[i];
      if (acc > t) break;
    }
    const float cm = sv[pick];
    c[m] = cm;
    // The values now nearer to cm form a contiguous run around pick.
    int64_t lo = pick, hi = pick;
    for (int64_t i = pick; i >= 0; --i) {
      const double d = sw[i] * sq(dist(sv[i], cm));
      if (!(d < d2[i])) break;
      d2[i] = d;
      lo = i;
    }
    for (int64_t i = pick + 1; i < n; ++i) {
      const double d = sw[i] * sq(dist(sv[i], cm));
      if (!(d < d2[i])) break;
      d2[i] = d;
      hi = i;
    }
    for (int64_t b = lo / B; b <= hi / B; ++b) block_sum(b);
  }
  std::sort(c, c + k);
}

// Re-seeds empty clusters: starting from the non-empty centroids, adds one
// at a time the value farthest from its nearest centroid (the farthest value
// of a contiguous cluster is one of its two ends; ties: lowest position).
void reseed(const float* sv, int64_t n, int k, std::vector<float>& c, const std::vector<int64_t>& L) {
  std::vector<float> cur;
  for (int j = 0; j < k; ++j)
    if (L[j + 1] > L[j]) cur.push_back(c[j]);
  std::vector<int64_t> Lc;
  while (static_cast<int>(cur.size()) < k) {
    const int m = static_cast<int>(cur.size());
    Lc.resize(m + 1);
    assign(sv, n, cur.data(), m, Lc.data());
    double best = 0;
    int64_t best_i = -1;
    for (int j = 0; j < m; ++j) {
      if (Lc[j + 1] == Lc[j]) continue;
      for (int64_t i : {Lc[j], Lc[j + 1] - 1}) {
        const double d = dist(sv[i], cur[j]);
        if (d > best) best = d, best_i = i;  // strict: ties keep the lowest position
      }
    }
    if (best_i < 0) {  // every value sits on a centroid (cannot happen with > k distinct values)
      cur.push_back(cur.back());
      continue;
    }
    const float v = sv[best_i];
    cur.insert(std::upper_bound(cur.begin(), cur.end(), v), v);
  }
  c = std::move(cur);
}

}  // namespace

uint64_t palette_group_seed(uint64_t seed, int64_t g) {
  return seed + 0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(g) + 1);
}

KMeansResult kmeans_1d(const float* values, const float* weights, int64_t n, int k, uint64_t seed, int iterations) {
  if (n < 1 || n > int64_t{std::numeric_limits<uint32_t>::max()})
    fail("", "kmeans", "{} values (1 to 2^32-1 supported)", n);
  if (k < 1 || k > 256) fail("", "kmeans", "{} clusters (1 to 256 supported)", k);
  // Sort (value, position) once.
  std::vector<uint64_t> keys(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(values[i])) fail("", "kmeans", "value {} at index {} is not finite", values[i], i);
    if (weights && !(weights[i] > 0 && std::isfinite(weights[i])))
      fail("", "kmeans", "weight {} at index {} is not a positive finite number", weights[i], i);
    keys[i] = (static_cast<uint64_t>(order_key(values[i])) << 32) | static_cast<uint64_t>(i);
  }
  radix_sort_keys(keys);
  std::vector<float> sv(static_cast<size_t>(n));
  std::vector<double> sw(static_cast<size_t>(n), 1.0);
  for (int64_t i = 0; i < n; ++i) {
    sv[i] = values[keys[i] & 0xffffffffu];
    if (weights) sw[i] = weights[keys[i] & 0xffffffffu];
  }

  KMeansResult res;
  std::vector<float>& c = res.centroids;
  std::vector<int64_t> L(static_cast<size_t>(k) + 1);

  int distinct = 1;
  for (int64_t i = 1; i < n && distinct <= k; ++i) distinct += sv[i] != sv[i - 1];
  if (distinct <= k) {
    c.push_back(sv[0]);
    for (int64_t i = 1; i < n; ++i)
      if (sv[i] != sv[i - 1]) c.push_back(sv[i]);
    while (static_cast<int>(c.size()) < k) c.push_back(c.back());
  } else {
    c.resize(static_cast<size_t>(k));
    std::mt19937_64 rng(seed);
    kmeans_pp(sv.data(), sw.data(), n, k, rng, c.data());
    // Prefix sums of weight and weight · value: a cluster's weighted mean is
    // two differences. Unit weights make these the count and the plain sum.
    std::vector<double> prefix(static_cast<size_t>(n) + 1), prefix_w(static_cast<size_t>(n) + 1);
    prefix[0] = prefix_w[0] = 0;
    for (int64_t i = 0; i < n; ++i) {
      prefix[i + 1] = prefix[i] + sw[i] * sv[i];
      prefix_w[i + 1] = prefix_w[i] + sw[i];
    }
    std::vector<int64_t> prev;
    while (res.iterations < iterations) {
      assign(sv.data(), n, c.data(), k, L.data());
      if (L == prev) break;  // converged: the centroids are already these clusters' means
      prev = L;
      int empty = 0;
      for (int j = 0; j < k; ++j) {
        const int64_t cnt = L[j + 1] - L[j];
        if (cnt == 0) {
          ++empty;
          continue;
        }
        c[j] = static_cast<float>((prefix[L[j + 1]] - prefix[L[j]]) / (prefix_w[L[j + 1]] - prefix_w[L[j]]));
      }
      ++res.iterations;
      if (empty > 0) {
        reseed(sv.data(), n, k, c, L);
        res.reseeds += empty;
      }
    }
  }

  assign(sv.data(), n, c.data(), k, L.data());
  res.indices.resize(static_cast<size_t>(n));
  double sse = 0;
  for (int j = 0; j < k; ++j) {
    for (int64_t i = L[j]; i < L[j + 1]; ++i) {
      res.indices[keys[i] & 0xffffffffu] = static_cast<uint8_t>(j);
      sse += sq(dist(sv[i], c[j]));
    }
  }
  res.sse = sse;
  return res;
}

void pack_indices(const uint8_t* idx, int64_t n, int bits, uint8_t* out) {
  const int64_t bytes = (n * bits + 7) / 8;
  std::memset(out, 0, static_cast<size_t>(bytes));
  const unsigned mask = (1u << bits) - 1u;
  for (int64_t i = 0; i < n; ++i) {
    const unsigned v = idx[i] & mask;
    const int64_t bit = i * bits;
    const int64_t byte = bit >> 3;
    const int shift = static_cast<int>(bit & 7);
    out[byte] = static_cast<uint8_t>(out[byte] | (v << shift));
    if (shift + bits > 8) out[byte + 1] = static_cast<uint8_t>(out[byte + 1] | (v >> (8 - shift)));
  }
}

void snap_to_int8_grid(const float* values, int64_t n, KMeansResult& r) {
  float m = 0;
  for (float c : r.centroids) m = std::max(m, std::fabs(c));
  if (m == 0) return;
  const float step = m / 127.0f;
  for (float& c : r.centroids) c = static_cast<float>(std::clamp<long>(std::lrint(c * (127.0f / m)), -127, 127)) * step;
  // Still ascending (rounding is monotonic); nearest entry, ties to the lower index.
  const int k = static_cast<int>(r.centroids.size());
  double sse = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = values[i];
    int best = 0;
    float best_d = std::fabs(v - r.centroids[0]);
    for (int j = 1; j < k; ++j) {
      const float d = std::fabs(v - r.centroids[j]);
      if (d < best_d) {
        best = j;
        best_d = d;
      }
    }
    r.indices[i] = static_cast<uint8_t>(best);
    sse += static_cast<double>(v - r.centroids[best]) * (v - r.centroids[best]);
  }
  r.sse = sse;
}

Palettized palettize(const float* w, int64_t rows, int64_t cols, const PalettizeOptions& o) {
  if (o.bits < 2 || o.bits > 4) fail("", "palettize", "{} index bits (2, 3 or 4 supported)", o.bits);
  if (rows < 1 || cols < 1) fail("", "palettize", "empty matrix [{}, {}]", rows, cols);
  if (cols % 8 != 0) fail("", "palettize", "{} columns is not a multiple of 8", cols);
  if (o.group_size < 1) fail("", "palettize", "group size {} (must be at least 1)", o.group_size);
  if (rows % o.group_size != 0)
    fail("", "palettize", "{} rows is not a multiple of the group size {}", rows, o.group_size);
  if (cols > std::numeric_limits<int64_t>::max() / 8 / rows) fail("", "palettize", "matrix [{}, {}] is too large", rows, cols);
  const int64_t gs = o.group_size, groups = rows / gs, n = gs * cols;
  if (n > int64_t{std::numeric_limits<uint32_t>::max()})
    fail("", "palettize", "group of {} rows × {} columns is too large", gs, cols);
  for (int64_t i = 0; i < rows * cols; ++i)
    if (!std::isfinite(w[i])) fail("", "palettize", "value {} at [{}, {}] is not finite", w[i], i / cols, i % cols);
  if (!o.row_weights != !o.column_weights) fail("", "palettize", "row and column weights must be given together");
  if (o.row_weights) {
    for (int64_t r = 0; r < rows; ++r)
      if (!(o.row_weights[r] > 0 && std::isfinite(o.row_weights[r])))
        fail("", "palettize", "row weight {} of row {} is not a positive finite number", o.row_weights[r], r);
    for (int64_t c = 0; c < cols; ++c)
      if (!(o.column_weights[c] > 0 && std::isfinite(o.column_weights[c])))
        fail("", "palettize", "column weight {} of column {} is not a positive finite number", o.column_weights[c], c);
  }

  const int k = 1 << o.bits;
  Palettized out;
  out.data.resize(static_cast<size_t>(rows * cols * o.bits / 8));
  out.palette.resize(static_cast<size_t>(groups * k));
  std::vector<double> sse(static_cast<size_t>(groups));
  const int64_t group_bytes = n * o.bits / 8;

  auto run_group = [&](int64_t g) {
    std::vector<float> weights;
    if (o.row_weights) {
      // Element (r, c) of the group weighs row_weights[r] · column_weights[c].
      weights.resize(static_cast<size_t>(n));
      for (int64_t r = 0; r < gs; ++r)
        for (int64_t c = 0; c < cols; ++c) weights[r * cols + c] = o.row_weights[g * gs + r] * o.column_weights[c];
    }
    KMeansResult r = kmeans_1d(w + g * n, o.row_weights ? weights.data() : nullptr, n, k,
                               palette_group_seed(o.seed, g), o.kmeans_iterations);
    if (o.int8_grid) snap_to_int8_grid(w + g * n, n, r);
    std::copy(r.centroids.begin(), r.centroids.end(), out.palette.begin() + g * k);
    // cols is a multiple of 8, so the group's rows pack back to back.
    pack_indices(r.indices.data(), n, o.bits, out.data.data() + g * group_bytes);
    sse[g] = r.sse;
  };

  int threads = o.threads;
  if (threads < 1) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = static_cast<int>(std::min<int64_t>(threads, groups));
  if (threads <= 1) {
    for (int64_t g = 0; g < groups; ++g) run_group(g);
  } else {
    std::atomic<int64_t> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto worker = [&] {
      try {
        for (int64_t g; (g = next.fetch_add(1)) < groups;) run_group(g);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(groups);
      }
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (std::thread& t : pool) t.join();
    if (error) std::rethrow_exception(error);
  }

  double total = 0;
  for (double s : sse) total += s;  // in group order: independent of threads
  out.mse = total / static_cast<double>(rows * cols);
  return out;
}

}  // namespace tessera
