#include "engine/disk_prefix_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/temp_dir_for_tests.h"
#include "engine/prefix_cache.h"
#include "sources/tiny_chat_model_for_tests.h"

namespace tessera::engine {
namespace {

namespace fs = std::filesystem;

struct DiskPrefixStoreTest : ::testing::Test {
  TempDir dir{"disk_prefix_store_test"};
  std::unique_ptr<Model> model;
  std::vector<std::string> warnings;
  void SetUp() override {
    testing::write_tiny_chat_model(dir.path() / "model");
    model = Model::load((dir.path() / "model").string());
  }
  std::string store_dir() const { return (dir.path() / "store").string(); }
  std::unique_ptr<DiskPrefixStore> open(uint64_t capacity = 1ull << 30) {
    return std::make_unique<DiskPrefixStore>(store_dir(), capacity, model->identity(),
                                             [this](const std::string& w) { warnings.push_back(w); });
  }
  // A cache with the store as its disk tier, reading entries into states of a 128-position session's shape.
  PrefixCache cache_on(std::unique_ptr<DiskPrefixStore> store, uint64_t memory = 1ull << 30) {
    return PrefixCache(memory, std::move(store), [this] { return SequenceState(model->spec(), 128, model->kv_type()); });
  }
  Session::Snapshot state_of(std::vector<int32_t> ids) {
    Session s(*model, 128);
    s.forward(ids);
    return s.snapshot();
  }
  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    for (const auto& f : fs::directory_iterator(store_dir())) out.push_back(f.path());
    return out;
  }
};

TEST_F(DiskPrefixStoreTest, AnEntrySurvivesTheProcessAndContinuesWithTheSameLogits) {
  const std::vector<int32_t> prefix{10, 11, 12, 13, 14}, rest{15, 16};
  {
    PrefixCache first = cache_on(open());
    EXPECT_TRUE(first.insert(state_of(prefix)));
    first.disk()->flush();
    EXPECT_EQ(first.disk()->size(), 1u);
  }
  ASSERT_EQ(files().size(), 1u);
  EXPECT_EQ(files()[0].filename().string(), prefix_key(prefix) + ".tsession");

  PrefixCache second = cache_on(open());  // a new process: nothing in memory
  EXPECT_EQ(second.size(), 0u);
  std::vector<int32_t> all = prefix;
  all.insert(all.end(), rest.begin(), rest.end());
  const PrefixCache::Match m = second.find(all);
  ASSERT_NE(m.snapshot, nullptr);
  EXPECT_TRUE(m.from_disk);
  EXPECT_EQ(m.common, 5);
  EXPECT_EQ(second.size(), 1u);  // brought into memory
  EXPECT_FALSE(second.find(all).from_disk);

  Session resumed(*model, 128);
  resumed.restore(*m.snapshot);
  Session scratch(*model, 128);
  EXPECT_EQ(resumed.forward(rest), scratch.forward(all));
  EXPECT_TRUE(warnings.empty());
}

TEST_F(DiskPrefixStoreTest, ADiskEntryIsUsedOnlyWhenItHoldsMoreThanMemory) {
  PrefixCache cache = cache_on(open());
  cache.insert(state_of({1, 2, 3}));
  cache.disk()->flush();
  cache.clear_memory();
  cache.insert(state_of({1, 2, 3, 4}));  // memory: the longer one
  const PrefixCache::Match m = cache.find(std::vector<int32_t>{1, 2, 3, 4, 5});
  EXPECT_FALSE(m.from_disk);
  EXPECT_EQ(m.common, 4);
}

TEST_F(DiskPrefixStoreTest, ACorruptedEntryIsDroppedWithAWarningAndNeverUsed) {
  {
    PrefixCache first = cache_on(open());
    first.insert(state_of({7, 8, 9, 10}));
    first.disk()->flush();
  }
  const fs::path file = files().at(0);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(file) - 3));
    f.put('\x5a');  // a byte of the state, past the history the index reads
  }
  PrefixCache second = cache_on(open());
  EXPECT_EQ(second.disk()->size(), 1u);  // the head still reads
  EXPECT_EQ(second.find(std::vector<int32_t>{7, 8, 9, 10, 11}).snapshot, nullptr);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("checksum"), std::string::npos) << warnings[0];
  EXPECT_EQ(second.disk()->size(), 0u);
  EXPECT_TRUE(files().empty());
}

TEST_F(DiskPrefixStoreTest, DamagedHeadsAndLeftoversAreDroppedWhenTheStoreOpens) {
  fs::create_directories(store_dir());
  std::ofstream(fs::path(store_dir()) / "0123.tsession") << "not a session file";
  std::ofstream(fs::path(store_dir()) / "half.tsession.tmp") << "an interrupted write";
  {
    Session other(*model, 128);  // a real file whose name does not hash its prefix
    other.forward(std::vector<int32_t>{4, 4});
    other.save((fs::path(store_dir()) / "feed.tsession").string());
  }
  auto store = open();
  EXPECT_EQ(store->size(), 0u);
  EXPECT_EQ(warnings.size(), 2u);
  EXPECT_TRUE(files().empty());
}

TEST_F(DiskPrefixStoreTest, TheLeastRecentlyUsedFilesGoBeyondTheCapacity) {
  uint64_t one_file = 0;
  {
    PrefixCache probe = cache_on(open());
    probe.insert(state_of({1, 2, 3}));
    probe.disk()->flush();
    one_file = probe.disk()->bytes();
  }
  PrefixCache cache = cache_on(open(one_file * 2 + one_file / 2));  // room for two
  cache.insert(state_of({4, 5, 6}));
  cache.disk()->flush();
  cache.clear_memory();
  ASSERT_NE(cache.find(std::vector<int32_t>{1, 2, 3, 0}).snapshot, nullptr);  // {1,2,3} used: {4,5,6} is older
  cache.insert(state_of({7, 8, 9}));
  cache.disk()->flush();
  EXPECT_EQ(cache.disk()->size(), 2u);
  EXPECT_LE(cache.disk()->bytes(), one_file * 2 + one_file / 2);
  EXPECT_TRUE(cache.disk()->candidates(std::vector<int32_t>{4, 5, 6}, 0).empty());
  EXPECT_EQ(cache.disk()->candidates(std::vector<int32_t>{1, 2, 3}, 0).size(), 1u);
}

TEST_F(DiskPrefixStoreTest, FilesOfAnotherModelAreIgnoredNotDeleted) {
  {
    PrefixCache first = cache_on(open());
    first.insert(state_of({1, 2, 3}));
    first.disk()->flush();
  }
  DiskPrefixStore other(store_dir(), 1ull << 30, std::string(64, 'f'), [this](const std::string& w) { warnings.push_back(w); });
  EXPECT_EQ(other.size(), 0u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("another model"), std::string::npos) << warnings[0];
  EXPECT_EQ(files().size(), 1u);
}

}  // namespace
}  // namespace tessera::engine
