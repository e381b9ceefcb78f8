// Reference kernels against naive double-precision formulas written here, plus
// the bit-exactness properties the runtime relies on (thread splits, chunked
// prefill, alignment).
#include "kernels/reference/kernels.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/reference/dot.h"

namespace tessera {
namespace {

std::vector<float> random_vec(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<float> normal_vec(std::mt19937& rng, size_t n, float stddev = 1.0f) {
  std::normal_distribution<float> d(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// |got - want| <= rtol·|want| + atol
void expect_near_rel(float got, double want, double rtol, double atol, const char* what, size_t i) {
  EXPECT_LE(std::abs(static_cast<double>(got) - want), rtol * std::abs(want) + atol)
      << what << "[" << i << "]: got " << got << " want " << want;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// ---------------------------------------------------------------- embed

TEST(RefEmbed, GathersRowsAndScales) {
  std::mt19937 rng(1);
  const int64_t vocab = 11, width = 7;
  const std::vector<float> table = random_vec(rng, vocab * width);
  const std::vector<int32_t> ids = {3, 0, 10, 3, 7};
  const int64_t rows = static_cast<int64_t>(ids.size());
  for (float scale : {1.0f, 2.5f, -0.3f}) {
    std::vector<float> out(rows * width, std::numeric_limits<float>::quiet_NaN());
    ref::embed(table.data(), vocab, width, ids.data(), rows, scale, out.data());
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t i = 0; i < width; ++i) {
        const double want = static_cast<double>(table[ids[t] * width + i]) * scale;
        expect_near_rel(out[t * width + i], want, 1e-6, 0.0, "embed", t * width + i);
      }
  }
}

TEST(RefEmbed, ThrowsForIdOutsideVocabulary) {
  const int64_t vocab = 4, width = 3;
  std::vector<float> table(vocab * width, 1.0f);
  std::vector<float> out(2 * width);
  for (int32_t bad : {-1, 4, 1000}) {
    const int32_t ids[2] = {1, bad};
    EXPECT_THROW(ref::embed(table.data(), vocab, width, ids, 2, 1.0f, out.data()), Error) << bad;
  }
  const int32_t ok[2] = {0, 3};
  EXPECT_NO_THROW(ref::embed(table.data(), vocab, width, ok, 2, 1.0f, out.data()));
}

// ---------------------------------------------------------------- rms_norm

std::vector<double> naive_rms_norm(const std::vector<float>& x, const float* w, int64_t rows, int64_t width,
                                   double eps, bool plus_one) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < width; ++i) ss += static_cast<double>(x[r * width + i]) * x[r * width + i];
    const double inv = 1.0 / std::sqrt(ss / width + eps);
    for (int64_t i = 0; i < width; ++i) {
      const double g = w == nullptr ? 1.0 : plus_one ? 1.0 + w[i] : w[i];
      y[r * width + i] = x[r * width + i] * inv * g;
    }
  }
  return y;
}

TEST(RefRmsNorm, MatchesNaiveFormula) {
  std::mt19937 rng(2);
  for (int64_t width : {1, 5, 16, 37, 64}) {
    const int64_t rows = 3;
    std::vector<float> x = normal_vec(rng, rows * width, 2.0f);
    const std::vector<float> w = random_vec(rng, width, -1.5f, 1.5f);
    const float eps = 1e-5f;
    for (int variant = 0; variant < 3; ++variant) {
      const float* wp = variant == 2 ? nullptr : w.data();
      const bool plus_one = variant == 1;
      std::vector<float> y(x.size());
      ref::rms_norm(x.data(), wp, rows, width, eps, plus_one, y.data());
      const std::vector<double> want = naive_rms_norm(x, wp, rows, width, eps, plus_one);
      for (size_t i = 0; i < y.size(); ++i) expect_near_rel(y[i], want[i], 1e-5, 1e-6, "rms_norm", i);
    }
  }
}

TEST(RefRmsNorm, PlusOneDiffersFromPlain) {
  // Guards against plus_one being ignored: with w = 0, plain gives 0 and plus_one gives x̂.
  std::mt19937 rng(3);
  const int64_t width = 8;
  const std::vector<float> x = normal_vec(rng, width);
  const std::vector<float> w(width, 0.0f);
  std::vector<float> plain(width), one(width), none(width);
  ref::rms_norm(x.data(), w.data(), 1, width, 1e-6f, false, plain.data());
  ref::rms_norm(x.data(), w.data(), 1, width, 1e-6f, true, one.data());
  ref::rms_norm(x.data(), nullptr, 1, width, 1e-6f, false, none.data());
  for (int64_t i = 0; i < width; ++i) {
    EXPECT_EQ(plain[i], 0.0f);
    EXPECT_NE(one[i], 0.0f);
    EXPECT_FLOAT_EQ(one[i], none[i]);
  }
}

TEST(RefRmsNorm, InPlaceEqualsOutOfPlace) {
  std::mt19937 rng(4);
  const int64_t rows = 4, width = 33;
  const std::vector<float> x = normal_vec(rng, rows * width);
  const std::vector<float> w = random_vec(rng, width);
  for (bool plus_one : {false, true}) {
    std::vector<float> out(x.size());
    ref::rms_norm(x.data(), w.data(), rows, width, 1e-6f, plus_one, out.data());
    std::vector<float> inplace = x;
    ref::rms_norm(inplace.data(), w.data(), rows, width, 1e-6f, plus_one, inplace.data());
    EXPECT_TRUE(same_bits(out, inplace)) << plus_one;
  }
}

// ---------------------------------------------------------------- linear

TEST(RefLinear, MatchesNaiveWithAndWithoutBias) {
  std::mt19937 rng(5);
  const int64_t rows = 3, in = 45, out = 29;
  const std::vector<float> x = random_vec(rng, rows * in);
  const std::vector<float> w = random_vec(rng, out * in);
  const std::vector<float> bias = random_vec(rng, out, -2.0f, 2.0f);
  for (bool with_bias : {false, true}) {
    std::vector<float> y(rows * out, std::numeric_limits<float>::quiet_NaN());
    ref::linear(x.data(), rows, in, w.data(), with_bias ? bias.data() : nullptr, out, 0, out, y.data());
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t n = 0; n < out; ++n) {
        double s = with_bias ? bias[n] : 0.0;
        double mag = with_bias ? std::abs(bias[n]) : 0.0;
        for (int64_t k = 0; k < in; ++k) {
          s += static_cast<double>(x[t * in + k]) * w[n * in + k];
          mag += std::abs(static_cast<double>(x[t * in + k]) * w[n * in + k]);
        }
        // Cancellation: bound the error by the magnitude of the terms.
        EXPECT_LE(std::abs(y[t * out + n] - s), 1e-5 * mag + 1e-6) << t << "," << n << " bias " << with_bias;
      }
  }
}

TEST(RefLinear, SplitOutputRangesGiveSameBits) {
  std::mt19937 rng(6);
  const int64_t rows = 5, in = 70, out = 41;
  const std::vector<float> x = normal_vec(rng, rows * in);
  const std::vector<float> w = normal_vec(rng, out * in);
  const std::vector<float> bias = normal_vec(rng, out);
  for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
    std::vector<float> whole(rows * out);
    ref::linear(x.data(), rows, in, w.data(), b, out, 0, out, whole.data());
    for (int64_t k : {0, 1, 7, 16, 17, 40, 41}) {
      std::vector<float> split(rows * out, std::numeric_limits<float>::quiet_NaN());
      ref::linear(x.data(), rows, in, w.data(), b, out, 0, k, split.data());
      ref::linear(x.data(), rows, in, w.data(), b, out, k, out, split.data());
      EXPECT_TRUE(same_bits(whole, split)) << "split at " << k;
    }
  }
}

TEST(RefLinear, WritesOnlyItsRange) {
  std::mt19937 rng(7);
  const int64_t rows = 2, in = 9, out = 10;
  const std::vector<float> x = normal_vec(rng, rows * in);
  const std::vector<float> w = normal_vec(rng, out * in);
  const float sentinel = 12345.0f;
  std::vector<float> y(rows * out, sentinel);
  ref::linear(x.data(), rows, in, w.data(), nullptr, out, 3, 6, y.data());
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t n = 0; n < out; ++n) {
      if (n >= 3 && n < 6)
        EXPECT_NE(y[t * out + n], sentinel);
      else
        EXPECT_EQ(y[t * out + n], sentinel) << t << "," << n;
    }
}

// ---------------------------------------------------------------- rope

struct RopeCase {
  int64_t rows, heads, head_dim, rot_dim;
  bool neox;
};

TEST(RefRope, MatchesNaiveRotation) {
  std::mt19937 rng(8);
  const RopeCase cases[] = {{3, 2, 8, 8, true}, {3, 2, 8, 8, false}, {2, 3, 10, 6, true},
                            {2, 3, 10, 6, false}, {1, 1, 64, 32, true}, {4, 2, 6, 2, false}};
  for (const RopeCase& c : cases) {
    const int64_t half = c.rot_dim / 2;
    const std::vector<float> x0 = normal_vec(rng, c.rows * c.heads * c.head_dim);
    std::vector<float> cs(c.rows * half), sn(c.rows * half);
    const std::vector<float> angles = random_vec(rng, c.rows * half, -7.0f, 7.0f);
    for (size_t i = 0; i < angles.size(); ++i) {
      cs[i] = std::cos(angles[i]);
      sn[i] = std::sin(angles[i]);
    }
    std::vector<float> x = x0;
    ref::rope(x.data(), c.rows, c.heads, c.head_dim, c.rot_dim, c.neox, cs.data(), sn.data());
    for (int64_t t = 0; t < c.rows; ++t)
      for (int64_t h = 0; h < c.heads; ++h) {
        const int64_t base = (t * c.heads + h) * c.head_dim;
        std::vector<double> want(c.head_dim);
        for (int64_t i = 0; i < c.head_dim; ++i) want[i] = x0[base + i];
        for (int64_t i = 0; i < half; ++i) {
          const int64_t a = c.neox ? i : 2 * i;
          const int64_t b = c.neox ? i + half : 2 * i + 1;
          const double co = cs[t * half + i], si = sn[t * half + i];
          want[a] = x0[base + a] * co - x0[base + b] * si;
          want[b] = x0[base + b] * co + x0[base + a] * si;
        }
        for (int64_t i = 0; i < c.head_dim; ++i)
          expect_near_rel(x[base + i], want[i], 1e-5, 1e-6, c.neox ? "rope neox" : "rope interleaved", base + i);
        // The tail past rot_dim is untouched, bit for bit.
        for (int64_t i = c.rot_dim; i < c.head_dim; ++i) EXPECT_EQ(x[base + i], x0[base + i]);
      }
  }
}

TEST(RefRope, NeoxAndInterleavedDiffer) {
  // Both pairings on the same input must not coincide (a pairing bug would make them equal).
  std::mt19937 rng(9);
  const int64_t hd = 8, half = 4;
  const std::vector<float> x0 = normal_vec(rng, hd);
  std::vector<float> cs(half), sn(half);
  for (int64_t i = 0; i < half; ++i) {
    cs[i] = std::cos(0.3f * (i + 1));
    sn[i] = std::sin(0.3f * (i + 1));
  }
  std::vector<float> a = x0, b = x0;
  ref::rope(a.data(), 1, 1, hd, hd, true, cs.data(), sn.data());
  ref::rope(b.data(), 1, 1, hd, hd, false, cs.data(), sn.data());
  EXPECT_FALSE(same_bits(a, b));
}

TEST(RefRope, RotatingBackRestoresInput) {
  std::mt19937 rng(10);
  for (bool neox : {true, false}) {
    const int64_t rows = 3, heads = 2, hd = 12, rot = 8, half = rot / 2;
    const std::vector<float> x0 = normal_vec(rng, rows * heads * hd);
    const std::vector<float> ang = random_vec(rng, rows * half, -3.0f, 3.0f);
    std::vector<float> c(ang.size()), s(ang.size()), s_neg(ang.size());
    for (size_t i = 0; i < ang.size(); ++i) {
      c[i] = std::cos(ang[i]);
      s[i] = std::sin(ang[i]);
      s_neg[i] = std::sin(-ang[i]);
    }
    std::vector<float> x = x0;
    ref::rope(x.data(), rows, heads, hd, rot, neox, c.data(), s.data());
    EXPECT_FALSE(same_bits(x, x0));
    ref::rope(x.data(), rows, heads, hd, rot, neox, c.data(), s_neg.data());
    for (size_t i = 0; i < x.size(); ++i) expect_near_rel(x[i], x0[i], 1e-5, 1e-6, "rope round trip", i);
  }
}

// ---------------------------------------------------------------- attention

// Naive softmax attention in double over every visible position.
// k_all/v_all: [positions][kv_heads·hd]; q: [rows][heads·hd] at positions start + t.
std::vector<double> naive_attention(const std::vector<float>& q, int64_t rows, int64_t start,
                                    const std::vector<float>& k_all, const std::vector<float>& v_all,
                                    const ref::AttentionShape& sh) {
  const int64_t hd = sh.head_dim, kvw = sh.kv_heads * hd, group = sh.heads / sh.kv_heads;
  std::vector<double> out(rows * sh.heads * hd, 0.0);
  for (int64_t t = 0; t < rows; ++t) {
    const int64_t pos = start + t;
    const int64_t first = sh.window > 0 ? std::max<int64_t>(0, pos - sh.window + 1) : 0;
    for (int64_t h = 0; h < sh.heads; ++h) {
      const int64_t kvh = h / group;
      std::vector<double> s;
      for (int64_t p = first; p <= pos; ++p) {
        double d = 0;
        for (int64_t i = 0; i < hd; ++i)
          d += static_cast<double>(q[(t * sh.heads + h) * hd + i]) * k_all[p * kvw + kvh * hd + i];
        d *= sh.scale;
        if (sh.softcap > 0) d = sh.softcap * std::tanh(d / sh.softcap);
        s.push_back(d);
      }
      double mx = -std::numeric_limits<double>::infinity();
      for (double v : s) mx = std::max(mx, v);
      double sum = 0;
      for (double& v : s) sum += v = std::exp(v - mx);
      for (int64_t p = first; p <= pos; ++p)
        for (int64_t i = 0; i < hd; ++i)
          out[(t * sh.heads + h) * hd + i] += s[p - first] / sum * v_all[p * kvw + kvh * hd + i];
    }
  }
  return out;
}

// A ring cache of `capacity` slots holding positions [begin, end) at slot p % capacity;
// every other slot is NaN so a wrong read shows.
struct Ring {
  std::vector<float> k, v;
};
Ring make_ring(const std::vector<float>& k_all, const std::vector<float>& v_all, int64_t kvw, int64_t capacity,
               int64_t begin, int64_t end) {
  Ring r;
  r.k.assign(capacity * kvw, std::numeric_limits<float>::quiet_NaN());
  r.v.assign(capacity * kvw, std::numeric_limits<float>::quiet_NaN());
  for (int64_t p = begin; p < end; ++p)
    for (int64_t i = 0; i < kvw; ++i) {
      r.k[(p % capacity) * kvw + i] = k_all[p * kvw + i];
      r.v[(p % capacity) * kvw + i] = v_all[p * kvw + i];
    }
  return r;
}

struct AttnCase {
  int64_t heads, kv_heads, head_dim, window, past_end, rows, capacity;
  float softcap;
};

TEST(RefAttention, MatchesNaiveOverRingCache) {
  std::mt19937 rng(11);
  const AttnCase cases[] = {
      // full causal, GQA 2 query heads per KV head, cache larger than needed
      {4, 2, 8, 0, 7, 3, 16, 0.0f},
      // full causal, no past
      {4, 2, 8, 0, 0, 5, 1, 0.0f},
      // full causal, head_dim not a multiple of 16
      {2, 1, 20, 0, 9, 2, 9, 0.0f},
      // sliding window, ring of exactly `window` slots that has wrapped
      {4, 2, 8, 4, 11, 3, 4, 0.0f},
      // sliding window, ring larger than the window, wrapped
      {4, 2, 8, 4, 13, 6, 5, 0.0f},
      // sliding window longer than the sequence so far
      {4, 2, 8, 8, 3, 2, 8, 0.0f},
      // softcap on
      {4, 2, 8, 0, 6, 4, 6, 5.0f},
      {4, 2, 8, 3, 10, 3, 3, 2.0f},
  };
  for (const AttnCase& c : cases) {
    SCOPED_TRACE(testing::Message() << "window " << c.window << " past_end " << c.past_end << " rows " << c.rows
                                    << " capacity " << c.capacity << " softcap " << c.softcap);
    ref::AttentionShape sh;
    sh.heads = c.heads;
    sh.kv_heads = c.kv_heads;
    sh.head_dim = c.head_dim;
    sh.window = c.window;
    sh.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    sh.softcap = c.softcap;
    const int64_t kvw = c.kv_heads * c.head_dim, total = c.past_end + c.rows;
    // Larger values when softcap is on so that it actually bites.
    const float sd = c.softcap > 0 ? 4.0f : 1.0f;
    const std::vector<float> k_all = normal_vec(rng, total * kvw, sd);
    const std::vector<float> v_all = normal_vec(rng, total * kvw);
    const std::vector<float> q = normal_vec(rng, c.rows * c.heads * c.head_dim, sd);
    const int64_t past_begin = c.window > 0 ? std::max<int64_t>(0, c.past_end - c.window + 1) : 0;
    ASSERT_LE(c.past_end - past_begin, c.capacity);
    const Ring ring = make_ring(k_all, v_all, kvw, c.capacity, past_begin, c.past_end);
    ref::KvSpan kv;
    kv.past_k = ring.k.data();
    kv.past_v = ring.v.data();
    kv.capacity = c.capacity;
    kv.past_begin = past_begin;
    kv.past_end = c.past_end;
    kv.new_k = k_all.data() + c.past_end * kvw;
    kv.new_v = v_all.data() + c.past_end * kvw;
    std::vector<float> out(q.size(), std::numeric_limits<float>::quiet_NaN());
    ref::attention(q.data(), c.rows, kv, sh, 0, c.heads, 0, c.rows, out.data());
    const std::vector<double> want = naive_attention(q, c.rows, c.past_end, k_all, v_all, sh);
    for (size_t i = 0; i < out.size(); ++i) expect_near_rel(out[i], want[i], 1e-5, 2e-6, "attention", i);

    if (c.softcap > 0) {
      // The softcap must matter for this data, or the case tests nothing.
      ref::AttentionShape nocap = sh;
      nocap.softcap = 0;
      const std::vector<double> uncapped = naive_attention(q, c.rows, c.past_end, k_all, v_all, nocap);
      double diff = 0;
      for (size_t i = 0; i < want.size(); ++i) diff = std::max(diff, std::abs(want[i] - uncapped[i]));
      EXPECT_GT(diff, 1e-3);
    }
  }
}

TEST(RefAttention, HeadSplitGivesSameBits) {
  std::mt19937 rng(12);
  ref::AttentionShape sh;
  sh.heads = 6;
  sh.kv_heads = 3;
  sh.head_dim = 5;
  sh.scale = 0.4f;
  const int64_t rows = 4, kvw = sh.kv_heads * sh.head_dim;
  const std::vector<float> k = normal_vec(rng, rows * kvw), v = normal_vec(rng, rows * kvw);
  const std::vector<float> q = normal_vec(rng, rows * sh.heads * sh.head_dim);
  float dummy = 0;
  ref::KvSpan kv;
  kv.past_k = kv.past_v = &dummy;
  kv.capacity = 1;
  kv.new_k = k.data();
  kv.new_v = v.data();
  std::vector<float> whole(q.size()), split(q.size(), std::numeric_limits<float>::quiet_NaN());
  ref::attention(q.data(), rows, kv, sh, 0, sh.heads, 0, rows, whole.data());
  ref::attention(q.data(), rows, kv, sh, 0, 1, 0, rows, split.data());
  ref::attention(q.data(), rows, kv, sh, 1, 4, 0, rows, split.data());
  ref::attention(q.data(), rows, kv, sh, 4, 6, 0, rows, split.data());
  EXPECT_TRUE(same_bits(whole, split));
}

// One call over the whole sequence vs. several calls whose cache (a ring of
// `capacity` slots) holds the previous calls' keys: same bits.
TEST(RefAttention, ChunkedEqualsOneCallBitwise) {
  std::mt19937 rng(13);
  struct Case {
    int64_t window, capacity;
    float softcap;
    std::vector<int64_t> chunks;
  };
  const Case cases[] = {
      {0, 13, 0.0f, {5, 1, 4, 3}},
      {0, 13, 0.0f, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
      {4, 4, 0.0f, {5, 1, 4, 3}},
      {4, 4, 0.0f, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
      {4, 6, 0.0f, {2, 7, 4}},
      {3, 3, 3.0f, {6, 2, 5}},
      {0, 13, 3.0f, {3, 10}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "window " << c.window << " capacity " << c.capacity << " softcap "
                                    << c.softcap << " chunks " << c.chunks.size());
    ref::AttentionShape sh;
    sh.heads = 4;
    sh.kv_heads = 2;
    sh.head_dim = 19;
    sh.window = c.window;
    sh.scale = 0.25f;
    sh.softcap = c.softcap;
    const int64_t kvw = sh.kv_heads * sh.head_dim, qw = sh.heads * sh.head_dim;
    int64_t total = 0;
    for (int64_t n : c.chunks) total += n;
    const std::vector<float> k = normal_vec(rng, total * kvw), v = normal_vec(rng, total * kvw);
    const std::vector<float> q = normal_vec(rng, total * qw);

    float dummy = 0;
    ref::KvSpan one;
    one.past_k = one.past_v = &dummy;
    one.capacity = 1;
    one.new_k = k.data();
    one.new_v = v.data();
    std::vector<float> whole(q.size());
    ref::attention(q.data(), total, one, sh, 0, sh.heads, 0, total, whole.data());

    std::vector<float> ring_k(c.capacity * kvw, std::numeric_limits<float>::quiet_NaN());
    std::vector<float> ring_v(c.capacity * kvw, std::numeric_limits<float>::quiet_NaN());
    std::vector<float> chunked(q.size(), std::numeric_limits<float>::quiet_NaN());
    int64_t done = 0;
    for (int64_t n : c.chunks) {
      ref::KvSpan kv;
      kv.past_k = ring_k.data();
      kv.past_v = ring_v.data();
      kv.capacity = c.capacity;
      kv.past_end = done;
      kv.past_begin = c.window > 0 ? std::max<int64_t>(0, done - c.window + 1) : 0;
      kv.new_k = k.data() + done * kvw;
      kv.new_v = v.data() + done * kvw;
      ref::attention(q.data() + done * qw, n, kv, sh, 0, sh.heads, 0, n, chunked.data() + done * qw);
      // Then store this chunk's keys into the ring (after attention, as the runtime does).
      for (int64_t p = done; p < done + n; ++p) {
        std::memcpy(&ring_k[(p % c.capacity) * kvw], &k[p * kvw], sizeof(float) * kvw);
        std::memcpy(&ring_v[(p % c.capacity) * kvw], &v[p * kvw], sizeof(float) * kvw);
      }
      done += n;
    }
    EXPECT_TRUE(same_bits(whole, chunked));
  }
}

// ---------------------------------------------------------------- gated_activation

TEST(RefGatedActivation, MatchesNaiveFormulas) {
  std::mt19937 rng(14);
  const int64_t n = 2000;
  const std::vector<float> gate = random_vec(rng, n, -8.0f, 8.0f);
  const std::vector<float> up = random_vec(rng, n, -2.0f, 2.0f);
  const double pi = std::numbers::pi;
  for (Activation act : {Activation::SiLU, Activation::GeluTanh, Activation::Gelu}) {
    std::vector<float> out(n, std::numeric_limits<float>::quiet_NaN());
    ref::gated_activation(act, gate.data(), up.data(), n, out.data());
    for (int64_t i = 0; i < n; ++i) {
      const double x = gate[i];
      double a = 0;
      switch (act) {
        case Activation::SiLU: a = x / (1.0 + std::exp(-x)); break;
        case Activation::GeluTanh:
          a = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
          break;
        case Activation::Gelu: a = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); break;
      }
      // atol covers f32 cancellation in 1 + tanh(..) for very negative x.
      expect_near_rel(out[i], a * up[i], 1e-5, 1e-6, activation_name(act), i);
    }
  }
}

TEST(RefGatedActivation, TanhAndErfGeluAreDistinct) {
  // The two GELUs differ by up to ~1e-3 near |x| ≈ 2: a test must tell them apart.
  const float gate[1] = {-2.0f}, up[1] = {1.0f};
  float a = 0, b = 0;
  ref::gated_activation(Activation::GeluTanh, gate, up, 1, &a);
  ref::gated_activation(Activation::Gelu, gate, up, 1, &b);
  EXPECT_GT(std::abs(a - b), 1e-5f);
}

// ---------------------------------------------------------------- add, softcap, argmax

TEST(RefAddInPlace, AddsElementwise) {
  std::mt19937 rng(15);
  const std::vector<float> x = normal_vec(rng, 37);
  const std::vector<float> y0 = normal_vec(rng, 37);
  std::vector<float> y = y0;
  ref::add_in_place(y.data(), x.data(), 37);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], y0[i] + x[i]);
}

TEST(RefSoftcap, MatchesNaiveFormula) {
  std::mt19937 rng(16);
  const std::vector<float> x0 = random_vec(rng, 500, -200.0f, 200.0f);
  for (float cap : {30.0f, 50.0f, 1.0f}) {
    std::vector<float> x = x0;
    ref::softcap(x.data(), static_cast<int64_t>(x.size()), cap);
    for (size_t i = 0; i < x.size(); ++i) {
      expect_near_rel(x[i], cap * std::tanh(static_cast<double>(x0[i]) / cap), 1e-5, 1e-7, "softcap", i);
      EXPECT_LE(std::abs(x[i]), cap);
    }
  }
}

TEST(RefArgmax, LargestValueLowestIndexOnTies) {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 50);
    std::vector<float> x = normal_vec(rng, n);
    // Often plant ties of the maximum.
    if (trial % 2 == 0 && n > 1) {
      float mx = x[0];
      for (float v : x) mx = std::max(mx, v);
      const int ties = 1 + static_cast<int>(rng() % 3);
      for (int j = 0; j < ties; ++j) x[rng() % n] = mx;
    }
    int64_t want = 0;
    for (int64_t i = 1; i < n; ++i)
      if (x[i] > x[want]) want = i;
    EXPECT_EQ(ref::argmax(x.data(), n), want) << "trial " << trial;
  }
  const float all_equal[4] = {-3.0f, -3.0f, -3.0f, -3.0f};
  EXPECT_EQ(ref::argmax(all_equal, 4), 0);
  const float neg[3] = {-5.0f, -1.0f, -2.0f};
  EXPECT_EQ(ref::argmax(neg, 3), 1);
}

// ---------------------------------------------------------------- dot

TEST(RefDot, AccurateAgainstDouble) {
  std::mt19937 rng(18);
  for (int64_t n : {0, 1, 2, 15, 16, 17, 31, 32, 33, 100, 1000, 4097}) {
    const std::vector<float> a = normal_vec(rng, n), b = normal_vec(rng, n);
    double s = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      s += static_cast<double>(a[i]) * b[i];
      mag += std::abs(static_cast<double>(a[i]) * b[i]);
    }
    const float got = ref::dot(a.data(), b.data(), n);
    EXPECT_LE(std::abs(got - s), 1e-5 * mag + 1e-7) << "n " << n;
  }
  // Exactly representable case: every product and partial sum is an integer.
  std::vector<float> a(50), b(50);
  double want = 0;
  for (int i = 0; i < 50; ++i) {
    a[i] = static_cast<float>(i - 20);
    b[i] = static_cast<float>(3 - i % 7);
    want += static_cast<double>(a[i]) * b[i];
  }
  EXPECT_EQ(ref::dot(a.data(), b.data(), 50), static_cast<float>(want));
}

TEST(RefDot, CommutativeBitwise) {
  std::mt19937 rng(19);
  for (int64_t n : {1, 7, 16, 23, 64, 129, 1000}) {
    const std::vector<float> a = random_vec(rng, n, -3.0f, 3.0f), b = random_vec(rng, n, -3.0f, 3.0f);
    const float ab = ref::dot(a.data(), b.data(), n), ba = ref::dot(b.data(), a.data(), n);
    EXPECT_EQ(std::memcmp(&ab, &ba, sizeof(float)), 0) << "n " << n << ": " << ab << " vs " << ba;
  }
}

TEST(RefDot, IndependentOfAlignment) {
  std::mt19937 rng(20);
  for (int64_t n : {5, 16, 37, 200, 1025}) {
    const std::vector<float> a = normal_vec(rng, n), b = normal_vec(rng, n);
    const float want = ref::dot(a.data(), b.data(), n);
    for (int oa = 0; oa < 17; oa += 1)
      for (int ob : {0, 1, 3, 8, 15}) {
        std::vector<float> ba(n + 32), bb(n + 32);
        std::memcpy(ba.data() + oa, a.data(), sizeof(float) * n);
        std::memcpy(bb.data() + ob, b.data(), sizeof(float) * n);
        const float got = ref::dot(ba.data() + oa, bb.data() + ob, n);
        ASSERT_EQ(std::memcmp(&got, &want, sizeof(float)), 0) << "n " << n << " offsets " << oa << "," << ob;
      }
  }
}

// dot_fma keeps dot's lanes and tree but rounds once per term: lane 0 below
// sums 1·(−(1 + 2^-11)) and then (1 + 2^-12)², whose exact value is
// 1 + 2^-11 + 2^-24. The fused step keeps the 2^-24; dot rounds the square to
// 1 + 2^-11 (a tie, to even) before the add and gets 0.
TEST(RefDotFma, OneRoundingPerTerm) {
  std::vector<float> a(17, 0.0f), b(17, 0.0f);
  a[0] = 1.0f;
  b[0] = -(1.0f + std::ldexp(1.0f, -11));
  a[16] = b[16] = 1.0f + std::ldexp(1.0f, -12);
  EXPECT_EQ(ref::dot_fma(a.data(), b.data(), 17), std::ldexp(1.0f, -24));
  EXPECT_EQ(ref::dot(a.data(), b.data(), 17), 0.0f);
  // Other lanes: the same 16-lane order and tree as dot (integers are exact
  // either way, so the two agree on them).
  std::vector<float> x(50), y(50);
  for (int i = 0; i < 50; ++i) {
    x[i] = static_cast<float>(i - 20);
    y[i] = static_cast<float>(3 - i % 7);
  }
  EXPECT_EQ(ref::dot_fma(x.data(), y.data(), 50), ref::dot(x.data(), y.data(), 50));
  std::mt19937 rng(21);
  for (int64_t n : {1, 16, 33, 100, 1000}) {
    const std::vector<float> u = normal_vec(rng, n), v = normal_vec(rng, n);
    double s = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      s += static_cast<double>(u[i]) * v[i];
      mag += std::abs(static_cast<double>(u[i]) * v[i]);
    }
    EXPECT_LE(std::abs(ref::dot_fma(u.data(), v.data(), n) - s), 1e-5 * mag + 1e-7) << "n " << n;
  }
}

}  // namespace
}  // namespace tessera
