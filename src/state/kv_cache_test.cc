#include "state/kv_cache.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/half.h"
#include "core/model_spec.h"
#include "kernels/reference/kernels.h"

namespace tessera {
namespace {

constexpr int64_t kWindow = 4;
constexpr int64_t kContext = 16;
constexpr int64_t kHeads = 2, kHeadDim = 3;
constexpr int64_t kWidth = kHeads * kHeadDim;  // a row of one position, as the model writes it

// Layer 0: full attention; layer 1: sliding window of 4.
ModelSpec two_layer_spec() {
  ModelSpec s;
  s.num_layers = 2;
  s.layer_types = {LayerKind::FullAttention, LayerKind::SlidingAttention};
  s.sliding_window = kWindow;
  s.num_kv_heads = kHeads;
  s.head_dim = kHeadDim;
  s.num_heads = 2 * kHeads;
  s.hidden_size = 4;
  s.context_length = kContext;
  return s;
}

// Random keys and values for positions 0 .. n-1 ([n][kWidth] each).
struct Rows {
  std::vector<float> k, v;
};
Rows make_rows(std::mt19937& rng, int64_t n) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  Rows r;
  r.k.resize(n * kWidth);
  r.v.resize(n * kWidth);
  for (float& x : r.k) x = d(rng);
  for (float& x : r.v) x = d(rng);
  return r;
}

// A cached value of a span: f32, or an f16 cache's value widened.
float cached(const float* f32, const uint16_t* f16, int64_t i) { return f16 ? f16_to_f32(f16[i]) : f32[i]; }

// Where element i of position p's row (head i / kHeadDim) lies in a span's
// cache: slot p % capacity of that head, in the span's (head-major) layout.
int64_t at(const ref::KvSpan& s, int64_t p, int64_t i) {
  return s.past_at(p % s.capacity, i / kHeadDim, kWidth, kHeadDim) + i % kHeadDim;
}

// Checks that span(layer, window) shows the positions [want_begin, length) at
// slot p % capacity (`all` holds what the cache should return: the rows
// rounded to f16 for an f16 cache).
void expect_span_holds(const KvCache& kv, int64_t layer, int64_t window, int64_t want_begin, const Rows& all) {
  const ref::KvSpan s = kv.span(layer, window, nullptr, nullptr);
  SCOPED_TRACE(testing::Message() << "layer " << layer << " length " << kv.length());
  EXPECT_EQ(s.past_end, kv.length());
  EXPECT_EQ(s.past_begin, want_begin);
  EXPECT_EQ(s.capacity, kv.layer_capacity(layer));
  for (int64_t p = s.past_begin; p < s.past_end; ++p)
    for (int64_t i = 0; i < kWidth; ++i) {
      ASSERT_EQ(cached(s.past_k, s.past_k_f16, at(s, p, i)), all.k[p * kWidth + i]) << "k at position " << p;
      ASSERT_EQ(cached(s.past_v, s.past_v_f16, at(s, p, i)), all.v[p * kWidth + i]) << "v at position " << p;
    }
}

Rows rounded_to_f16(Rows r) {
  ref::round_to_f16(r.k.data(), static_cast<int64_t>(r.k.size()));
  ref::round_to_f16(r.v.data(), static_cast<int64_t>(r.v.size()));
  return r;
}

TEST(KvCache, LayerCapacity) {
  const ModelSpec spec = two_layer_spec();
  KvCache kv(spec, kContext);
  EXPECT_EQ(kv.layer_capacity(0), kContext);
  EXPECT_EQ(kv.layer_capacity(1), kWindow);
  EXPECT_EQ(kv.length(), 0);
  EXPECT_EQ(kv.context_length(), kContext);
  // A window at least as long as the context needs no ring.
  KvCache small(spec, 3);
  EXPECT_EQ(small.layer_capacity(0), 3);
  EXPECT_EQ(small.layer_capacity(1), 3);
}

TEST(KvCache, RejectsNonPositiveContext) {
  const ModelSpec spec = two_layer_spec();
  EXPECT_THROW(KvCache(spec, 0), Error);
  EXPECT_THROW(KvCache(spec, -5), Error);
}

TEST(KvCache, StoreOneAtATimeThenSpan) {
  std::mt19937 rng(1);
  const Rows all = make_rows(rng, kContext);
  KvCache kv(two_layer_spec(), kContext);
  for (int64_t p = 0; p < kContext; ++p) {
    for (int64_t layer = 0; layer < 2; ++layer) kv.store(layer, &all.k[p * kWidth], &all.v[p * kWidth], 1);
    kv.advance(1);
    ASSERT_EQ(kv.length(), p + 1);
    expect_span_holds(kv, 0, 0, 0, all);
    expect_span_holds(kv, 1, kWindow, std::max<int64_t>(0, kv.length() - kWindow + 1), all);
  }
}

TEST(KvCache, SpanPassesNewRowsThrough) {
  KvCache kv(two_layer_spec(), kContext);
  const float nk[2] = {1, 2}, nv[2] = {3, 4};
  const ref::KvSpan s = kv.span(1, kWindow, nk, nv);
  EXPECT_EQ(s.new_k, nk);
  EXPECT_EQ(s.new_v, nv);
  EXPECT_EQ(s.past_begin, 0);
  EXPECT_EQ(s.past_end, 0);
}

TEST(KvCache, StoreChunksThenSpan) {
  std::mt19937 rng(2);
  const Rows all = make_rows(rng, kContext);
  KvCache kv(two_layer_spec(), kContext);
  for (int64_t n : {3, 2, 5, 1, 4, 1}) {
    const int64_t p = kv.length();
    for (int64_t layer = 0; layer < 2; ++layer) kv.store(layer, &all.k[p * kWidth], &all.v[p * kWidth], n);
    kv.advance(n);
    expect_span_holds(kv, 0, 0, 0, all);
    expect_span_holds(kv, 1, kWindow, std::max<int64_t>(0, kv.length() - kWindow + 1), all);
  }
  EXPECT_EQ(kv.length(), kContext);
}

TEST(KvCache, StoringMoreThanWindowKeepsLastWindow) {
  std::mt19937 rng(3);
  const Rows all = make_rows(rng, kContext);
  for (int64_t start : {0, 2}) {
    KvCache kv(two_layer_spec(), kContext);
    if (start > 0) {
      for (int64_t layer = 0; layer < 2; ++layer) kv.store(layer, all.k.data(), all.v.data(), start);
      kv.advance(start);
    }
    const int64_t n = 7;  // > window
    for (int64_t layer = 0; layer < 2; ++layer)
      kv.store(layer, &all.k[start * kWidth], &all.v[start * kWidth], n);
    kv.advance(n);
    const int64_t len = start + n;
    // The ring holds exactly the last `window` positions, each at p % window.
    const ref::KvSpan s = kv.span(1, kWindow, nullptr, nullptr);
    for (int64_t p = len - kWindow; p < len; ++p)
      for (int64_t i = 0; i < kWidth; ++i) {
        EXPECT_EQ(s.past_k[at(s, p, i)], all.k[p * kWidth + i]) << "start " << start << " p " << p;
        EXPECT_EQ(s.past_v[at(s, p, i)], all.v[p * kWidth + i]) << "start " << start << " p " << p;
      }
    expect_span_holds(kv, 0, 0, 0, all);
  }
}

TEST(KvCache, ExceedingContextThrows) {
  std::mt19937 rng(4);
  const Rows all = make_rows(rng, kContext + 1);
  {
    KvCache kv(two_layer_spec(), kContext);
    EXPECT_THROW(kv.store(0, all.k.data(), all.v.data(), kContext + 1), Error);
    EXPECT_THROW(kv.store(1, all.k.data(), all.v.data(), kContext + 1), Error);
  }
  {
    KvCache kv(two_layer_spec(), kContext);
    for (int64_t layer = 0; layer < 2; ++layer) kv.store(layer, all.k.data(), all.v.data(), 10);
    kv.advance(10);
    EXPECT_THROW(kv.store(0, all.k.data(), all.v.data(), 7), Error);
    EXPECT_THROW(kv.store(1, all.k.data(), all.v.data(), 7), Error);
    EXPECT_NO_THROW(kv.store(0, &all.k[10 * kWidth], &all.v[10 * kWidth], 6));
    EXPECT_NO_THROW(kv.store(1, &all.k[10 * kWidth], &all.v[10 * kWidth], 6));
    kv.advance(6);
    EXPECT_THROW(kv.store(0, all.k.data(), all.v.data(), 1), Error);
    EXPECT_THROW(kv.store(1, all.k.data(), all.v.data(), 1), Error);
  }
}

// Fills both layers with positions 0 .. n-1 one call at a time.
void fill(KvCache& kv, const Rows& all, int64_t n) {
  for (int64_t p = kv.length(); p < n; ++p) {
    for (int64_t layer = 0; layer < 2; ++layer) kv.store(layer, &all.k[p * kWidth], &all.v[p * kWidth], 1);
    kv.advance(1);
  }
}

TEST(KvCache, TruncateToCurrentLengthIsTrue) {
  std::mt19937 rng(5);
  const Rows all = make_rows(rng, kContext);
  KvCache kv(two_layer_spec(), kContext);
  EXPECT_TRUE(kv.truncate(0));
  fill(kv, all, 10);
  EXPECT_TRUE(kv.truncate(10));
  EXPECT_EQ(kv.length(), 10);
}

TEST(KvCache, TruncateWithinRingIsTrueAndKeepsContents) {
  std::mt19937 rng(6);
  const Rows all = make_rows(rng, kContext);
  KvCache kv(two_layer_spec(), kContext);
  fill(kv, all, 10);  // ring holds positions 6..9
  // A query at 9 needs 6..8: all still in the ring.
  ASSERT_TRUE(kv.truncate(9));
  EXPECT_EQ(kv.length(), 9);
  expect_span_holds(kv, 0, 0, 0, all);
  expect_span_holds(kv, 1, kWindow, 9 - kWindow + 1, all);
}

TEST(KvCache, TruncatePastRingIsFalseAndChangesNothing) {
  std::mt19937 rng(7);
  const Rows all = make_rows(rng, kContext);
  KvCache kv(two_layer_spec(), kContext);
  fill(kv, all, 10);  // ring holds positions 6..9
  // A query at 8 needs 5..7; 5 was overwritten by 9.
  for (int64_t n : {8, 5, 3, 1}) {
    EXPECT_FALSE(kv.truncate(n)) << n;
    EXPECT_EQ(kv.length(), 10) << n;
  }
  expect_span_holds(kv, 1, kWindow, 10 - kWindow + 1, all);
  kv.clear();
  EXPECT_EQ(kv.length(), 0);
}

TEST(KvCache, TruncateWithoutWrapIsTrue) {
  std::mt19937 rng(8);
  const Rows all = make_rows(rng, kContext);
  KvCache kv(two_layer_spec(), kContext);
  fill(kv, all, 4);  // ring holds 0..3, nothing overwritten yet
  for (int64_t n : {3, 2, 1}) {
    ASSERT_TRUE(kv.truncate(n)) << n;
    EXPECT_EQ(kv.length(), n);
    expect_span_holds(kv, 1, kWindow, std::max<int64_t>(0, n - kWindow + 1), all);
  }
}

TEST(KvCache, TruncateThenStoreOverwrites) {
  std::mt19937 rng(9);
  const Rows all = make_rows(rng, kContext);
  const Rows other = make_rows(rng, kContext);
  KvCache kv(two_layer_spec(), kContext);
  fill(kv, all, 10);
  ASSERT_TRUE(kv.truncate(9));
  // Position 9 recomputed with different values.
  Rows mixed = all;
  std::memcpy(&mixed.k[9 * kWidth], &other.k[9 * kWidth], sizeof(float) * kWidth);
  std::memcpy(&mixed.v[9 * kWidth], &other.v[9 * kWidth], sizeof(float) * kWidth);
  for (int64_t layer = 0; layer < 2; ++layer) kv.store(layer, &mixed.k[9 * kWidth], &mixed.v[9 * kWidth], 1);
  kv.advance(1);
  expect_span_holds(kv, 0, 0, 0, mixed);
  expect_span_holds(kv, 1, kWindow, 10 - kWindow + 1, mixed);
}

// Two truncations in a row, with nothing stored between them. After the first,
// the ring still physically holds 6..9 (slot 1 holds position 9, not 5), so a
// query at 8, which needs 5..7, can no longer be served.
TEST(KvCache, RepeatedTruncateDoesNotClaimOverwrittenPositions) {
  std::mt19937 rng(10);
  const Rows all = make_rows(rng, kContext);
  KvCache kv(two_layer_spec(), kContext);
  fill(kv, all, 10);  // ring: positions 6..9
  ASSERT_TRUE(kv.truncate(9));
  const bool ok = kv.truncate(8);
  if (ok) {
    // If truncate claims success, the span must really show positions 5..7.
    expect_span_holds(kv, 1, kWindow, 8 - kWindow + 1, all);
  }
  EXPECT_FALSE(ok) << "position 5 was overwritten by position 9 before the first truncate";
}

// A query at position 0 needs no cached keys, so truncating to 0 can always succeed.
TEST(KvCache, TruncateToZeroAlwaysPossible) {
  std::mt19937 rng(11);
  const Rows all = make_rows(rng, kContext);
  KvCache kv(two_layer_spec(), kContext);
  fill(kv, all, 10);
  EXPECT_TRUE(kv.truncate(0));
  EXPECT_EQ(kv.length(), 0);
}

TEST(KvCache, RingMemoryStaysBounded) {
  std::mt19937 rng(12);
  {
    const Rows all = make_rows(rng, kContext);
    KvCache kv(two_layer_spec(), kContext);
    fill(kv, all, kContext);
    // Full layer: at most 16 slots; ring: 4. Allow 2x slack for vector growth.
    const uint64_t exact = (kContext + kWindow) * kWidth * 2 * sizeof(float);
    EXPECT_GE(kv.bytes_allocated(), exact);
    EXPECT_LE(kv.bytes_allocated(), 2 * exact);
  }
  {
    // A model of sliding layers only, long context: memory does not grow with length.
    ModelSpec spec = two_layer_spec();
    spec.layer_types = {LayerKind::SlidingAttention, LayerKind::SlidingAttention};
    const int64_t ctx = 1000;
    const Rows all = make_rows(rng, ctx);
    KvCache kv(spec, ctx);
    EXPECT_EQ(kv.layer_capacity(0), kWindow);
    fill(kv, all, kWindow);
    const uint64_t after_window = kv.bytes_allocated();
    EXPECT_LE(after_window, 2u * 2 * kWindow * kWidth * 2 * sizeof(float));
    fill(kv, all, ctx);
    EXPECT_EQ(kv.bytes_allocated(), after_window);
    expect_span_holds(kv, 0, kWindow, ctx - kWindow + 1, all);
  }
}

// Attention through a `type` cache's spans, in calls of `splits` tokens,
// against one call over the whole sequence `all`, bit for bit, for both
// layer kinds.
void expect_chunked_attention_matches_one_call(KvType type, const Rows& all, std::mt19937& rng,
                                               const std::vector<int64_t>& splits) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  ref::AttentionShape sh;
  sh.heads = 2 * kHeads;
  sh.kv_heads = kHeads;
  sh.head_dim = kHeadDim;
  sh.scale = 0.7f;
  const int64_t qw = sh.heads * sh.head_dim;
  std::vector<float> q(kContext * qw);
  for (float& x : q) x = d(rng);
  for (int64_t layer = 0; layer < 2; ++layer) {
    const int64_t window = layer == 0 ? 0 : kWindow;
    sh.window = window;
    ref::KvSpan one;  // nothing cached: every row is the call's own
    one.capacity = 1;
    one.new_k = all.k.data();
    one.new_v = all.v.data();
    std::vector<float> whole(q.size());
    ref::attention(q.data(), kContext, one, sh, 0, sh.heads, 0, kContext, whole.data());

    KvCache kv(two_layer_spec(), kContext, type);
    std::vector<float> chunked(q.size(), std::numeric_limits<float>::quiet_NaN());
    for (int64_t n : splits) {
      const int64_t p = kv.length();
      const ref::KvSpan s = kv.span(layer, window, &all.k[p * kWidth], &all.v[p * kWidth]);
      ref::attention(&q[p * qw], n, s, sh, 0, sh.heads, 0, n, &chunked[p * qw]);
      kv.store(layer, &all.k[p * kWidth], &all.v[p * kWidth], n);
      kv.advance(n);
    }
    ASSERT_EQ(kv.length(), kContext);
    EXPECT_EQ(std::memcmp(whole.data(), chunked.data(), sizeof(float) * whole.size()), 0) << "layer " << layer;
  }
}

// End to end: attention through the cache's spans, call by call, equals one
// call over the whole sequence, bit for bit, for both layer kinds.
TEST(KvCache, ChunkedAttentionThroughCacheMatchesOneCall) {
  std::mt19937 rng(13);
  expect_chunked_attention_matches_one_call(KvType::F32, make_rows(rng, kContext), rng, {3, 1, 6, 1, 1, 4});
}

TEST(KvCache, TypeNamesParseAndBadOnesAreRefused) {
  EXPECT_EQ(parse_kv_type("f32"), KvType::F32);
  EXPECT_EQ(parse_kv_type("f16"), KvType::F16);
  EXPECT_STREQ(kv_type_name(KvType::F16), "f16");
  EXPECT_STREQ(kv_type_name(KvType::F32), "f32");
  try {
    parse_kv_type("q8_0");
    FAIL() << "q8_0 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("q8_0"), std::string::npos) << e.what();
  }
}

// An f16 cache returns each stored value rounded to f16 (to nearest, ties to
// even), on full and ring layers, through chunks that wrap the ring; its span
// carries only the f16 pointers.
TEST(KvCache, F16CacheHoldsEachValueRoundedToHalf) {
  std::mt19937 rng(21);
  Rows all = make_rows(rng, kContext);
  all.k[3] = 70000.0f;  // beyond f16's range: inf
  all.v[5] = 1e-7f;     // an f16 subnormal
  const Rows want = rounded_to_f16(all);
  KvCache kv(two_layer_spec(), kContext, KvType::F16);
  EXPECT_EQ(kv.type(), KvType::F16);
  for (int64_t n : {3, 2, 5, 1, 4, 1}) {
    const int64_t p = kv.length();
    for (int64_t layer = 0; layer < 2; ++layer) kv.store(layer, &all.k[p * kWidth], &all.v[p * kWidth], n);
    kv.advance(n);
    const ref::KvSpan s = kv.span(0, 0, nullptr, nullptr);
    EXPECT_EQ(s.past_k, nullptr);
    EXPECT_NE(s.past_k_f16, nullptr);
    expect_span_holds(kv, 0, 0, 0, want);
    expect_span_holds(kv, 1, kWindow, std::max<int64_t>(0, kv.length() - kWindow + 1), want);
  }
  EXPECT_TRUE(std::isinf(want.k[3]));
  EXPECT_GT(want.v[5], 0.0f);
  EXPECT_NE(want.v[5], all.v[5]);
}

// A full-attention layer grows its storage (64 slots, then doubling); each
// growth re-lays every head's rows out (head-major), keeping them all.
TEST(KvCache, GrowingKeepsEveryHeadsRows) {
  std::mt19937 rng(24);
  ModelSpec spec = two_layer_spec();
  spec.layer_types = {LayerKind::FullAttention, LayerKind::FullAttention};
  const int64_t ctx = 300;
  for (KvType type : {KvType::F32, KvType::F16}) {
    const Rows all = make_rows(rng, ctx);
    const Rows want = type == KvType::F16 ? rounded_to_f16(all) : all;
    KvCache kv(spec, ctx, type);
    for (int64_t n : {1, 62, 2, 70, 1, 100, 64}) {  // across 64, 128 and 256 slots
      const int64_t p = kv.length();
      for (int64_t layer = 0; layer < 2; ++layer) kv.store(layer, &all.k[p * kWidth], &all.v[p * kWidth], n);
      kv.advance(n);
      expect_span_holds(kv, 0, 0, 0, want);
      expect_span_holds(kv, 1, 0, 0, want);
    }
    EXPECT_EQ(kv.length(), 300);
  }
}

// Same fills, half the bytes.
TEST(KvCache, F16CacheTakesHalfTheMemory) {
  std::mt19937 rng(22);
  const Rows all = make_rows(rng, kContext);
  KvCache f32(two_layer_spec(), kContext, KvType::F32), f16(two_layer_spec(), kContext, KvType::F16);
  fill(f32, all, kContext);
  fill(f16, all, kContext);
  EXPECT_GT(f16.bytes_allocated(), 0u);
  EXPECT_EQ(2 * f16.bytes_allocated(), f32.bytes_allocated());
}

// The executor rounds a call's own rows to f16 before attention reads them,
// so attention through an f16 cache, call by call, equals one call over the
// rounded rows, bit for bit, on both layer kinds: the split changes nothing.
TEST(KvCache, F16ChunkedAttentionThroughCacheMatchesOneCall) {
  std::mt19937 rng(23);
  expect_chunked_attention_matches_one_call(KvType::F16, rounded_to_f16(make_rows(rng, kContext)), rng,
                                            {2, 1, 5, 1, 3, 4});
}

}  // namespace
}  // namespace tessera
