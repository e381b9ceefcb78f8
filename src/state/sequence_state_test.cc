// The per-layer state contract (sequence_state.h): rollback within the
// margin after rings and conv tails have wrapped, refusal beyond it with
// nothing changed, snapshot / restore, and the bytes each layer takes.
#include "state/sequence_state.h"

#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/reference/kernels.h"

namespace tessera {
namespace {

constexpr int64_t kHidden = 4, kKernel = 3, kWindow = 4, kContext = 64, kMargin = 3;

// Layer 0: short conv; 1: sliding attention; 2: full attention.
ModelSpec hybrid_spec() {
  ModelSpec s;
  s.arch = "lfm2";
  s.num_layers = 3;
  s.layer_types = {LayerKind::ShortConv, LayerKind::SlidingAttention, LayerKind::FullAttention};
  s.sliding_window = kWindow;
  s.num_heads = 2;
  s.num_kv_heads = 1;
  s.head_dim = 2;
  s.hidden_size = kHidden;
  s.conv_kernel = kKernel;
  s.context_length = kContext;
  return s;
}

// Writes positions length() .. n-1 (row p's values are p + channel / 10) to
// every layer, one call of `step` rows at a time.
void feed(SequenceState& st, int64_t n, int64_t step = 1) {
  while (st.length() < n) {
    const int64_t first = st.length(), rows = std::min(step, n - first);
    std::vector<float> conv(rows * kHidden), kv(rows * 2);
    for (int64_t t = 0; t < rows; ++t) {
      for (int64_t c = 0; c < kHidden; ++c) conv[t * kHidden + c] = static_cast<float>(first + t) + 0.1f * c;
      for (int64_t c = 0; c < 2; ++c) kv[t * 2 + c] = static_cast<float>(first + t) + 0.1f * c;
    }
    st.conv().store(0, first, conv.data(), rows);
    st.kv().store(1, kv.data(), kv.data(), rows);
    st.kv().store(2, kv.data(), kv.data(), rows);
    st.advance(rows);
  }
}

// The conv tail a call at length() reads holds exactly positions
// length()-2, length()-1 (their values say which position they are).
void expect_tail_of(const SequenceState& st) {
  const float* rows[kKernel - 1];
  st.conv().past_rows(0, st.length(), rows);
  for (int64_t i = 0; i < kKernel - 1; ++i) {
    const int64_t p = st.length() - (kKernel - 1) + i;
    if (p < 0) {
      EXPECT_EQ(rows[i], nullptr);
    } else {
      ASSERT_NE(rows[i], nullptr);
      EXPECT_EQ(rows[i][1], static_cast<float>(p) + 0.1f) << "position " << p;
    }
  }
}

TEST(SequenceState, RollbackWithinTheMarginWorksAfterEveryRingWrapped) {
  SequenceState st(hybrid_spec(), kContext, KvType::F32, kMargin);
  feed(st, 40);  // rings of window + margin = 7 and tails of 2 + 3 wrapped many times
  for (int64_t k = 0; k <= kMargin; ++k) {
    SequenceState copy = st.snapshot();
    ASSERT_TRUE(copy.can_truncate(40 - k)) << k;
    ASSERT_TRUE(copy.rollback(k)) << k;
    EXPECT_EQ(copy.length(), 40 - k);
    expect_tail_of(copy);
    // The sliding layer's span sees positions 40-k-3 .. 40-k-1 in their slots.
    const ref::KvSpan span = copy.kv().span(1, kWindow, nullptr, nullptr);
    for (int64_t p = span.past_begin; p < span.past_end; ++p)
      EXPECT_EQ(span.past_k[span.past_at(p % span.capacity, 0, 2, 2)], static_cast<float>(p)) << p;
    // Continuing after the rollback writes over the forgotten positions.
    feed(copy, 45, 2);
    expect_tail_of(copy);
  }
}

TEST(SequenceState, RollbackBeyondTheMarginIsRefusedAndChangesNothing) {
  SequenceState st(hybrid_spec(), kContext, KvType::F32, kMargin);
  feed(st, 40);
  const int64_t too_far = kMargin + 3;  // past both the conv tail's and the ring's spare slots
  EXPECT_FALSE(st.can_truncate(40 - too_far));
  EXPECT_FALSE(st.rollback(too_far));
  EXPECT_EQ(st.length(), 40);
  expect_tail_of(st);
  EXPECT_TRUE(st.truncate(0));  // the start is always reachable
  EXPECT_EQ(st.length(), 0);
}

TEST(SequenceState, WithoutAMarginTheConvTailCannotGoBack) {
  SequenceState st(hybrid_spec(), kContext, KvType::F32, 0);
  feed(st, 10);
  EXPECT_TRUE(st.can_truncate(10));
  EXPECT_FALSE(st.can_truncate(9));  // position 7 was overwritten by 9
  feed(st, 12);
  EXPECT_TRUE(st.truncate(12));
}

TEST(SequenceState, BeforeTheFirstWrapAnyPrefixIsKept) {
  SequenceState st(hybrid_spec(), kContext, KvType::F32, 8);  // tails of 10, rings of 12
  feed(st, 9);
  for (int64_t n = 9; n >= 0; --n) EXPECT_TRUE(st.can_truncate(n)) << n;
}

TEST(SequenceState, SnapshotRestoreIsExact) {
  SequenceState st(hybrid_spec(), kContext, KvType::F32, kMargin);
  feed(st, 20);
  const SequenceState snap = st.snapshot();
  feed(st, 30);
  st.restore(snap);
  EXPECT_EQ(st.length(), 20);
  expect_tail_of(st);
  // A snapshot of another shape is refused with an error.
  SequenceState other(hybrid_spec(), kContext / 2, KvType::F32, kMargin);
  EXPECT_THROW(other.restore(snap), Error);
}

TEST(SequenceState, LayerBytesFollowTheArithmetic) {
  const ModelSpec s = hybrid_spec();
  SequenceState st(s, kContext, KvType::F32, kMargin);
  // Conv tail: (kernel-1 + margin) rows of hidden f32.
  EXPECT_EQ(st.layer_bytes(0, 1000), static_cast<uint64_t>((kKernel - 1 + kMargin) * kHidden * 4));
  // Sliding layer: keys and values of window + margin positions at most.
  EXPECT_EQ(st.layer_bytes(1, 2), 2u * 2 * 2 * 4);
  EXPECT_EQ(st.layer_bytes(1, 1000), static_cast<uint64_t>(2 * (kWindow + kMargin) * 2 * 4));
  // Full layer: every position up to the context.
  EXPECT_EQ(st.layer_bytes(2, 50), 2u * 50 * 2 * 4);
  EXPECT_EQ(st.layer_bytes(2, 1000), static_cast<uint64_t>(2 * kContext * 2 * 4));
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// Qwen3.5-like: one gated delta-net layer (2 value heads of 4 x 3), one
// attention layer.
ModelSpec delta_spec() {
  ModelSpec s;
  s.arch = "qwen3_5";
  s.num_layers = 2;
  s.layer_types = {LayerKind::LinearAttention, LayerKind::FullAttention};
  s.num_heads = 2;
  s.num_kv_heads = 1;
  s.head_dim = 2;
  s.hidden_size = 4;
  s.linear_num_key_heads = 1;
  s.linear_num_value_heads = 2;
  s.linear_key_head_dim = 4;
  s.linear_value_head_dim = 3;
  s.linear_conv_kernel = 4;
  s.context_length = 256;
  return s;
}

// Runs positions length() .. n-1 through the delta rule as the executor
// does (update, then log), with inputs drawn from position-seeded values.
void feed_delta(SequenceState& st, int64_t n) {
  RecurrentState& r = st.recurrent();
  const int64_t H = 2, dk = 4, dv = 3;
  std::vector<float> scratch(dv);
  while (st.length() < n) {
    const int64_t p = st.length();
    std::mt19937 rng(static_cast<uint32_t>(p));
    std::uniform_real_distribution<float> d(-1.0f, 1.0f), pos(0.3f, 1.0f);
    std::vector<float> k(H * dk), v(H * dv), decay(H), beta(H);
    for (float& x : k) x = d(rng);
    for (float& x : v) x = d(rng);
    for (float& x : decay) x = pos(rng);
    for (float& x : beta) x = pos(rng);
    for (int64_t h = 0; h < H; ++h)
      ref::delta_rule_step(r.matrices(0) + h * dk * dv, nullptr, &k[h * dk], &v[h * dv], decay[h], beta[h], dk, dv,
                           scratch.data(), nullptr);
    r.log(0, p, k.data(), v.data(), decay.data(), beta.data(), 1);
    std::vector<float> conv(st.conv().channels(0), static_cast<float>(p)), kv(2, 0.0f);
    st.conv().store(0, p, conv.data(), 1);
    st.kv().store(1, kv.data(), kv.data(), 1);
    st.advance(1);
  }
}

std::vector<float> matrices_of(SequenceState& st) {
  const float* S = st.recurrent().matrices(0);
  return std::vector<float>(S, S + 2 * 4 * 3);
}

TEST(SequenceState, RecurrentRollbackReplaysToTheExactMatrices) {
  const int64_t margin = 4;
  SequenceState st(delta_spec(), 256, KvType::F32, margin);
  feed_delta(st, 60);  // the checkpoint has moved on several times
  for (int64_t k = 0; k <= margin; ++k) {
    SequenceState copy = st.snapshot();
    ASSERT_TRUE(copy.rollback(k)) << k;
    SequenceState fresh(delta_spec(), 256, KvType::F32, margin);
    feed_delta(fresh, 60 - k);
    EXPECT_EQ(matrices_of(copy), matrices_of(fresh)) << "rollback of " << k;
    feed_delta(copy, 63);
    feed_delta(fresh, 63);
    EXPECT_EQ(matrices_of(copy), matrices_of(fresh)) << "continued after a rollback of " << k;
  }
  EXPECT_FALSE(st.can_truncate(60 - 3 * margin));  // before the checkpoint
  EXPECT_TRUE(st.truncate(0));
  EXPECT_EQ(matrices_of(st), std::vector<float>(24, 0.0f));
}

TEST(SequenceState, RecurrentStateBytes) {
  SequenceState st(delta_spec(), 256, KvType::F32, 4);
  // Two copies of the matrices (current, checkpoint) and a log of 2·margin+1
  // positions (k, v, decay, beta per value head), plus the conv tail of
  // (kernel-1 + margin) rows of q|k|v channels (2·4 + 2·3 = 14).
  const uint64_t matrices = 2 * 2 * 4 * 3, log = 9 * 2 * (4 + 3 + 2), tail = (3 + 4) * 14;
  EXPECT_EQ(st.layer_bytes(0, 1000), (matrices + log + tail) * 4);
}

}  // namespace
}  // namespace tessera
