#include "sources/safetensors.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <random>

#include <gtest/gtest.h>

#include "core/temp_dir_for_tests.h"

#include "core/error.h"
#include "sources/safetensors_writer_for_tests.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::safetensors_raw;
using testing::StTensor;
using testing::write_file;
using testing::write_safetensors;

std::shared_ptr<const MappedFile> mem(std::vector<uint8_t> bytes) {
  return MappedFile::from_bytes("mem.safetensors", std::move(bytes));
}

std::vector<uint8_t> iota_bytes(size_t n, uint8_t start = 0) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(start + i);
  return v;
}

// Parses and returns the Error, failing the test if parsing succeeds.
Error parse_error(const std::vector<uint8_t>& bytes) {
  try {
    SafetensorsFile::parse(mem(bytes));
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "parse succeeded on malformed input";
  return Error("", "", "");
}

Error header_error(const std::string& header, const std::vector<uint8_t>& data = {}) {
  return parse_error(safetensors_raw(header, data));
}


TEST(SafetensorsFile, ReadsEveryDtype) {
  const std::vector<std::pair<std::string, DType>> dtypes = {
      {"F32", DType::F32}, {"F16", DType::F16}, {"BF16", DType::BF16}, {"F64", DType::F64},
      {"I8", DType::I8},   {"U8", DType::U8},   {"I16", DType::I16},   {"I32", DType::I32},
      {"I64", DType::I64}, {"BOOL", DType::BOOL},
  };
  std::vector<StTensor> tensors;
  uint8_t start = 1;
  for (const auto& [name, dt] : dtypes) {
    const size_t elem = dtype_info(dt).block_bytes;
    tensors.push_back({"t." + name, name, {2, 3}, iota_bytes(6 * elem, start)});
    start = static_cast<uint8_t>(start + 50);
  }
  const SafetensorsFile f = SafetensorsFile::parse(mem(write_safetensors(tensors, {{"format", "pt"}})));
  ASSERT_EQ(f.tensors().size(), dtypes.size());
  EXPECT_EQ(f.metadata().at("format"), "pt");
  for (size_t i = 0; i < dtypes.size(); ++i) {
    const TensorView* t = f.find("t." + dtypes[i].first);
    ASSERT_NE(t, nullptr) << dtypes[i].first;
    EXPECT_EQ(t->dtype, dtypes[i].second);
    EXPECT_EQ(t->shape, (std::vector<uint64_t>{2, 3}));
    EXPECT_EQ(t->elements(), 6u);
    EXPECT_EQ(t->nbytes, tensors[i].data.size());
    EXPECT_EQ(std::vector<uint8_t>(t->bytes().begin(), t->bytes().end()), tensors[i].data);
    EXPECT_EQ(t->file, f.file());
  }
  EXPECT_EQ(f.find("missing"), nullptr);
  // Sorted by name.
  for (size_t i = 1; i < f.tensors().size(); ++i) EXPECT_LT(f.tensors()[i - 1].name, f.tensors()[i].name);
  // The header the writer produced is padded to 8 bytes, so data starts 8-aligned.
  EXPECT_EQ(f.data_offset() % 8, 0u);
}

TEST(SafetensorsFile, ScalarsEmptyTensorsAndGaps) {
  // A scalar (shape []) holds one element; a [0, 4] tensor holds none and may
  // sit at the same offset as another empty tensor; gaps between ranges are allowed.
  const std::string header =
      R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
      R"("e1":{"dtype":"F16","shape":[0,4],"data_offsets":[4,4]},)"
      R"("e2":{"dtype":"I64","shape":[3,0],"data_offsets":[4,4]},)"
      R"("g":{"dtype":"U8","shape":[2],"data_offsets":[8,10]}})";
  const SafetensorsFile f = SafetensorsFile::parse(mem(safetensors_raw(header, iota_bytes(10))));
  ASSERT_EQ(f.tensors().size(), 4u);
  EXPECT_EQ(f.find("s")->elements(), 1u);
  EXPECT_EQ(f.find("s")->nbytes, 4u);
  EXPECT_EQ(f.find("e1")->nbytes, 0u);
  EXPECT_EQ(f.find("e2")->elements(), 0u);
  EXPECT_EQ(f.find("g")->data[0], 8);
  EXPECT_TRUE(f.metadata().empty());
}

TEST(SafetensorsFile, UnknownEntryKeysAreSkippedAndMetadataMayBeNull) {
  const std::string header =
      R"({"__metadata__":null,"a":{"extra":{"x":[1,[2,{"y":null}]],"z":"q"},"dtype":"U8",)"
      R"("more":[true,false],"shape":[2],"data_offsets":[0,2],"last":1.5}})";
  const SafetensorsFile f = SafetensorsFile::parse(mem(safetensors_raw(header, {7, 9})));
  ASSERT_EQ(f.tensors().size(), 1u);
  EXPECT_EQ(f.find("a")->data[1], 9);
}

TEST(SafetensorsFile, OpenMapsFileAndViewsOutliveTheReader) {
  TempDir dir;
  const fs::path p = dir.path() / "one.safetensors";
  write_file(p, write_safetensors({{"w", "F32", {2}, iota_bytes(8, 3)}}));
  TensorView view;
  {
    const SafetensorsFile f = SafetensorsFile::open(p.string());
    EXPECT_EQ(f.path(), p.string());
    view = *f.find("w");
  }
  // The view's shared_ptr keeps the mapping alive after the reader is gone.
  EXPECT_EQ(view.bytes()[0], 3);
  EXPECT_EQ(view.bytes()[7], 10);
  EXPECT_THROW(SafetensorsFile::open((dir.path() / "absent.safetensors").string()), Error);
}

TEST(SafetensorsFile, EveryTruncationIsAnError) {
  const std::vector<uint8_t> full = write_safetensors(
      {{"a", "F32", {2}, iota_bytes(8)}, {"b", "BF16", {3}, iota_bytes(6)}}, {{"k", "v"}});
  ASSERT_NO_THROW(SafetensorsFile::parse(mem(full)));
  for (size_t n = 0; n < full.size(); ++n) {
    const std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_THROW(SafetensorsFile::parse(mem(cut)), Error) << "prefix of " << n << " bytes";
  }
}

TEST(SafetensorsFile, HeaderLengthBounds) {
  const std::string h = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  // Longer than the file.
  Error e = parse_error(safetensors_raw(h, {1}, h.size() + 2));
  EXPECT_EQ(e.subject(), "header");
  EXPECT_NE(e.problem().find("past the end"), std::string::npos) << e.what();
  // Absurdly long: u64 max and just above the 100 MB cap.
  e = parse_error(safetensors_raw(h, {1}, ~0ull));
  EXPECT_NE(e.problem().find("exceeds"), std::string::npos) << e.what();
  e = parse_error(safetensors_raw(h, {1}, kSafetensorsMaxHeaderBytes + 1));
  EXPECT_NE(e.problem().find("exceeds"), std::string::npos) << e.what();
  // Zero-length header is not a JSON object.
  EXPECT_EQ(parse_error(safetensors_raw("", {}, 0)).subject(), "header");
  // Fewer than 8 bytes.
  EXPECT_THROW(SafetensorsFile::parse(mem({1, 0, 0})), Error);
  EXPECT_THROW(SafetensorsFile::parse(mem({})), Error);
}

TEST(SafetensorsFile, MalformedJsonIsAnError) {
  for (const std::string bad : {"{", "[]", "null", "1", "\"s\"", "{}}", "{} x", "{\"a\":}",
                                "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}",
                                "{\"a\" {}}", "{'a':{}}"}) {
    const Error e = header_error(bad, {1});
    EXPECT_EQ(e.file(), "mem.safetensors");
    EXPECT_FALSE(e.subject().empty()) << bad;
  }
  // Invalid UTF-8 inside a string.
  EXPECT_THROW(SafetensorsFile::parse(mem(safetensors_raw("{\"\xff\":{}}"))), Error);
  // An embedded NUL byte.
  EXPECT_THROW(SafetensorsFile::parse(mem(safetensors_raw(std::string("{\"a\0\":{}}", 9)))), Error);
}

TEST(SafetensorsFile, DeepNestingDoesNotOverflowTheStack) {
  // 200k nested arrays at the top level and inside a skipped unknown key.
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  EXPECT_THROW(SafetensorsFile::parse(mem(safetensors_raw(deep))), Error);
  const std::string skipped = R"({"a":{"x":)" + deep + R"(,"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  EXPECT_EQ(SafetensorsFile::parse(mem(safetensors_raw(skipped, {5}))).find("a")->data[0], 5);
  const std::string unclosed = R"({"a":{"x":)" + std::string(200000, '[');
  EXPECT_THROW(SafetensorsFile::parse(mem(safetensors_raw(unclosed))), Error);
}

TEST(SafetensorsFile, EntryFieldErrorsNameTheTensor) {
  struct Case {
    std::string entry;
    std::string problem_part;
  };
  const std::vector<Case> cases = {
      {R"({"shape":[1],"data_offsets":[0,1]})", "missing 'dtype'"},
      {R"({"dtype":"U8","data_offsets":[0,1]})", "missing 'shape'"},
      {R"({"dtype":"U8","shape":[1]})", "missing 'data_offsets'"},
      {R"({"dtype":8,"shape":[1],"data_offsets":[0,1]})", "dtype must be a string"},
      {R"({"dtype":["U8"],"shape":[1],"data_offsets":[0,1]})", "dtype must be a string, got an array"},
      {R"({"dtype":"U8","shape":1,"data_offsets":[0,1]})", "shape must be an array"},
      {R"({"dtype":"U8","shape":[-1],"data_offsets":[0,1]})", "non-negative integers"},
      {R"({"dtype":"U8","shape":[1.0],"data_offsets":[0,1]})", "non-negative integers"},
      {R"({"dtype":"U8","shape":["1"],"data_offsets":[0,1]})", "non-negative integers"},
      {R"({"dtype":"U8","shape":[[1]],"data_offsets":[0,1]})", "non-negative integers"},
      {R"({"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,1]})", "below 2^64"},
      {R"({"dtype":"U8","shape":[1],"data_offsets":{"a":0}})", "data_offsets must be an array, got an object"},
      {R"({"dtype":"U8","shape":{},"data_offsets":[0,1]})", "shape must be an array, got an object"},
      {R"({"dtype":"U8","shape":[1],"data_offsets":[0]})", "exactly 2"},
      {R"({"dtype":"U8","shape":[1],"data_offsets":[0,1,2]})", "exactly 2"},
      {R"({"dtype":"U8","shape":[1],"data_offsets":[-1,1]})", "non-negative"},
      {R"({"dtype":"U8","shape":[1],"data_offsets":[1,0]})", "end before they begin"},
      {R"({"dtype":"U8","shape":[1],"data_offsets":[4,5]})", "past the data section"},
      {R"({"dtype":"U8","shape":[3],"data_offsets":[0,2]})", "needs 3"},
      {R"({"dtype":"F32","shape":[1],"data_offsets":[0,1]})", "needs 4"},
      {R"({"dtype":"U8","shape":[4294967296,4294967296,2],"data_offsets":[0,1]})", "2^64 elements"},
      {R"({"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,1]})", "2^64 bytes"},
      {R"({"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]})", "unsupported dtype 'F8_E4M3'"},
      {R"({"dtype":"f32","shape":[1],"data_offsets":[0,4]})", "unsupported dtype 'f32'"},
      {R"({"dtype":"Q4_K","shape":[256],"data_offsets":[0,1]})", "unsupported dtype 'Q4_K'"},
      {R"({"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]})", "'dtype' appears twice"},
      {R"("text")", "must be an object"},
      {R"([1])", "must be an object, got an array"},
      {R"(null)", "must be an object, got null"},
  };
  for (const Case& c : cases) {
    const Error e = header_error(R"({"model.embed_tokens.weight":)" + c.entry + "}", {1, 2, 3, 4});
    EXPECT_EQ(e.subject(), "tensor 'model.embed_tokens.weight'") << c.entry << " -> " << e.what();
    EXPECT_NE(e.problem().find(c.problem_part), std::string::npos) << c.entry << " -> " << e.what();
  }
  // A rank above the limit.
  std::string shape = "[";
  for (size_t i = 0; i <= kSafetensorsMaxRank; ++i) shape += (i ? ",1" : "1");
  shape += "]";
  EXPECT_NE(header_error(R"({"a":{"dtype":"U8","shape":)" + shape + R"(,"data_offsets":[0,1]}})", {1})
                .problem()
                .find("dimensions"),
            std::string::npos);
}

TEST(SafetensorsFile, OverlappingRangesAreAnError) {
  const std::vector<uint8_t> data = iota_bytes(16);
  Error e = header_error(
      R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[4],"data_offsets":[6,10]}})",
      data);
  EXPECT_EQ(e.subject(), "tensor 'b'");
  EXPECT_NE(e.problem().find("overlap"), std::string::npos) << e.what();
  // Contained inside an earlier, longer range (not adjacent to the last one checked).
  e = header_error(
      R"({"a":{"dtype":"U8","shape":[12],"data_offsets":[0,12]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},)"
      R"("c":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}})",
      data);
  EXPECT_NE(e.problem().find("overlap"), std::string::npos) << e.what();
  // Identical ranges.
  EXPECT_NE(header_error(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},)"
                         R"("b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
                         data)
                .problem()
                .find("overlap"),
            std::string::npos);
  // Adjacent ranges are fine.
  EXPECT_NO_THROW(SafetensorsFile::parse(
      mem(safetensors_raw(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"U8","shape":[8],"data_offsets":[8,16]}})",
                          data))));
}

TEST(SafetensorsFile, DuplicateKeysAreAnError) {
  const std::string entry = R"({"dtype":"U8","shape":[1],"data_offsets":[0,1]})";
  const std::string entry2 = R"({"dtype":"U8","shape":[1],"data_offsets":[1,2]})";
  Error e = header_error(R"({"w":)" + entry + R"(,"w":)" + entry2 + "}", {1, 2});
  EXPECT_EQ(e.subject(), "tensor 'w'");
  EXPECT_NE(e.problem().find("twice"), std::string::npos);
  e = header_error(R"({"__metadata__":{"a":"1","a":"2"},"w":)" + entry + "}", {1});
  EXPECT_EQ(e.subject(), "__metadata__");
  EXPECT_NE(e.problem().find("twice"), std::string::npos);
  e = header_error(R"({"__metadata__":{},"__metadata__":{},"w":)" + entry + "}", {1});
  EXPECT_EQ(e.subject(), "__metadata__");
  e = header_error(R"({"w":{"dtype":"U8","shape":[1],"shape":[1],"data_offsets":[0,1]}})", {1});
  EXPECT_NE(e.problem().find("'shape' appears twice"), std::string::npos);
  e = header_error(R"({"w":{"x":1,"x":2,"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", {1});
  EXPECT_NE(e.problem().find("'x' appears twice"), std::string::npos);
}

TEST(SafetensorsFile, MetadataMustBeStrings) {
  const std::string entry = R"(,"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  for (const std::string md : {R"({"a":1})", R"({"a":null})", R"({"a":["x"]})", R"({"a":{"b":"c"}})", R"("x")",
                               R"([])", "3"}) {
    const Error e = header_error(R"({"__metadata__":)" + md + entry, {1});
    EXPECT_EQ(e.subject(), "__metadata__") << md << " -> " << e.what();
  }
}

TEST(SafetensorsFile, RandomCorruptionNeverCrashes) {
  // Flip bytes of a valid file (header and length prefix included): each
  // result must either parse into in-bounds views or raise Error.
  const std::vector<uint8_t> full = write_safetensors(
      {{"a", "F32", {2, 2}, iota_bytes(16)}, {"b", "I64", {1}, iota_bytes(8)}, {"c", "BOOL", {3}, {0, 1, 0}}},
      {{"format", "pt"}});
  std::mt19937 rng(1234);
  int parsed = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::vector<uint8_t> bytes = full;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k) {
      // Bias towards the length prefix and the header, where the structure is.
      const size_t pos = rng() % (rng() % 4 == 0 ? bytes.size() : std::min<size_t>(bytes.size(), 80));
      bytes[pos] = static_cast<uint8_t>(rng() % 3 == 0 ? "0123456789{}[]\",:-"[rng() % 18] : rng());
    }
    try {
      const SafetensorsFile f = SafetensorsFile::parse(mem(bytes));
      ++parsed;
      for (const TensorView& t : f.tensors()) {
        ASSERT_GE(t.data, f.file()->data());
        ASSERT_LE(t.data + t.nbytes, f.file()->data() + f.file()->size());
      }
    } catch (const Error&) {
    }
  }
  EXPECT_GT(parsed, 0);  // some flips land in tensor data and leave the file valid
}

TEST(SafetensorsCheckpoint, SingleFile) {
  TempDir dir;
  write_file(dir.path() / "model.safetensors",
             write_safetensors({{"model.norm.weight", "F32", {2}, iota_bytes(8)},
                                {"lm_head.weight", "BF16", {2, 2}, iota_bytes(8, 100)}}));
  TensorView kept;
  {
    const SafetensorsCheckpoint ck = SafetensorsCheckpoint::open(dir.path().string());
    EXPECT_FALSE(ck.sharded());
    ASSERT_EQ(ck.shards().size(), 1u);
    ASSERT_EQ(ck.tensors().size(), 2u);
    EXPECT_EQ(ck.tensors()[0].name, "lm_head.weight");
    ASSERT_NE(ck.find("model.norm.weight"), nullptr);
    EXPECT_EQ(ck.find("nope"), nullptr);
    kept = *ck.find("lm_head.weight");
  }
  EXPECT_EQ(kept.bytes()[3], 103);
}

// Writes a two-shard checkpoint and returns the index JSON text it used.
void write_two_shards(const fs::path& dir) {
  write_file(dir / "model-00001-of-00002.safetensors",
             write_safetensors({{"model.embed_tokens.weight", "F16", {4, 2}, iota_bytes(16)},
                                {"model.layers.0.mlp.up_proj.weight", "F32", {1}, iota_bytes(4, 20)}}));
  write_file(dir / "model-00002-of-00002.safetensors",
             write_safetensors({{"model.norm.weight", "F32", {2}, iota_bytes(8, 40)}}));
}

const char* kTwoShardIndex = R"({
  "metadata": {"total_size": 28, "note": "x"},
  "weight_map": {
    "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
    "model.layers.0.mlp.up_proj.weight": "model-00001-of-00002.safetensors",
    "model.norm.weight": "model-00002-of-00002.safetensors"
  }
})";

TEST(SafetensorsCheckpoint, ShardedIndex) {
  TempDir dir;
  write_two_shards(dir.path());
  write_file(dir.path() / "model.safetensors.index.json", std::string(kTwoShardIndex));
  TensorView norm;
  {
    const SafetensorsCheckpoint ck = SafetensorsCheckpoint::open(dir.path().string());
    EXPECT_TRUE(ck.sharded());
    ASSERT_EQ(ck.shards().size(), 2u);
    ASSERT_EQ(ck.tensors().size(), 3u);
    EXPECT_EQ(ck.index_metadata().at("total_size"), "28");
    EXPECT_EQ(ck.index_metadata().at("note"), "x");
    const TensorView* e = ck.find("model.embed_tokens.weight");
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->dtype, DType::F16);
    EXPECT_EQ(e->file, ck.shards()[0].file());
    norm = *ck.find("model.norm.weight");
    EXPECT_EQ(norm.file, ck.shards()[1].file());
  }
  EXPECT_EQ(norm.bytes()[0], 40);
}

TEST(SafetensorsCheckpoint, SingleFileTakesPrecedenceOverIndex) {
  TempDir dir;
  write_file(dir.path() / "model.safetensors", write_safetensors({{"only", "U8", {1}, {9}}}));
  write_file(dir.path() / "model.safetensors.index.json", std::string("not even json"));
  const SafetensorsCheckpoint ck = SafetensorsCheckpoint::open(dir.path().string());
  EXPECT_FALSE(ck.sharded());
  EXPECT_NE(ck.find("only"), nullptr);
}

Error open_error(const fs::path& dir) {
  try {
    SafetensorsCheckpoint::open(dir.string());
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "open succeeded";
  return Error("", "", "");
}

TEST(SafetensorsCheckpoint, BadIndexesAreErrors) {
  TempDir dir;
  write_two_shards(dir.path());
  const fs::path index = dir.path() / "model.safetensors.index.json";
  const std::string s1 = "\"model-00001-of-00002.safetensors\"";
  const std::string s2 = "\"model-00002-of-00002.safetensors\"";
  struct Case {
    std::string json;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"{", "invalid JSON"},
      {"[]", "must be a JSON object"},
      {R"({"metadata":{}})", "weight_map: missing"},
      {R"({"weight_map":[]})", "must be an object"},
      {R"({"weight_map":{}})", "is empty"},
      {R"({"weight_map":{"model.norm.weight":7}})", "must be a string"},
      {R"({"weight_map":{"model.norm.weight":"../model-00002-of-00002.safetensors"}})", "plain file name"},
      {R"({"weight_map":{"model.norm.weight":"/etc/passwd"}})", "plain file name"},
      {R"({"weight_map":{"model.norm.weight":"sub/x.safetensors"}})", "plain file name"},
      {R"({"weight_map":{"model.norm.weight":".."}})", "plain file name"},
      {R"({"weight_map":{"model.norm.weight":""}})", "plain file name"},
      {R"({"weight_map":{"model.norm.weight":"a\\b"}})", "plain file name"},
      {R"({"weight_map":{"model.norm.weight":"missing.safetensors"}})", "cannot open"},
      // In the index but not in the named shard.
      {R"({"weight_map":{"model.norm.weight":)" + s1 + "}}", "does not contain it"},
      // The same tensor listed twice (JSON duplicate key).
      {R"({"weight_map":{"model.norm.weight":)" + s2 + R"(,"model.norm.weight":)" + s1 + "}}", "appears twice"},
      {R"({"metadata":3,"weight_map":{"model.norm.weight":)" + s2 + "}}", "metadata: must be an object"},
  };
  for (const Case& c : cases) {
    write_file(index, c.json);
    const Error e = open_error(dir.path());
    EXPECT_NE(std::string(e.what()).find(c.message_part), std::string::npos) << c.json << " -> " << e.what();
  }
}

TEST(SafetensorsCheckpoint, TensorInTwoShardsIsAnError) {
  TempDir dir;
  write_file(dir.path() / "a.safetensors", write_safetensors({{"x", "U8", {1}, {1}}, {"y", "U8", {1}, {2}}}));
  write_file(dir.path() / "b.safetensors", write_safetensors({{"x", "U8", {1}, {3}}}));
  write_file(dir.path() / "model.safetensors.index.json",
             std::string(R"({"weight_map":{"x":"a.safetensors","y":"b.safetensors"}})"));
  // "y" is missing from b.safetensors.
  EXPECT_NE(std::string(open_error(dir.path()).what()).find("does not contain"), std::string::npos);
  write_file(dir.path() / "model.safetensors.index.json",
             std::string(R"({"weight_map":{"x":"b.safetensors","y":"a.safetensors"}})"));
  const Error e = open_error(dir.path());
  EXPECT_EQ(e.subject(), "tensor 'x'");
  EXPECT_NE(e.problem().find("two shards"), std::string::npos) << e.what();
}

TEST(SafetensorsCheckpoint, CorruptShardAndEmptyDirectory) {
  TempDir dir;
  EXPECT_NE(std::string(open_error(dir.path()).what()).find("neither"), std::string::npos);
  write_file(dir.path() / "model.safetensors", std::vector<uint8_t>{1, 2, 3});
  const Error e = open_error(dir.path());
  EXPECT_NE(e.file().find("model.safetensors"), std::string::npos);
  EXPECT_EQ(e.subject(), "header");
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// Found by safetensors_fuzz (clang ASan reported stack-use-after-scope while
// unwinding from the error): an unknown key holding an array, so the entry
// lacks data_offsets. Must be a plain Error.
TEST(SafetensorsFile, FuzzRegressionUnknownArrayKeyThenMissingOffsets) {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"I64","shape":[2,3],)"
      R"("data_offoffsets":[106,106]},"d":{"dtype":"BOOL","shape":[3],"data_offsets":[106,109]}}   )";
  const Error e = header_error(header, std::vector<uint8_t>(120, 1));
  EXPECT_EQ(e.subject(), "tensor 'b'");
  EXPECT_NE(e.problem().find("data_offsets"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace tessera
