// Each level of vector_ops() against the reference kernels.
//
// rms_norm, rope and add_in_place must be the reference's bits exactly (same
// operations, same order, no FMA). gated_activation, softcap and attention use
// Highway's Exp/Tanh (and a rational erf) instead of libm, so they are checked
// against bounds derived below from those functions' documented errors; every
// bound is far below what a wrong index, a missing key or a wrong formula
// produces (1e-3 and up on these inputs).
#include "kernels/vector_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "kernels/cpu_isa.h"
#include "kernels/reference/dot.h"
#include "kernels/reference/kernels.h"

namespace tessera::kernels {
namespace {

std::vector<float> random_values(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Index of the first value whose bits differ, or -1.
// The IEEE f16 bits of each value (an f16 KV cache's storage).
std::vector<uint16_t> to_f16(const std::vector<float>& x) {
  std::vector<uint16_t> h(x.size());
  for (size_t i = 0; i < x.size(); ++i) h[i] = f32_to_f16(x[i]);
  return h;
}

int64_t first_bit_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) return static_cast<int64_t>(i);
  return -1;
}

constexpr float kUlp1 = 1.0f / (1 << 23);  // spacing of floats in [1, 2): 2^-23

TEST(VectorOpsTable, ScalarIsTheReference) {
  const VectorOps& ops = vector_ops(Isa::Scalar);
  EXPECT_STREQ(ops.isa, "scalar");
  EXPECT_EQ(ops.rms_norm, &ref::rms_norm);
  EXPECT_EQ(ops.rope, &ref::rope);
  EXPECT_EQ(ops.attention, &ref::attention);
  EXPECT_EQ(ops.gated_activation, &ref::gated_activation);
  EXPECT_EQ(ops.add_in_place, &ref::add_in_place);
  EXPECT_EQ(ops.softcap, &ref::softcap);
  EXPECT_EQ(ops.argmax, &ref::argmax);
}

TEST(VectorOpsTable, LevelsAreNamedOrRefused) {
  for (Isa isa : {Isa::Avx2, Isa::Avx512, Isa::Neon}) {
    if (isa_supported(isa)) {
      const VectorOps& ops = vector_ops(isa);
      EXPECT_EQ(std::string(ops.isa), std::string(isa_name(isa)));
      EXPECT_NE(ops.rms_norm, &ref::rms_norm);
      EXPECT_NE(ops.attention, &ref::attention);
      EXPECT_EQ(&ops, &vector_ops(isa));  // one table per level
    } else {
      EXPECT_THROW(vector_ops(isa), Error);
    }
  }
}

class VectorOpsIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) GTEST_SKIP() << "this CPU lacks " << isa_name(GetParam());
  }
  const VectorOps& ops() const { return vector_ops(GetParam()); }
};

INSTANTIATE_TEST_SUITE_P(VectorOps, VectorOpsIsa, ::testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Neon),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

TEST_P(VectorOpsIsa, RmsNormIsBitIdentical) {
  std::mt19937 rng(101);
  for (int64_t width = 1; width <= 300; ++width) {
    const int64_t rows = width % 3 == 0 ? 1 : 3;
    const auto x = random_values(rng, rows * width, -3.0f, 3.0f);
    const auto w = random_values(rng, width, -1.5f, 1.5f);
    for (int mode = 0; mode < 3; ++mode) {  // weight, 1 + weight, no weight
      const float* wp = mode == 2 ? nullptr : w.data();
      const bool plus_one = mode == 1;
      std::vector<float> want(x.size()), got(x.size(), -7.0f);
      ref::rms_norm(x.data(), wp, rows, width, 1e-6f, plus_one, want.data());
      ops().rms_norm(x.data(), wp, rows, width, 1e-6f, plus_one, got.data());
      ASSERT_EQ(first_bit_difference(want, got), -1) << "width " << width << " mode " << mode;
      std::vector<float> in_place = x;  // x and y may alias
      ops().rms_norm(in_place.data(), wp, rows, width, 1e-6f, plus_one, in_place.data());
      ASSERT_EQ(first_bit_difference(want, in_place), -1) << "in place, width " << width << " mode " << mode;
    }
  }
}

TEST_P(VectorOpsIsa, RopeIsBitIdentical) {
  std::mt19937 rng(202);
  struct Case {
    int64_t head_dim, rot_dim;
  };
  for (const Case c : {Case{64, 64}, Case{128, 128}, Case{80, 80}, Case{128, 64}, Case{80, 42}, Case{64, 30},
                       Case{256, 64}, Case{6, 6}, Case{10, 4}, Case{96, 66}}) {
    for (int64_t rows : {1, 3}) {
      for (bool neox : {true, false}) {
        const int64_t heads = 3, half = c.rot_dim / 2;
        const auto x = random_values(rng, rows * heads * c.head_dim, -2.0f, 2.0f);
        const auto angle = random_values(rng, rows * half, -3.2f, 3.2f);
        std::vector<float> cos(angle.size()), sin(angle.size());
        for (size_t i = 0; i < angle.size(); ++i) cos[i] = std::cos(angle[i]), sin[i] = std::sin(angle[i]);
        std::vector<float> want = x, got = x;
        ref::rope(want.data(), rows, heads, c.head_dim, c.rot_dim, neox, cos.data(), sin.data());
        ops().rope(got.data(), rows, heads, c.head_dim, c.rot_dim, neox, cos.data(), sin.data());
        ASSERT_EQ(first_bit_difference(want, got), -1)
            << "head_dim " << c.head_dim << " rot_dim " << c.rot_dim << " rows " << rows << " neox " << neox;
      }
    }
  }
}

TEST_P(VectorOpsIsa, AddInPlaceIsBitIdentical) {
  std::mt19937 rng(303);
  for (int64_t n = 0; n <= 300; ++n) {
    const auto x = random_values(rng, n, -5.0f, 5.0f);
    const auto y = random_values(rng, n, -5.0f, 5.0f);
    std::vector<float> want = y, got = y;
    ref::add_in_place(want.data(), x.data(), n);
    ops().add_in_place(got.data(), x.data(), n);
    ASSERT_EQ(first_bit_difference(want, got), -1) << "n " << n;
  }
}

// Inputs for the activations: a uniform spread plus values at the edges of
// the approximations' ranges (exp overflow, tanh saturation, erf clamping).
std::vector<float> activation_inputs(std::mt19937& rng, int64_t n) {
  auto v = random_values(rng, n, -12.0f, 12.0f);
  const float special[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-4f, -1e-4f, 0.5f, -0.5f, 3.9f, -3.9f, 5.7f, -5.7f,
                           9.1f, -9.1f, 18.0f, -18.0f, 20.0f, -20.0f, 88.0f, -88.0f, 89.0f, -89.0f, 100.0f,
                           -100.0f, 200.0f, -200.0f, 1e30f, -1e30f};
  for (size_t i = 0; i < v.size() && i < std::size(special); ++i) v[i * 7 % v.size()] = special[i];
  return v;
}

TEST_P(VectorOpsIsa, GatedActivationWithinBound) {
  std::mt19937 rng(404);
  for (Activation act : {Activation::SiLU, Activation::GeluTanh, Activation::Gelu}) {
    for (int64_t n : {1, 5, 8, 15, 16, 17, 33, 100, 257, 4099}) {
      const auto gate = activation_inputs(rng, n);
      const auto up = random_values(rng, n, -2.0f, 2.0f);
      std::vector<float> want(n), got(n, -7.0f);
      ref::gated_activation(act, gate.data(), up.data(), n, want.data());
      ops().gated_activation(act, gate.data(), up.data(), n, got.data());
      for (int64_t i = 0; i < n; ++i) {
        // SiLU: x / (1 + e^-x) with Highway's Exp (<= 1 ulp) against libm's
        // expf (< 1 ulp): 1 + e^-x and the quotient differ by a few ulp, so
        // 8 ulp of the result (~1e-6 relative) bounds it.
        // GELU: 1 + tanh(u) (Highway Tanh: <= 4 ulp) and 1 + erf(u) (rational
        // approximation: ~2e-7 absolute, and libm's own 0.5 ulp) cancel where
        // tanh/erf approach -1, so the error is absolute in that factor:
        // 8 ulp of 1 times |0.5·x·up|, plus 8 ulp of the result.
        const float x = gate[i];
        const double scale = act == Activation::SiLU ? 0.0 : std::abs(0.5 * x * up[i]);
        const double bound = 8 * kUlp1 * (std::abs(want[i]) + scale) + 1e-37;
        ASSERT_LE(std::abs(static_cast<double>(got[i]) - want[i]), bound)
            << activation_name(act) << " n " << n << " i " << i << " gate " << x << " up " << up[i] << " want "
            << want[i] << " got " << got[i];
      }
    }
  }
}

TEST_P(VectorOpsIsa, SoftcapWithinBound) {
  std::mt19937 rng(505);
  for (float cap : {5.0f, 30.0f, 50.0f}) {
    for (int64_t n : {1, 7, 16, 31, 200, 1001}) {
      auto x = random_values(rng, n, -4 * cap, 4 * cap);
      x[0] = 0.0f;
      std::vector<float> want = x, got = x;
      ref::softcap(want.data(), n, cap);
      ops().softcap(got.data(), n, cap);
      for (int64_t i = 0; i < n; ++i) {
        // cap · tanh(x / cap): Highway's Tanh is within 4 ulp, libm's within
        // 1; the multiplication by cap adds a rounding to each. 8 ulp.
        const double bound = 8 * kUlp1 * std::abs(want[i]);
        ASSERT_LE(std::abs(static_cast<double>(got[i]) - want[i]), bound)
            << "cap " << cap << " n " << n << " x " << x[i] << " want " << want[i] << " got " << got[i];
      }
    }
  }
}

struct AttentionCase {
  int64_t heads, kv_heads, head_dim, window, rows, past_begin, past_end, capacity;
  float softcap;
};

// A cache ring and a chunk filled with random values; runs both kernels.
using AttentionFn = void (*)(const float*, int64_t, const ref::KvSpan&, const ref::AttentionShape&, int64_t, int64_t,
                             int64_t, int64_t, float*);

struct AttentionData {
  AttentionCase c;
  std::vector<float> q, past_k, past_v, new_k, new_v;
  ref::KvSpan span;
  ref::AttentionShape shape;

  AttentionData(const AttentionCase& ac, std::mt19937& rng) : c(ac) {
    const int64_t kv_width = c.kv_heads * c.head_dim;
    q = random_values(rng, c.rows * c.heads * c.head_dim, -1.0f, 1.0f);
    past_k = random_values(rng, std::max<int64_t>(1, c.capacity) * kv_width, -1.0f, 1.0f);
    past_v = random_values(rng, std::max<int64_t>(1, c.capacity) * kv_width, -1.0f, 1.0f);
    new_k = random_values(rng, c.rows * kv_width, -1.0f, 1.0f);
    new_v = random_values(rng, c.rows * kv_width, -1.0f, 1.0f);
    span = {past_k.data(), past_v.data(), c.capacity, c.past_begin, c.past_end, new_k.data(), new_v.data()};
    // A wide spread of scores (std ~1.7·sqrt(2) for unit-range q, k) so the
    // softmax is far from uniform and the softcap is active.
    shape = {c.heads, c.kv_heads, c.head_dim, c.window, 3.0f / std::sqrt(static_cast<float>(c.head_dim)),
             c.softcap};
  }
  std::vector<float> run(AttentionFn fn, int64_t h_begin, int64_t h_end) const {
    std::vector<float> out(q.size(), 0.0f);
    fn(q.data(), c.rows, span, shape, h_begin, h_end, 0, c.rows, out.data());
    return out;
  }
};

std::string describe(const AttentionCase& c) {
  return "heads " + std::to_string(c.heads) + "/" + std::to_string(c.kv_heads) + " head_dim " +
         std::to_string(c.head_dim) + " window " + std::to_string(c.window) + " rows " + std::to_string(c.rows) +
         " past [" + std::to_string(c.past_begin) + ", " + std::to_string(c.past_end) + ") capacity " +
         std::to_string(c.capacity) + " softcap " + std::to_string(c.softcap);
}

// Row ranges (any cut, not only at row-tile boundaries) crossed with head
// ranges, as the executor's prefill split makes them, give `want`'s bits.
void expect_row_cuts_give(AttentionFn fn, const AttentionData& data, const std::vector<float>& want) {
  const AttentionCase& c = data.c;
  for (int64_t cut : {int64_t{1}, c.rows / 3, c.rows / 2 + 5, c.rows - 1}) {
    if (cut <= 0 || cut >= c.rows) continue;
    std::vector<float> parts(data.q.size(), 0.0f);
    const int64_t hs = c.heads / 2;
    fn(data.q.data(), c.rows, data.span, data.shape, 0, hs, 0, cut, parts.data());
    fn(data.q.data(), c.rows, data.span, data.shape, hs, c.heads, 0, cut, parts.data());
    fn(data.q.data(), c.rows, data.span, data.shape, 0, c.heads, cut, c.rows, parts.data());
    EXPECT_EQ(first_bit_difference(want, parts), -1) << describe(c) << " rows cut at " << cut;
  }
}

const AttentionCase kAttentionCases[] = {
    // heads, kv_heads, head_dim, window, rows, past_begin, past_end, capacity, softcap
    {4, 2, 64, 0, 1, 0, 0, 0, 0.0f},        // first token, nothing cached
    {4, 2, 64, 0, 9, 0, 0, 0, 0.0f},        // prefill only
    {4, 2, 128, 0, 1, 0, 37, 64, 0.0f},     // decode
    {4, 2, 128, 0, 5, 0, 37, 64, 0.0f},     // chunk after a cache
    {3, 1, 80, 0, 3, 50, 80, 37, 0.0f},     // ring wrapped: past_begin > 0, capacity < past_end
    {3, 1, 80, 0, 1, 200, 233, 40, 0.0f},   // ring wrapped several times
    {4, 2, 64, 5, 7, 10, 40, 32, 0.0f},     // window < rows: late rows see no cached keys
    {4, 2, 64, 16, 1, 24, 40, 16, 0.0f},    // sliding layer, ring exactly the window
    {3, 1, 128, 17, 4, 20, 60, 48, 5.0f},   // window + softcap
    {2, 2, 72, 0, 2, 0, 30, 30, 20.0f},     // head_dim 72: partial vectors
    {2, 1, 20, 0, 3, 3, 21, 25, 5.0f},      // head_dim 20
    {9, 3, 64, 0, 40, 0, 20, 64, 0.0f},     // SmolLM2 heads, a prefill chunk after a cache
    {4, 4, 8, 3, 2, 0, 6, 8, 0.0f},         // tiny heads
    {8, 2, 128, 0, 2, 0, 1000, 1024, 0.0f}, // long context
    {4, 1, 256, 64, 3, 900, 1000, 70, 0.0f},// head_dim 256, window in a ring
    // Several row tiles (8 rows each), key counts off multiples of 16:
    {9, 3, 64, 0, 40, 0, 0, 0, 0.0f},        // prefill, SmolLM2's heads
    {9, 3, 64, 0, 21, 0, 545, 600, 0.0f},    // a chunk after a long cache
    {4, 2, 64, 7, 30, 100, 140, 50, 0.0f},   // window < rows, ring wrapped
    {4, 1, 128, 40, 19, 60, 100, 45, 5.0f},  // window > tile, ring, softcap
    {6, 3, 80, 0, 17, 10, 50, 41, 0.0f},     // head_dim 80 (generic dots), ring
    {2, 1, 256, 0, 9, 0, 33, 64, 0.0f},      // head_dim 256 (generic dots)
    {2, 1, 128, 33, 12, 0, 70, 80, 0.0f},    // head_dim 128, window
    // Calls of 8+ rows read their keys transposed (DotsTransposed): head
    // dims off multiples of 16, and past the 64 keys one call takes on AVX3.
    {2, 2, 72, 0, 10, 0, 30, 30, 20.0f},     // head_dim 72
    {2, 1, 20, 0, 11, 3, 21, 25, 5.0f},      // head_dim 20
    {4, 4, 8, 3, 9, 0, 6, 8, 0.0f},          // head_dim 8, window
    {7, 1, 64, 0, 70, 0, 150, 150, 0.0f},    // 70 rows after 150 keys
};

TEST_P(VectorOpsIsa, AttentionWithinBound) {
  std::mt19937 rng(606);
  for (const AttentionCase& c : kAttentionCases) {
    const AttentionData data(c, rng);
    const auto want = data.run(&ref::attention, 0, c.heads);
    const auto got = data.run(ops().attention, 0, c.heads);
    // Scores, scale, max, the division by the sum and the weighted sum are
    // the reference's operations in its order; what differs is exp (Highway
    // <= 1 ulp, libm < 1 ulp), the order of the softmax sum (16 lanes against
    // one; relative difference ~sqrt(n) ulp on these sizes, at most (n-1)
    // ulp) and, with a softcap, tanh (<= 4 ulp of a score up to `cap`,
    // shifting exp's argument by up to 4 ulp(cap), i.e. a relative change of
    // e^(4 ulp(cap)) - 1 in each weight). Every weight thus changes by a
    // relative d, and |Δout| <= d · Σ p_j |v_j| <= d · max |v| = d (|v| <= 1).
    // d: 1e-5 (~80 ulp) plus 8 ulp(cap) for the softcap.
    const double bound = 1e-5 + 8.0 * c.softcap * kUlp1;
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
    EXPECT_LE(worst, bound) << describe(c);
    if (GetParam() == Isa::Scalar) {
      EXPECT_EQ(worst, 0.0) << describe(c);
    }
  }
}

TEST_P(VectorOpsIsa, AttentionIsDeterministicAndSplitFree) {
  std::mt19937 rng(707);
  for (const AttentionCase& c : kAttentionCases) {
    const AttentionData data(c, rng);
    const auto one_call = data.run(ops().attention, 0, c.heads);
    // Same bits again, after a call of another size has used the scratch space.
    const AttentionData other({2, 1, 64, 0, 4, 0, 3000, 3000, 0.0f}, rng);
    (void)other.run(ops().attention, 0, 2);
    ASSERT_EQ(first_bit_difference(one_call, data.run(ops().attention, 0, c.heads)), -1) << describe(c);
    // Two head ranges, and one head at a time, give the same bits.
    for (int64_t split = 1; split < c.heads; ++split) {
      std::vector<float> out(data.q.size(), 0.0f);
      ops().attention(data.q.data(), c.rows, data.span, data.shape, 0, split, 0, c.rows, out.data());
      ops().attention(data.q.data(), c.rows, data.span, data.shape, split, c.heads, 0, c.rows, out.data());
      ASSERT_EQ(first_bit_difference(one_call, out), -1) << describe(c) << " split at " << split;
    }
    std::vector<float> out(data.q.size(), 0.0f);
    for (int64_t h = c.heads - 1; h >= 0; --h)
      ops().attention(data.q.data(), c.rows, data.span, data.shape, h, h + 1, 0, c.rows, out.data());
    ASSERT_EQ(first_bit_difference(one_call, out), -1) << describe(c) << " head by head";
    expect_row_cuts_give(ops().attention, data, one_call);
  }
}

// Bidirectional blocks (KvSpan::block_end, Gemma's image
// spans): a row in a block also sees the later rows of its block; a window
// still bounds what it sees below it (AND(window, OR(causal, block))). Checked
// against a plain masked softmax in double precision, every level within
// the bound above (the scalar twin exactly the reference), and the row /
// head splits of the executor giving the one-call bits.
TEST_P(VectorOpsIsa, AttentionWithBidirectionalBlocks) {
  std::mt19937 rng(2024);
  struct BlockCase {
    AttentionCase c;
    std::vector<std::pair<int32_t, int32_t>> blocks;  // call rows [begin, end)
  };
  const BlockCase cases[] = {
      {{4, 2, 64, 0, 20, 0, 0, 0, 0.0f}, {{3, 11}, {14, 19}}},         // prefill, two images
      {{4, 2, 64, 0, 12, 0, 37, 64, 0.0f}, {{0, 12}}},                 // the whole call one block, after a cache
      {{4, 2, 64, 5, 24, 10, 40, 32, 0.0f}, {{2, 20}}},                // window 5 < block
      {{3, 1, 80, 17, 30, 50, 80, 48, 5.0f}, {{1, 2}, {6, 29}}},       // ring, softcap, a one-row block
      {{9, 3, 64, 0, 70, 0, 150, 150, 0.0f}, {{8, 40}, {40, 64}}},     // transposed keys, adjacent blocks
      {{2, 1, 128, 33, 45, 0, 70, 80, 0.0f}, {{5, 44}}},               // block across row tiles, window
  };
  for (const BlockCase& bc : cases) {
    const AttentionCase& c = bc.c;
    AttentionData data(c, rng);
    std::vector<int32_t> begin(c.rows), end(c.rows);
    for (int32_t t = 0; t < c.rows; ++t) begin[t] = t, end[t] = t + 1;
    for (auto [b0, b1] : bc.blocks)
      for (int32_t t = b0; t < b1; ++t) begin[t] = b0, end[t] = b1;
    data.span.block_end = end.data();
    const auto want = data.run(&ref::attention, 0, c.heads);
    const auto got = data.run(ops().attention, 0, c.heads);
    // The plain masked softmax.
    const int64_t hd = c.head_dim, kv_width = c.kv_heads * hd, group = c.heads / c.kv_heads;
    double worst_ref = 0;
    for (int64_t t = 0; t < c.rows; ++t) {
      const int64_t pos = c.past_end + t;
      for (int64_t h = 0; h < c.heads; ++h) {
        const int64_t kvh = h / group;
        std::vector<int64_t> keys;
        for (int64_t p = c.past_begin; p < c.past_end + c.rows; ++p) {
          const bool in_window = c.window == 0 || p > pos - c.window;
          const bool same_block = p >= c.past_end + begin[t] && p < c.past_end + end[t];
          if (in_window && (p <= pos || same_block)) keys.push_back(p);
        }
        auto k_of = [&](int64_t p) {
          return p < c.past_end ? data.past_k.data() + (p % c.capacity) * kv_width + kvh * hd
                                : data.new_k.data() + (p - c.past_end) * kv_width + kvh * hd;
        };
        auto v_of = [&](int64_t p) {
          return p < c.past_end ? data.past_v.data() + (p % c.capacity) * kv_width + kvh * hd
                                : data.new_v.data() + (p - c.past_end) * kv_width + kvh * hd;
        };
        std::vector<double> s;
        double m = -1e300;
        for (int64_t p : keys) {
          double dot = 0;
          for (int64_t i = 0; i < hd; ++i) dot += double(data.q[(t * c.heads + h) * hd + i]) * k_of(p)[i];
          dot *= data.shape.scale;
          if (c.softcap > 0) dot = c.softcap * std::tanh(dot / c.softcap);
          s.push_back(dot);
          m = std::max(m, dot);
        }
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - m));
        for (int64_t i = 0; i < hd; ++i) {
          double o = 0;
          for (size_t j = 0; j < keys.size(); ++j) o += s[j] / sum * v_of(keys[j])[i];
          worst_ref = std::max(worst_ref, std::abs(o - want[(t * c.heads + h) * hd + i]));
        }
      }
    }
    EXPECT_LE(worst_ref, 1e-5) << describe(c) << " reference against the masked softmax";
    const double bound = 1e-5 + 8.0 * c.softcap * kUlp1;
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
    EXPECT_LE(worst, bound) << describe(c);
    if (GetParam() == Isa::Scalar) EXPECT_EQ(worst, 0.0) << describe(c);
    expect_row_cuts_give(ops().attention, data, got);
  }
}

// Every row of a multi-row call gets the bits it gets alone (one row, with
// the earlier rows of the chunk moved into the cache): the row tiles, the
// blocks of keys and the runs of the ring change nothing.
TEST_P(VectorOpsIsa, AttentionRowsMatchOneRowAtATime) {
  std::mt19937 rng(1001);
  for (const AttentionCase& c : kAttentionCases) {
    if (c.rows == 1) continue;
    const AttentionData data(c, rng);
    const auto all = data.run(ops().attention, 0, c.heads);
    // A cache without wrap-around holding the past and the chunk's rows.
    const int64_t kv_width = c.kv_heads * c.head_dim, cap = c.past_end + c.rows;
    std::vector<float> k(cap * kv_width), v(cap * kv_width);
    for (int64_t p = c.past_begin; p < cap; ++p) {
      const bool past = p < c.past_end;
      const int64_t src = (past ? p % c.capacity : p - c.past_end) * kv_width;
      std::copy_n((past ? data.past_k : data.new_k).begin() + src, kv_width, k.begin() + p * kv_width);
      std::copy_n((past ? data.past_v : data.new_v).begin() + src, kv_width, v.begin() + p * kv_width);
    }
    const int64_t width = c.heads * c.head_dim;
    for (int64_t t = 0; t < c.rows; ++t) {
      const int64_t p = c.past_end + t;
      const ref::KvSpan span{k.data(), v.data(), cap, c.past_begin, p, k.data() + p * kv_width,
                             v.data() + p * kv_width};
      std::vector<float> one(width);
      ops().attention(data.q.data() + t * width, 1, span, data.shape, 0, c.heads, 0, 1, one.data());
      const std::vector<float> want(all.begin() + t * width, all.begin() + (t + 1) * width);
      ASSERT_EQ(first_bit_difference(want, one), -1) << describe(c) << " row " << t;
    }
  }
}

// An f16 cache (KvSpan::past_k_f16) is read as the f32 cache of its values:
// every case, every level (the reference included) gives exactly the bits of
// the same call on an f32 cache holding the widened values. The chunk's own
// rows are rounded to f16 first, as the executor does, so that a row read from
// the call and the same row read from the cache are one value.
TEST_P(VectorOpsIsa, AttentionOnF16CacheIsTheF32CacheOfItsValues) {
  std::mt19937 rng(1212);
  for (const AttentionCase& c : kAttentionCases) {
    AttentionData widened(c, rng);
    const std::vector<uint16_t> k16 = to_f16(widened.past_k), v16 = to_f16(widened.past_v);
    for (std::vector<float>* x : {&widened.past_k, &widened.past_v, &widened.new_k, &widened.new_v})
      ref::round_to_f16(x->data(), static_cast<int64_t>(x->size()));
    AttentionData halves = widened;
    halves.span = {nullptr, nullptr, c.capacity, c.past_begin, c.past_end, halves.new_k.data(), halves.new_v.data(),
                   k16.data(), v16.data()};
    widened.span = {widened.past_k.data(), widened.past_v.data(), c.capacity, c.past_begin, c.past_end,
                    widened.new_k.data(), widened.new_v.data()};
    const auto want = widened.run(ops().attention, 0, c.heads);
    ASSERT_EQ(first_bit_difference(want, halves.run(ops().attention, 0, c.heads)), -1) << describe(c);
    // Heads and rows split as the executor splits them: still those bits.
    if (c.rows > 1 && c.heads > 1) {
      std::vector<float> parts(halves.q.size(), 0.0f);
      const int64_t cut = c.rows / 2, hs = c.heads / 2;
      ops().attention(halves.q.data(), c.rows, halves.span, halves.shape, 0, hs, 0, cut, parts.data());
      ops().attention(halves.q.data(), c.rows, halves.span, halves.shape, hs, c.heads, 0, cut, parts.data());
      ops().attention(halves.q.data(), c.rows, halves.span, halves.shape, 0, c.heads, cut, c.rows, parts.data());
      ASSERT_EQ(first_bit_difference(want, parts), -1) << describe(c) << " split";
    }
  }
}

// The head-major cache layout KvCache keeps (KvSpan::row_stride /
// head_stride: each KV head's rows contiguous, here with spare slots between
// heads as a grown cache has them) is read exactly as the token-major one:
// every case, every level, f32 and f16 caches, the same bits.
template <class T>
std::vector<T> to_head_major(const std::vector<T>& rows, int64_t slots, int64_t kv_heads, int64_t hd,
                             int64_t head_stride) {
  std::vector<T> out(static_cast<size_t>(kv_heads * head_stride), T{});
  for (int64_t s = 0; s < slots; ++s)
    for (int64_t h = 0; h < kv_heads; ++h)
      std::copy_n(rows.begin() + (s * kv_heads + h) * hd, hd, out.begin() + h * head_stride + s * hd);
  return out;
}

TEST_P(VectorOpsIsa, AttentionOnAHeadMajorCacheGivesTheTokenMajorBits) {
  std::mt19937 rng(1313);
  for (const AttentionCase& c : kAttentionCases) {
    const AttentionData rows(c, rng);
    const int64_t slots = std::max<int64_t>(1, c.capacity), hd = c.head_dim, stride = (slots + 3) * hd;
    const std::vector<float> k = to_head_major(rows.past_k, slots, c.kv_heads, hd, stride);
    const std::vector<float> v = to_head_major(rows.past_v, slots, c.kv_heads, hd, stride);
    AttentionData heads = rows;
    heads.span.past_k = k.data();
    heads.span.past_v = v.data();
    heads.span.row_stride = hd;
    heads.span.head_stride = stride;
    ASSERT_EQ(first_bit_difference(rows.run(ops().attention, 0, c.heads), heads.run(ops().attention, 0, c.heads)), -1)
        << describe(c);
    // An f16 cache in either layout.
    const std::vector<uint16_t> k16 = to_f16(rows.past_k), v16 = to_f16(rows.past_v);
    const std::vector<uint16_t> hk16 = to_head_major(k16, slots, c.kv_heads, hd, stride);
    const std::vector<uint16_t> hv16 = to_head_major(v16, slots, c.kv_heads, hd, stride);
    AttentionData tok16 = rows, head16 = heads;
    tok16.span.past_k = tok16.span.past_v = head16.span.past_k = head16.span.past_v = nullptr;
    tok16.span.past_k_f16 = k16.data();
    tok16.span.past_v_f16 = v16.data();
    head16.span.past_k_f16 = hk16.data();
    head16.span.past_v_f16 = hv16.data();
    ASSERT_EQ(first_bit_difference(tok16.run(ops().attention, 0, c.heads), head16.run(ops().attention, 0, c.heads)),
              -1)
        << describe(c) << " f16";
  }
}

// round_to_f16 is f16_to_f32(f32_to_f16(x)) bit for bit at every level:
// values across f16's normal and subnormal ranges, exact ties (which round
// to even), the overflow edge (65504 stays, 65520 and up go to inf), zeros,
// infinities and NaN (still NaN). n off the vector width.
TEST_P(VectorOpsIsa, RoundToF16IsBitIdentical) {
  std::mt19937 rng(1313);
  std::uniform_real_distribution<float> mag(-30.0f, 17.0f);
  std::vector<float> x = random_values(rng, 4099, -1.0f, 1.0f);
  for (float& v : x) v = std::ldexp(v, static_cast<int>(mag(rng)));
  const float specials[] = {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e9f,
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), 5.9604645e-8f /* 2^-24 */, 2.9802322e-8f,
                            2.9802326e-8f, 6.097555e-5f, 6.1035156e-5f /* 2^-14 */, 1.0f + 1.0f / 2048,
                            1.0f + 3.0f / 2048, 1e-10f, -1e-30f};
  std::copy(std::begin(specials), std::end(specials), x.begin());
  std::vector<float> want = x, got = x;
  for (float& v : want) v = f16_to_f32(f32_to_f16(v));
  ops().round_to_f16(got.data(), static_cast<int64_t>(got.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(got[i])) << "x " << x[i];
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(want[i]), std::bit_cast<uint32_t>(got[i])) << "x " << x[i] << " at " << i;
  }
  EXPECT_EQ(want[2], 65504.0f);
  EXPECT_TRUE(std::isinf(want[4]));
  EXPECT_EQ(want[15], 1.0f);  // a tie rounds to even
  EXPECT_EQ(want[16], 1.0f + 4.0f / 2048);
}

// dots is ref::dot_fma bit for bit (one FMA per term): blocks of 16 rows (one shared reduction),
// then 4 and 1; head_dim 64 and 128 have their own code; strides as in a
// cache of several KV heads. Values spread over many binades so that any
// other order of the sums changes bits.
TEST_P(VectorOpsIsa, DotsAreBitIdentical) {
  std::mt19937 rng(1111);
  std::uniform_real_distribution<float> mag(-12.0f, 12.0f);
  auto spread = [&](size_t n) {
    auto v = random_values(rng, n, -1.0f, 1.0f);
    for (float& x : v) x = std::ldexp(x, static_cast<int>(mag(rng)));
    for (size_t i = 0; i < v.size(); i += 37) v[i] = (i / 37) % 2 ? -0.0f : 0.0f;
    return v;
  };
  for (int64_t n : {1, 7, 15, 16, 17, 31, 32, 48, 63, 64, 65, 72, 80, 100, 127, 128, 129, 192, 256, 300}) {
    for (int64_t count : {1, 3, 4, 5, 15, 16, 17, 31, 32, 35, 48}) {
      for (int64_t extra : {int64_t{0}, int64_t{5}, 2 * n}) {
        const int64_t stride = n + extra;
        const auto a = spread(n);
        const auto b = spread(count * stride);
        std::vector<float> want(count), got(count, -7.0f);
        for (int64_t r = 0; r < count; ++r) want[r] = ref::dot_fma(a.data(), b.data() + r * stride, n);
        ops().dots(a.data(), b.data(), stride, n, count, got.data());
        ASSERT_EQ(first_bit_difference(want, got), -1) << "n " << n << " count " << count << " stride " << stride;
      }
    }
  }
}

// Rows of every length around the vector widths, with repeated maxima,
// ±0, ±inf, NaNs (first, elsewhere, everywhere) and huge rows: the index is
// the reference's. The reference's rule is the first index of the maximum
// under `>`, skipping NaNs unless x[0] is one (then 0).
TEST_P(VectorOpsIsa, ArgmaxIsTheReferenceIndex) {
  std::mt19937 rng(2024);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::uniform_int_distribution<int> pick(0, 9);
  auto check = [&](const std::vector<float>& x, const std::string& what) {
    const int64_t n = static_cast<int64_t>(x.size());
    const int64_t want = ref::argmax(x.data(), n), got = ops().argmax(x.data(), n);
    ASSERT_EQ(got, want) << what << ", n " << n;
  };
  for (int64_t n : {1, 2, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 255, 49152, 151936}) {
    for (int trial = 0; trial < 12; ++trial) {
      // Few distinct values, so maxima repeat.
      std::vector<float> x(n);
      for (float& v : x) v = static_cast<float>(pick(rng) - 5);
      check(x, "repeated values");
      // Special values sprinkled in, one class per trial.
      for (float& v : x) {
        if (pick(rng) != 0) continue;
        switch (trial % 6) {
          case 0: v = nan; break;
          case 1: v = inf; break;
          case 2: v = -inf; break;
          case 3: v = pick(rng) % 2 ? 0.0f : -0.0f; break;
          case 4: v = -nan; break;
          default: v = 5.0f; break;  // a new maximum, repeated
        }
      }
      check(x, "special values");
      x[0] = nan;
      check(x, "NaN first");
      x[0] = -inf;
      for (size_t i = 1; i < x.size(); ++i) x[i] = pick(rng) % 2 ? nan : -inf;
      check(x, "only -inf and NaN");
      for (float& v : x) v = pick(rng) % 2 ? 0.0f : -0.0f;
      check(x, "signed zeros");
      x.back() = 1e-45f;  // the largest value last (the scalar tail or the last vector)
      check(x, "maximum last");
    }
  }
  std::vector<float> all_nan(77, nan);
  check(all_nan, "all NaN");
  std::vector<float> random = random_values(rng, 49152, -30.0f, 30.0f);
  check(random, "uniform logits");
  EXPECT_EQ(ops().argmax(random.data(), 0), 0);
}

// The two vector levels run the same Highway operations (FMA inside Exp,
// Tanh and erf on both) in the same order, so TESSERA_ISA=avx2 and avx512 give
// the same bits. Not a requirement of the API; it documents that the levels
// differ only in speed today.
TEST(VectorOpsTable, VectorLevelsAgreeBitForBit) {
  if (!isa_supported(Isa::Avx2) || !isa_supported(Isa::Avx512)) GTEST_SKIP() << "needs avx2 and avx512";
  const VectorOps& a = vector_ops(Isa::Avx2);
  const VectorOps& b = vector_ops(Isa::Avx512);
  std::mt19937 rng(808);
  const int64_t n = 1037;
  const auto x = random_values(rng, n, -12.0f, 12.0f), y = random_values(rng, n, -2.0f, 2.0f);
  for (Activation act : {Activation::SiLU, Activation::GeluTanh, Activation::Gelu}) {
    std::vector<float> ra(n), rb(n);
    a.gated_activation(act, x.data(), y.data(), n, ra.data());
    b.gated_activation(act, x.data(), y.data(), n, rb.data());
    EXPECT_EQ(first_bit_difference(ra, rb), -1) << activation_name(act);
  }
  std::vector<float> sa = x, sb = x;
  a.softcap(sa.data(), n, 7.0f);
  b.softcap(sb.data(), n, 7.0f);
  EXPECT_EQ(first_bit_difference(sa, sb), -1);
  const AttentionCase c{4, 2, 80, 0, 3, 5, 70, 66, 10.0f};
  const AttentionData data(c, rng);
  EXPECT_EQ(first_bit_difference(data.run(a.attention, 0, 4), data.run(b.attention, 0, 4)), -1);
}

// Timing, skipped unless TESSERA_KERNEL_BENCH=1: SmolLM2-135M's attention
// shape (9 query heads, 3 KV heads, head_dim 64) for one decode step at
// context 560 (30 layers, each its own cache, so the 26 MB of K/V is read as
// in a real step, in KvCache's head-major layout and in token-major rows;
// also with one layer's cache 30 times, which stays in L2)
// and for one layer's prefill of 512 rows. One thread; heads [0, 9). Prints
// this thread's CPU ms (best of several runs) for each level. A decode step
// reads 26 MB of K/V; one core here streams ~20 GB/s, so ~1.3 ms of it is
// memory whatever the kernel.
TEST(VectorOpsBench, SmolLmAttention) {
  const char* env = std::getenv("TESSERA_KERNEL_BENCH");
  if (env == nullptr || std::string(env) != "1") GTEST_SKIP() << "set TESSERA_KERNEL_BENCH=1 to time";
  constexpr int64_t kHeads = 9, kKv = 3, kDim = 64, kLayers = 30, kCtx = 560, kPrefill = 512;
  const int64_t kv_width = kKv * kDim;
  std::mt19937 rng(909);
  const auto q = random_values(rng, kPrefill * kHeads * kDim, -1.0f, 1.0f);
  std::vector<std::vector<float>> ks, vs;
  for (int64_t l = 0; l < kLayers; ++l) {
    ks.push_back(random_values(rng, (kCtx + 64) * kv_width, -1.0f, 1.0f));
    vs.push_back(random_values(rng, (kCtx + 64) * kv_width, -1.0f, 1.0f));
  }
  // The same caches in f16 (an f16 KV cache).
  std::vector<std::vector<uint16_t>> ks16, vs16;
  for (int64_t l = 0; l < kLayers; ++l) {
    ks16.push_back(to_f16(ks[l]));
    vs16.push_back(to_f16(vs[l]));
  }
  // A row block of a long prompt: 128 rows after 2048 cached positions.
  constexpr int64_t kLongPast = 2048, kBlock = 128;
  const auto long_k = random_values(rng, kLongPast * kv_width, -1.0f, 1.0f);
  const auto long_v = random_values(rng, kLongPast * kv_width, -1.0f, 1.0f);
  const std::vector<uint16_t> long_k16 = to_f16(long_k), long_v16 = to_f16(long_v);
  const ref::AttentionShape shape{kHeads, kKv, kDim, 0, 0.125f, 0.0f};
  std::vector<float> out(kPrefill * kHeads * kDim);
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Neon}) {
    if (!isa_supported(isa)) continue;
    const VectorOps& ops = vector_ops(isa);
    // Cached rows in KvCache's head-major layout, or (token_major) as
    // [position][kv_width] rows, the layout before it.
    auto decode_step = [&](bool hot, bool f16 = false, bool token_major = false) {
      for (int64_t l0 = 0; l0 < kLayers; ++l0) {
        const int64_t l = hot ? 0 : l0;
        ref::KvSpan span{ks[l].data(), vs[l].data(), kCtx + 64, 0, kCtx - 1, ks[l].data() + (kCtx - 1) * kv_width,
                         vs[l].data() + (kCtx - 1) * kv_width};
        if (!token_major) {
          span.row_stride = kDim;
          span.head_stride = (kCtx + 64) * kDim;
        }
        if (f16) {
          span.past_k = span.past_v = nullptr;
          span.past_k_f16 = ks16[l].data();
          span.past_v_f16 = vs16[l].data();
        }
        ops.attention(q.data(), 1, span, shape, 0, kHeads, 0, 1, out.data());
      }
    };
    auto prefill = [&] {
      const ref::KvSpan span{nullptr, nullptr, 0, 0, 0, ks[0].data(), vs[0].data()};
      ops.attention(q.data(), kPrefill, span, shape, 0, kHeads, 0, kPrefill, out.data());
    };
    auto block_after_cache = [&](bool f16) {
      ref::KvSpan span{long_k.data(), long_v.data(), kLongPast, 0, kLongPast, ks[0].data(), vs[0].data()};
      span.row_stride = kDim;
      span.head_stride = kLongPast * kDim;
      if (f16) {
        span.past_k = span.past_v = nullptr;
        span.past_k_f16 = long_k16.data();
        span.past_v_f16 = long_v16.data();
      }
      ops.attention(q.data(), kBlock, span, shape, 0, kHeads, 0, kBlock, out.data());
    };
    auto best_ms = [](int reps, const auto& fn) {
      double best = 1e30;
      for (int r = 0; r < reps; ++r) {
        // This thread's CPU time: a busy machine's preemptions do not count.
        timespec t0{}, t1{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        fn();
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        best = std::min(best, (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6);
      }
      return best;
    };
    const double d = best_ms(isa == Isa::Scalar ? 3 : 20, [&] { decode_step(false); });
    const double dt = best_ms(isa == Isa::Scalar ? 3 : 20, [&] { decode_step(false, false, true); });
    const double dh = best_ms(isa == Isa::Scalar ? 3 : 20, [&] { decode_step(true); });
    const double d16 = best_ms(isa == Isa::Scalar ? 3 : 20, [&] { decode_step(false, true); });
    const double dh16 = best_ms(isa == Isa::Scalar ? 3 : 20, [&] { decode_step(true, true); });
    const double p = best_ms(isa == Isa::Scalar ? 1 : 5, prefill);
    const double b32 = best_ms(isa == Isa::Scalar ? 1 : 5, [&] { block_after_cache(false); });
    const double b16 = best_ms(isa == Isa::Scalar ? 1 : 5, [&] { block_after_cache(true); });
    std::printf("[bench] %-7s (thread CPU ms, best of several) decode step (30 layers, ctx 560): %7.3f ms (token-major "
                "rows: %7.3f ms; one layer's cache 30x: %7.3f ms; f16 cache: %7.3f / %7.3f ms)   prefill 512 (1 layer): "
                "%7.3f ms (x30: %6.1f ms)   128 rows after 2048 cached (1 layer): f32 %7.3f ms, f16 %7.3f ms\n",
                ops.isa, d, dt, dh, d16, dh16, p, 30 * p, b32, b16);
  }
}

// Timing, skipped unless TESSERA_KERNEL_BENCH=1: the argmax of one logits
// row of SmolLM2 (49152), Qwen2.5 (151936) and Gemma 3 (262144), warm in
// cache as after the head.
TEST(VectorOpsBench, LogitsArgmax) {
  const char* env = std::getenv("TESSERA_KERNEL_BENCH");
  if (env == nullptr || std::string(env) != "1") GTEST_SKIP() << "set TESSERA_KERNEL_BENCH=1 to time";
  std::mt19937 rng(910);
  for (int64_t vocab : {49152, 151936, 262144}) {
    const auto logits = random_values(rng, vocab, -20.0f, 20.0f);
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Neon}) {
      if (!isa_supported(isa)) continue;
      const VectorOps& ops = vector_ops(isa);
      constexpr int kCalls = 200;
      double best = 1e30;
      int64_t sink = 0;
      for (int r = 0; r < 10; ++r) {
        timespec t0{}, t1{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        for (int c = 0; c < kCalls; ++c) sink += ops.argmax(logits.data(), vocab);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        best = std::min(best, ((t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) * 1e-3) / kCalls);
      }
      std::printf("[bench] argmax of %lld logits, %-7s %7.2f us (thread CPU, best of 10 x %d calls; index %lld)\n",
                  static_cast<long long>(vocab), ops.isa, best, kCalls, static_cast<long long>(sink / (10 * kCalls)));
    }
  }
}

}  // namespace
}  // namespace tessera::kernels

namespace tessera::kernels {
namespace {

// A naive reading of LFM2's conv over the whole sequence, with conv1d's zero
// padding: y_t = C_t · Σ_j w_j · bx_{t-(K-1)+j}, bx = B · x.
std::vector<float> naive_short_conv(const std::vector<float>& bcx, int64_t rows, int64_t channels, int64_t kernel,
                                    const std::vector<float>& taps) {
  std::vector<float> bx(rows * channels), y(rows * channels);
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t c = 0; c < channels; ++c) bx[t * channels + c] = bcx[t * 3 * channels + c] * bcx[t * 3 * channels + 2 * channels + c];
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t c = 0; c < channels; ++c) {
      double acc = 0;
      for (int64_t j = 0; j < kernel; ++j) {
        const int64_t s = t - (kernel - 1) + j;
        if (s >= 0) acc += static_cast<double>(taps[j * channels + c]) * bx[s * channels + c];
      }
      y[t * channels + c] = static_cast<float>(bcx[t * 3 * channels + channels + c] * acc);
    }
  return y;
}

class SequenceKernelsIsa : public ::testing::TestWithParam<Isa> {};
INSTANTIATE_TEST_SUITE_P(VectorOps, SequenceKernelsIsa, ::testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Neon),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

// Each level's short_conv has the reference's bits, whatever the channel
// split and however the sequence is cut into calls (the earlier calls' bx
// rows handed over as `past`, as the conv state does), and the reference is
// the convolution (a double-precision naive one, to a float's rounding).
TEST_P(SequenceKernelsIsa, BitIdenticalAcrossSplitsAndCalls) {
  if (!isa_supported(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not supported here";
  const VectorOps& ops = vector_ops(GetParam());
  std::mt19937 rng(4242);
  std::uniform_real_distribution<float> d(-1.5f, 1.5f);
  for (int64_t kernel : {1, 3, 4}) {
    for (int64_t channels : {5, 16, 37}) {
      const int64_t rows = 11;
      std::vector<float> bcx(rows * 3 * channels), taps(kernel * channels);
      for (float& v : bcx) v = d(rng);
      for (float& v : taps) v = d(rng);
      // The reference in one call.
      std::vector<float> bx(rows * channels), want(rows * channels);
      std::vector<const float*> none(static_cast<size_t>(kernel), nullptr);
      ref::short_conv(bcx.data(), rows, channels, kernel, taps.data(), none.data(), 0, channels, bx.data(),
                      want.data());
      const std::vector<float> naive = naive_short_conv(bcx, rows, channels, kernel, taps);
      for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(want[i], naive[i], 1e-5f * (1 + std::fabs(naive[i])));
      // This level, in calls of 1..4 rows and two channel ranges per call.
      for (int64_t step : {1, 3, 4}) {
        std::vector<float> got_bx(rows * channels), got(rows * channels);
        for (int64_t first = 0; first < rows; first += step) {
          const int64_t n = std::min(step, rows - first);
          std::vector<const float*> past(static_cast<size_t>(kernel));
          for (int64_t i = 0; i + 1 < kernel; ++i) {
            const int64_t p = first - (kernel - 1) + i;
            past[i] = p < 0 ? nullptr : got_bx.data() + p * channels;
          }
          const int64_t mid = channels / 2;
          for (auto [c0, c1] : {std::pair<int64_t, int64_t>{0, mid}, {mid, channels}})
            ops.short_conv(bcx.data() + first * 3 * channels, n, channels, kernel, taps.data(), past.data(), c0, c1,
                           got_bx.data() + first * channels, got.data() + first * channels);
        }
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(want[i]), std::bit_cast<uint32_t>(got[i]))
              << "kernel " << kernel << " channels " << channels << " step " << step << " at " << i;
        EXPECT_EQ(bx, got_bx);
      }
    }
  }
}


// delta_rule_step: each level's state and output have the reference's bits
// over a run of positions (so a rollback's replay with the reference rebuilds
// the state a vector level left), and the reference is the delta rule itself
// (S ← decay·S; δ = β(v − Sᵀk); S ← S + kδᵀ; o = Sᵀq, in double).
TEST_P(SequenceKernelsIsa, DeltaRuleStepIsBitIdenticalAndIsTheDeltaRule) {
  if (!isa_supported(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not supported here";
  const VectorOps& ops = vector_ops(GetParam());
  std::mt19937 rng(777);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f), pos(0.2f, 1.0f);
  for (auto [dk, dv] : {std::pair<int64_t, int64_t>{16, 8}, {8, 16}, {32, 32}, {5, 7}}) {
    std::vector<float> want(dk * dv, 0.0f), got(dk * dv, 0.0f), scratch(dv), o_want(dv), o_got(dv);
    std::vector<double> S(dk * dv, 0.0);
    for (int step = 0; step < 20; ++step) {
      std::vector<float> q(dk), k(dk), v(dv);
      for (float& x : q) x = d(rng);
      for (float& x : k) x = d(rng);
      for (float& x : v) x = d(rng);
      const float decay = pos(rng), beta = pos(rng);
      ref::delta_rule_step(want.data(), q.data(), k.data(), v.data(), decay, beta, dk, dv, scratch.data(),
                           o_want.data());
      ops.delta_rule_step(got.data(), q.data(), k.data(), v.data(), decay, beta, dk, dv, scratch.data(), o_got.data());
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(want[i]), std::bit_cast<uint32_t>(got[i])) << dk << "x" << dv << " " << i;
      for (int64_t j = 0; j < dv; ++j) ASSERT_EQ(std::bit_cast<uint32_t>(o_want[j]), std::bit_cast<uint32_t>(o_got[j]));
      // The rule in double.
      for (double& x : S) x *= decay;
      std::vector<double> delta(dv);
      for (int64_t j = 0; j < dv; ++j) {
        double m = 0;
        for (int64_t i = 0; i < dk; ++i) m += S[i * dv + j] * k[i];
        delta[j] = beta * (v[j] - m);
      }
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j) S[i * dv + j] += k[i] * delta[j];
      for (int64_t j = 0; j < dv; ++j) {
        double oj = 0;
        for (int64_t i = 0; i < dk; ++i) oj += S[i * dv + j] * q[i];
        ASSERT_NEAR(o_want[j], oj, 1e-4 * (1 + std::fabs(oj)));
      }
    }
  }
}

// causal_conv_silu: the convolution a naive double one, the SiLU within a
// few ulp of the reference's, and the same values however the sequence is
// cut into calls and the channels into ranges.
TEST_P(SequenceKernelsIsa, CausalConvSiluMatchesTheReference) {
  if (!isa_supported(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not supported here";
  const VectorOps& ops = vector_ops(GetParam());
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> d(-1.5f, 1.5f);
  const int64_t rows = 13, channels = 37, kernel = 4;
  std::vector<float> x(rows * channels), taps(kernel * channels);
  for (float& v : x) v = d(rng);
  for (float& v : taps) v = d(rng);
  std::vector<const float*> none(kernel, nullptr);
  std::vector<float> want(rows * channels);
  ref::causal_conv_silu(x.data(), rows, channels, kernel, taps.data(), none.data(), 0, channels, want.data());
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t c = 0; c < channels; ++c) {
      double acc = 0;
      for (int64_t j = 0; j < kernel; ++j) {
        const int64_t s = t - (kernel - 1) + j;
        if (s >= 0) acc += static_cast<double>(taps[j * channels + c]) * x[s * channels + c];
      }
      ASSERT_NEAR(want[t * channels + c], acc / (1 + std::exp(-acc)), 1e-5 * (1 + std::fabs(acc)));
    }
  for (int64_t step : {int64_t{1}, int64_t{5}, rows}) {
    std::vector<float> got(rows * channels);
    for (int64_t first = 0; first < rows; first += step) {
      const int64_t n = std::min(step, rows - first);
      std::vector<const float*> past(kernel);
      for (int64_t i = 0; i + 1 < kernel; ++i) {
        const int64_t p = first - (kernel - 1) + i;
        past[i] = p < 0 ? nullptr : x.data() + p * channels;
      }
      for (auto [c0, c1] : {std::pair<int64_t, int64_t>{0, 20}, {20, channels}})
        ops.causal_conv_silu(x.data() + first * channels, n, channels, kernel, taps.data(), past.data(), c0, c1,
                             got.data() + first * channels);
    }
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 4e-7f * (1 + std::fabs(want[i]))) << "step " << step << " at " << i;
  }
}

}  // namespace
}  // namespace tessera::kernels
