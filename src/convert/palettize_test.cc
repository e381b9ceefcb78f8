#include "convert/palettize.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "core/weight_format.h"
#include "core/error.h"

namespace tessera {
namespace {

std::vector<float> gaussian(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(n));
  for (float& x : w) x = dist(rng);
  return w;
}

// palettize() knows nothing of row scales (quantize_weight adds them); its
// output is viewed as a LUT weight whose rows all have scale 1, so that a
// decoded value is exactly the palette entry. `unit_scales` must outlive the
// view.
WeightView view_of(const Palettized& p, int64_t rows, int64_t cols, int bits, int64_t gs,
                   std::vector<float>& unit_scales) {
  unit_scales.assign(static_cast<size_t>(rows), 1.0f);
  WeightView v;
  v.format = bits == 4 ? WeightFormat::Lut4 : bits == 3 ? WeightFormat::Lut3 : WeightFormat::Lut2;
  v.shape = {rows, cols};
  v.data = p.data.data();
  v.scales = unit_scales.data();
  v.palette = p.palette.data();
  v.group_size = gs;
  return v;
}

// Invariants of any k-means result: ascending centroids, every value at its
// nearest centroid (ties: lower index), sse as stated, and — when it stopped
// by convergence — every non-empty centroid the f32 mean of its values.
void check_kmeans(const std::vector<float>& x, const KMeansResult& r, int k, int max_iterations) {
  ASSERT_EQ(r.centroids.size(), static_cast<size_t>(k));
  ASSERT_EQ(r.indices.size(), x.size());
  for (int j = 1; j < k; ++j) ASSERT_LE(r.centroids[j - 1], r.centroids[j]);
  std::vector<double> sum(k, 0.0);
  std::vector<int64_t> count(k, 0);
  double sse = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    int best = 0;
    for (int j = 1; j < k; ++j)
      if (std::fabs(static_cast<double>(x[i]) - r.centroids[j]) < std::fabs(static_cast<double>(x[i]) - r.centroids[best]))
        best = j;
    ASSERT_EQ(r.indices[i], best) << "value " << x[i];
    const double d = static_cast<double>(x[i]) - r.centroids[best];
    sse += d * d;
    sum[best] += x[i];
    ++count[best];
  }
  EXPECT_NEAR(r.sse, sse, 1e-9 * sse);
  if (r.iterations < max_iterations) {
    for (int j = 0; j < k; ++j) {
      if (count[j] == 0) continue;
      EXPECT_NEAR(r.centroids[j], sum[j] / count[j], 1e-6 * (1 + std::fabs(sum[j] / count[j]))) << j;
    }
  }
}

TEST(Palettize, RecoversWellSeparatedClusters) {
  for (int bits : {2, 3, 4}) {
    const int k = 1 << bits;
    for (uint64_t seed : {0ull, 1ull, 12345ull}) {
      std::mt19937 rng(static_cast<uint32_t>(seed * 31 + bits));
      std::uniform_real_distribution<float> noise(-0.01f, 0.01f);
      // Cluster j around 3j - 20 with an uneven number of members.
      std::vector<float> x;
      std::vector<int> truth;
      for (int j = 0; j < k; ++j)
        for (int i = 0; i < 20 + 7 * ((j * 5) % k); ++i) {
          x.push_back(3.0f * static_cast<float>(j) - 20.0f + noise(rng));
          truth.push_back(j);
        }
      std::shuffle(x.begin(), x.end(), std::mt19937(7));
      std::shuffle(truth.begin(), truth.end(), std::mt19937(7));  // same permutation
      const KMeansResult r = kmeans_1d(x.data(), nullptr, static_cast<int64_t>(x.size()), k, seed, 25);
      check_kmeans(x, r, k, 25);
      std::vector<double> mean(k, 0.0);
      std::vector<int> count(k, 0);
      for (size_t i = 0; i < x.size(); ++i) mean[truth[i]] += x[i], ++count[truth[i]];
      for (int j = 0; j < k; ++j) EXPECT_NEAR(r.centroids[j], mean[j] / count[j], 1e-6) << bits << " " << seed << " " << j;
      for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(r.indices[i], truth[i]);
      EXPECT_LE(r.iterations, 3);  // stops as soon as the assignment repeats
    }
  }
}

TEST(Palettize, KMeansInvariantsOnHardData) {
  // Gaussian, heavy-tailed and heavily duplicated data; 9 distinct values
  // for 8 clusters forces a merge.
  std::vector<std::vector<float>> sets;
  sets.push_back(gaussian(5000, 21));
  {
    auto g = gaussian(3000, 22);
    for (float& v : g) v = v * v * v;
    sets.push_back(g);
  }
  {
    std::vector<float> d(2000, 0.0f);
    for (int i = 0; i < 9; ++i) d[i * 7] = static_cast<float>(i * i) - 3.0f;
    sets.push_back(d);
  }
  for (const auto& x : sets)
    for (int k : {1, 2, 8, 16})
      for (int iters : {0, 3, 25}) {
        SCOPED_TRACE(::testing::Message() << "k=" << k << " iters=" << iters << " n=" << x.size());
        const KMeansResult r = kmeans_1d(x.data(), nullptr, static_cast<int64_t>(x.size()), k, 3, iters);
        check_kmeans(x, r, k, iters);
      }
}

// A Lloyd update can leave a cluster empty (its mean's cell holds none of
// the values); it is re-seeded and every cluster ends non-empty. This input
// and seed were found by search to hit that path with this seeding: if the
// k-means++ draw ever changes, search for a new case.
TEST(Palettize, EmptyClusterIsReseeded) {
  const std::vector<float> x = {-168.5f, 361.5f, 56.5f, 77.25f, 9.75f, -1.0f, 291.25f, -35.25f};
  const KMeansResult r = kmeans_1d(x.data(), nullptr, 8, 3, 0, 25);
  EXPECT_GT(r.reseeds, 0);
  check_kmeans(x, r, 3, 25);
  std::vector<int> used(3, 0);
  for (uint8_t i : r.indices) used[i] = 1;
  EXPECT_EQ(used, (std::vector<int>{1, 1, 1}));
}

// With no Lloyd iterations the centroids are the k-means++ picks; when the
// picks are -2 and 2, the value 0 is exactly halfway and goes to index 0.
TEST(Palettize, TiesGoToTheLowerCentroid) {
  const std::vector<float> x = {-2.0f, 0.0f, 2.0f, -2.0f, 2.0f};
  int ties = 0;
  for (uint64_t seed = 0; seed < 32; ++seed) {
    const KMeansResult r = kmeans_1d(x.data(), nullptr, 5, 2, seed, 0);
    check_kmeans(x, r, 2, 0);
    if (r.centroids == std::vector<float>{-2.0f, 2.0f}) {
      ++ties;
      EXPECT_EQ(r.indices[1], 0) << seed;
    }
  }
  EXPECT_GT(ties, 0);  // some seed picked -2 and 2
}

TEST(Palettize, FewDistinctValuesAreExact) {
  const std::vector<float> x = {2.0f, -1.0f, 2.0f, 0.5f, -1.0f, 2.0f, 0.5f, 0.5f};
  const KMeansResult r = kmeans_1d(x.data(), nullptr, 8, 4, 0, 25);
  EXPECT_EQ(r.centroids, (std::vector<float>{-1.0f, 0.5f, 2.0f, 2.0f}));  // padded with the largest
  EXPECT_EQ(r.sse, 0.0);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(r.centroids[r.indices[i]], x[i]);
  EXPECT_NE(r.indices[0], 3);  // ties go to the lower index

  // A zero matrix palettizes to zeros.
  std::vector<float> z(16 * 16, 0.0f);
  PalettizeOptions o;
  o.bits = 3;
  const Palettized p = palettize(z.data(), 16, 16, o);
  EXPECT_EQ(p.mse, 0.0);
  for (float v : p.palette) EXPECT_EQ(v, 0.0f);
}

TEST(Palettize, MseShrinksWithMoreBitsAndBeatsUniformInt4) {
  const int64_t rows = 64, cols = 576, gs = 16;
  const auto w = gaussian(rows * cols, 99);
  double prev = INFINITY;
  double mse4 = 0;
  for (int bits : {2, 3, 4}) {
    PalettizeOptions o;
    o.bits = bits;
    o.group_size = gs;
    const Palettized p = palettize(w.data(), rows, cols, o);
    EXPECT_LE(p.mse, prev) << bits;
    prev = p.mse;
    if (bits == 4) mse4 = p.mse;
  }
  // Uniform int4 of the same data: symmetric per row (scale = max|w| / 7,
  // q in [-7, 7]) and asymmetric per group of rows (16 levels, min to max).
  double sym = 0, asym = 0;
  for (int64_t r = 0; r < rows; ++r) {
    float m = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, std::fabs(w[r * cols + c]));
    const double s = m / 7.0;
    for (int64_t c = 0; c < cols; ++c) {
      const double x = w[r * cols + c];
      const double d = s * std::clamp(std::round(x / s), -7.0, 7.0) - x;
      sym += d * d;
    }
  }
  for (int64_t g = 0; g < rows / gs; ++g) {
    const float* b = w.data() + g * gs * cols;
    const auto [lo, hi] = std::minmax_element(b, b + gs * cols);
    const double step = (static_cast<double>(*hi) - *lo) / 15.0;
    for (int64_t i = 0; i < gs * cols; ++i) {
      const double d = *lo + step * std::round((b[i] - *lo) / step) - b[i];
      asym += d * d;
    }
  }
  sym /= static_cast<double>(rows * cols);
  asym /= static_cast<double>(rows * cols);
  EXPECT_LT(mse4, sym);
  EXPECT_LT(mse4, asym);
  // Lloyd-Max for 16 levels of a unit Gaussian: ≈ 0.0095.
  EXPECT_LT(mse4, 0.011);
  EXPECT_GT(mse4, 0.008);
}

TEST(Palettize, DeterministicForSeedAndThreadCount) {
  const int64_t rows = 64, cols = 96;
  auto w = gaussian(rows * cols, 5);
  for (int bits : {2, 3, 4}) {
    PalettizeOptions o;
    o.bits = bits;
    o.group_size = 4;
    o.seed = 77;
    const Palettized a = palettize(w.data(), rows, cols, o);
    const Palettized b = palettize(w.data(), rows, cols, o);
    EXPECT_EQ(a.data, b.data);
    EXPECT_EQ(a.palette, b.palette);
    EXPECT_EQ(a.mse, b.mse);
    for (int threads : {3, 0, 64}) {
      o.threads = threads;
      const Palettized t = palettize(w.data(), rows, cols, o);
      EXPECT_EQ(a.data, t.data) << threads;
      EXPECT_EQ(a.palette, t.palette) << threads;
      EXPECT_EQ(a.mse, t.mse) << threads;
    }
  }
}

// Each group of rows is the k-means of that group alone (seeded per group),
// and the packed data decodes to palette[index] row by row.
TEST(Palettize, GroupsArePackedKMeansResults) {
  const int64_t rows = 12, cols = 40, gs = 3;
  const auto w = gaussian(rows * cols, 8);
  for (int bits : {2, 3, 4}) {
    PalettizeOptions o;
    o.bits = bits;
    o.group_size = gs;
    o.seed = 4;
    o.threads = 2;
    const Palettized p = palettize(w.data(), rows, cols, o);
    ASSERT_EQ(p.data.size(), static_cast<size_t>(rows * cols * bits / 8));
    const int k = 1 << bits;
    std::vector<float> unit_scales;
    const WeightView v = view_of(p, rows, cols, bits, gs, unit_scales);
    std::vector<float> out(cols);
    double sse = 0;
    for (int64_t g = 0; g < rows / gs; ++g) {
      const KMeansResult r = kmeans_1d(w.data() + g * gs * cols, nullptr, gs * cols, k, palette_group_seed(4, g), 25);
      for (int j = 0; j < k; ++j) ASSERT_EQ(p.palette[g * k + j], r.centroids[j]);
      for (int64_t rr = 0; rr < gs; ++rr) {
        decode_row(v, g * gs + rr, out.data());
        for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(out[c], r.centroids[r.indices[rr * cols + c]]);
      }
      sse += r.sse;
    }
    EXPECT_NEAR(p.mse, sse / (rows * cols), 1e-15);
  }
}

TEST(Palettize, PackIndicesMatchesBitLevelReference) {
  std::mt19937 rng(3);
  for (int bits : {2, 3, 4}) {
    for (int64_t n : {8, 16, 40, 64}) {
      std::vector<uint8_t> idx(n);
      for (auto& x : idx) x = static_cast<uint8_t>(rng() % (1u << bits));
      std::vector<uint8_t> ref(n * bits / 8, 0);
      for (int64_t c = 0; c < n; ++c)
        for (int b = 0; b < bits; ++b)
          if ((idx[c] >> b) & 1) ref[(c * bits + b) / 8] |= static_cast<uint8_t>(1u << ((c * bits + b) % 8));
      std::vector<uint8_t> got(n * bits / 8, 0xaa);  // overwritten, not or-ed
      pack_indices(idx.data(), n, bits, got.data());
      EXPECT_EQ(got, ref) << bits << " " << n;
    }
  }
  const uint8_t seq[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  uint8_t three[3];
  pack_indices(seq, 8, 3, three);
  EXPECT_EQ(three[0], 0x88);
  EXPECT_EQ(three[1], 0xc6);
  EXPECT_EQ(three[2], 0xfa);
}

TEST(Palettize, GroupSeedsDiffer) {
  EXPECT_EQ(palette_group_seed(0, 0), 0x9E3779B97F4A7C15ull);
  EXPECT_NE(palette_group_seed(0, 1), palette_group_seed(0, 0));
  EXPECT_NE(palette_group_seed(1, 0), palette_group_seed(0, 0));
}

TEST(Palettize, RejectsBadArguments) {
  std::vector<float> w(32 * 16, 1.0f);
  PalettizeOptions o;
  o.bits = 5;
  EXPECT_THROW(palettize(w.data(), 32, 16, o), Error);
  o.bits = 1;
  EXPECT_THROW(palettize(w.data(), 32, 16, o), Error);
  o.bits = 4;
  EXPECT_THROW(palettize(w.data(), 32, 12, o), Error);   // cols % 8
  EXPECT_THROW(palettize(w.data(), 24, 16, o), Error);   // rows % group
  o.group_size = 0;
  EXPECT_THROW(palettize(w.data(), 32, 16, o), Error);
  o.group_size = 16;
  w[40] = std::nanf("");
  EXPECT_THROW(palettize(w.data(), 32, 16, o), Error);
  EXPECT_THROW(kmeans_1d(w.data(), nullptr, 64, 4, 0, 5), Error);
  EXPECT_THROW(kmeans_1d(w.data(), nullptr, 0, 4, 0, 5), Error);
  EXPECT_THROW(kmeans_1d(w.data(), nullptr, 8, 0, 0, 5), Error);
  EXPECT_THROW(kmeans_1d(w.data(), nullptr, 8, 257, 0, 5), Error);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// int8_grid: every entry is q · m / 127 with integer q (m: the group's
// largest |entry|), each value points at its nearest entry, and the error
// grows only a little over the free k-means palette.
TEST(Palettize, Int8GridPalettesAreOnTheGridAndNearest) {
  std::mt19937 rng(21);
  std::normal_distribution<float> d(0.0f, 0.3f);
  const int64_t rows = 32, cols = 64;
  std::vector<float> w(rows * cols);
  for (float& v : w) v = std::clamp(d(rng), -1.0f, 1.0f);
  PalettizeOptions o;
  o.bits = 4;
  o.group_size = 16;
  const Palettized free = palettize(w.data(), rows, cols, o);
  o.int8_grid = true;
  const Palettized grid = palettize(w.data(), rows, cols, o);
  for (int64_t g = 0; g < rows / 16; ++g) {
    const float* pal = grid.palette.data() + g * 16;
    float m = 0;
    for (int i = 0; i < 16; ++i) m = std::max(m, std::fabs(pal[i]));
    for (int i = 0; i < 16; ++i) {
      const float q = pal[i] * (127.0f / m);
      EXPECT_NEAR(q, std::nearbyint(q), 1e-4) << "group " << g << " entry " << i;
      if (i > 0) {
        EXPECT_LE(pal[i - 1], pal[i]);
      }
    }
  }
  for (int64_t i = 0; i < rows * cols; ++i) {
    const int64_t g = i / (16 * cols);
    const float* pal = grid.palette.data() + g * 16;
    const uint8_t b = grid.data[i / 2];
    const int idx = (i % 2 == 0) ? (b & 0xf) : (b >> 4);
    for (int j = 0; j < 16; ++j) ASSERT_LE(std::fabs(w[i] - pal[idx]), std::fabs(w[i] - pal[j])) << i;
  }
  EXPECT_GE(grid.mse, free.mse);
  EXPECT_LE(grid.mse, free.mse * 1.05);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// Unit weights reproduce the unweighted k-means bit for bit, and so does any
// power-of-two weight (every weighted sum is then an exact rescaling).
TEST(Palettize, UniformWeightsGiveTheUnweightedResult) {
  const std::vector<float> x = gaussian(3000, 8);
  const KMeansResult plain = kmeans_1d(x.data(), nullptr, 3000, 16, 5, 25);
  for (float w : {1.0f, 4.0f, 0.125f}) {
    const std::vector<float> weights(x.size(), w);
    const KMeansResult r = kmeans_1d(x.data(), weights.data(), 3000, 16, 5, 25);
    EXPECT_EQ(r.centroids, plain.centroids) << "weight " << w;
    EXPECT_EQ(r.indices, plain.indices) << "weight " << w;
  }
}

// Converged weighted clusters sit at their weighted means.
TEST(Palettize, WeightedCentroidsAreWeightedMeans) {
  const std::vector<float> x = {0.0f, 1.0f, 10.0f, 11.0f, 12.0f};
  const std::vector<float> w = {1.0f, 3.0f, 2.0f, 1.0f, 1.0f};
  const KMeansResult r = kmeans_1d(x.data(), w.data(), 5, 2, 0, 25);
  ASSERT_EQ(r.centroids.size(), 2u);
  EXPECT_FLOAT_EQ(r.centroids[0], 0.75f);                   // (0·1 + 1·3) / 4
  EXPECT_FLOAT_EQ(r.centroids[1], (20.0f + 11 + 12) / 4);  // (10·2 + 11 + 12) / 4
  EXPECT_EQ(r.indices, (std::vector<uint8_t>{0, 0, 1, 1, 1}));
}

// Heavy columns get the palette's attention. A palette is a function of the
// value alone, so weights matter where heavy columns hold other values than
// light ones — here (as with the outlier input channels of LLMs) small
// weights: their error shrinks against the unweighted palettes, and the
// weighted objective drops.
TEST(Palettize, ColumnWeightsMoveErrorOffHeavyColumns) {
  const int64_t rows = 32, cols = 64;
  std::vector<float> w = gaussian(rows * cols, 9);
  std::vector<float> row_w(rows, 1.0f), col_w(cols, 1.0f);
  for (int64_t c = 0; c < cols; c += 4) col_w[c] = 1000.0f;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; c += 4) w[r * cols + c] *= 0.05f;
  PalettizeOptions o;
  o.group_size = 16;
  const Palettized plain = palettize(w.data(), rows, cols, o);
  o.row_weights = row_w.data();
  o.column_weights = col_w.data();
  const Palettized weighted = palettize(w.data(), rows, cols, o);
  auto errors = [&](const Palettized& p) {
    std::vector<float> ones;
    const WeightView v = view_of(p, rows, cols, 4, 16, ones);
    std::vector<float> row(cols);
    double heavy = 0, objective = 0;
    for (int64_t r = 0; r < rows; ++r) {
      decode_row(v, r, row.data());
      for (int64_t c = 0; c < cols; ++c) {
        const double e = static_cast<double>(row[c]) - w[r * cols + c];
        objective += col_w[c] * e * e;
        if (col_w[c] > 1) heavy += e * e;
      }
    }
    return std::pair{heavy, objective};
  };
  const auto [heavy_plain, obj_plain] = errors(plain);
  const auto [heavy_weighted, obj_weighted] = errors(weighted);
  EXPECT_LT(heavy_weighted, 0.5 * heavy_plain);
  EXPECT_LT(obj_weighted, 0.5 * obj_plain);
}

TEST(Palettize, RejectsBadWeights) {
  const std::vector<float> x = gaussian(64, 10);
  std::vector<float> weights(64, 1.0f);
  weights[7] = 0.0f;
  EXPECT_THROW(kmeans_1d(x.data(), weights.data(), 64, 4, 0, 5), Error);
  weights[7] = std::nanf("");
  EXPECT_THROW(kmeans_1d(x.data(), weights.data(), 64, 4, 0, 5), Error);
  std::vector<float> row_w(8, 1.0f), col_w(8, 1.0f);
  PalettizeOptions o;
  o.group_size = 4;
  o.row_weights = row_w.data();
  EXPECT_THROW(palettize(x.data(), 8, 8, o), Error);  // column weights missing
  o.column_weights = col_w.data();
  col_w[3] = -1.0f;
  EXPECT_THROW(palettize(x.data(), 8, 8, o), Error);
  col_w[3] = 1.0f;
  EXPECT_NO_THROW(palettize(x.data(), 8, 8, o));
}

}  // namespace
}  // namespace tessera
