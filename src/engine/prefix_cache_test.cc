#include "engine/prefix_cache.h"

#include <gtest/gtest.h>

#include "core/temp_dir_for_tests.h"
#include "sources/tiny_chat_model_for_tests.h"

namespace tessera::engine {
namespace {

struct Fixture : ::testing::Test {
  TempDir dir{"prefix_cache_test"};
  std::unique_ptr<Model> model;
  void SetUp() override {
    testing::write_tiny_chat_model(dir.path());
    model = Model::load(dir.path().string());
  }
  Session::Snapshot state_of(std::vector<int32_t> ids) {
    Session s(*model, 128);
    s.forward(ids);
    return s.snapshot();
  }
};

using PrefixCacheTest = Fixture;

TEST_F(PrefixCacheTest, FindsTheLongestSharedPrefix) {
  PrefixCache cache(1ull << 30);
  EXPECT_TRUE(cache.insert(state_of({1, 2, 3})));
  EXPECT_TRUE(cache.insert(state_of({1, 2, 3, 4, 5})));
  EXPECT_TRUE(cache.insert(state_of({9, 9})));
  const std::vector<int32_t> prompt{1, 2, 3, 4, 7, 8};
  const PrefixCache::Match m = cache.find(prompt);
  ASSERT_NE(m.snapshot, nullptr);
  EXPECT_EQ(m.common, 4);
  EXPECT_EQ(m.snapshot->history.size(), 5u);
  EXPECT_EQ(cache.find(std::vector<int32_t>{5, 5}).snapshot, nullptr);
  // Capped so that the last prompt token runs.
  EXPECT_EQ(cache.find(std::vector<int32_t>{9, 9}).common, 1);
}

TEST_F(PrefixCacheTest, RefusesCoveredPrefixesAndEvictsTheLeastRecentlyUsed) {
  const Session::Snapshot one = state_of({1, 2, 3});
  const uint64_t entry = one.state.bytes_allocated() + 3 * sizeof(int32_t);
  PrefixCache cache(2 * entry + entry / 2);  // room for two
  EXPECT_TRUE(cache.insert(one));
  EXPECT_FALSE(cache.insert(state_of({1, 2})));  // covered by {1, 2, 3}
  EXPECT_TRUE(cache.insert(state_of({4, 5, 6})));
  cache.find(std::vector<int32_t>{1, 2, 3, 0});  // {1,2,3} is now the most recently used
  EXPECT_TRUE(cache.insert(state_of({7, 8, 9})));
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_LE(cache.bytes(), cache.capacity());
  EXPECT_EQ(cache.find(std::vector<int32_t>{4, 5, 6, 0}).snapshot, nullptr);  // evicted
  EXPECT_NE(cache.find(std::vector<int32_t>{1, 2, 3, 0}).snapshot, nullptr);
  PrefixCache tiny(entry / 2);
  EXPECT_FALSE(tiny.insert(state_of({1, 2, 3})));  // larger than the whole capacity
  EXPECT_EQ(tiny.size(), 0u);
}

TEST_F(PrefixCacheTest, ARestoredEntryContinuesWithTheSameLogits) {
  const std::vector<int32_t> prefix{10, 11, 12, 13}, rest{14, 15};
  PrefixCache cache(1ull << 30);
  cache.insert(state_of(prefix));
  Session resumed(*model, 128);
  std::vector<int32_t> all = prefix;
  all.insert(all.end(), rest.begin(), rest.end());
  const PrefixCache::Match m = cache.find(all);
  ASSERT_EQ(m.common, 4);
  resumed.restore(*m.snapshot);
  const std::vector<float> got = resumed.forward(rest);
  Session scratch(*model, 128);
  EXPECT_EQ(got, scratch.forward(all));
}

}  // namespace
}  // namespace tessera::engine
