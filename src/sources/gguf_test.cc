#include "sources/gguf.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include <unistd.h>

#include <gtest/gtest.h>

#include "core/error.h"
#include "sources/gguf_writer_for_tests.h"

namespace tessera {
namespace {

using namespace tessera::testing;

GgufFile parse(const std::vector<uint8_t>& bytes) {
  return GgufFile::parse(MappedFile::from_bytes("test.gguf", bytes));
}

// Expects parsing to throw an Error whose subject and problem contain the given texts.
void expect_error(const std::vector<uint8_t>& bytes, std::string_view subject,
                  std::string_view problem) {
  try {
    parse(bytes);
    ADD_FAILURE() << "no error; expected one about " << subject << ": " << problem;
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "test.gguf");
    EXPECT_NE(e.subject().find(subject), std::string::npos) << e.what();
    EXPECT_NE(e.problem().find(problem), std::string::npos) << e.what();
  }
}

std::vector<uint8_t> filled(size_t n, uint8_t start = 0) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(start + i);
  return v;
}

// A small valid file: a few metadata entries of different kinds and two tensors,
// the last one ending exactly at the end of the file.
Built small_file(uint32_t version = 3) {
  GgufBuilder b;
  b.version = version;
  b.kv("general.architecture", v_str("llama"))
      .kv("llama.block_count", v_u32(2))
      .kv("tokenizer.ggml.tokens", v_str_array({"a", "bc", ""}))
      .kv("x.scores", v_array(GgufType::F32, {v_f32(0.5f), v_f32(-2.0f)}));
  b.tensor("a", 0, {3, 2}, filled(24));           // F32 [2, 3]
  b.tensor("b", 8, {32}, filled(34, 100));        // one Q8_0 block
  return b.build();
}

TEST(Gguf, EveryScalarMetadataType) {
  GgufBuilder b;
  b.kv("u8", v_u8(250))
      .kv("i8", v_i8(-7))
      .kv("u16", v_u16(65000))
      .kv("i16", v_i16(-30000))
      .kv("u32", v_u32(4000000000u))
      .kv("i32", v_i32(-2000000000))
      .kv("f32", v_f32(0.1f))
      .kv("bool_t", v_bool(true))
      .kv("bool_f", v_bool(false))
      .kv("str", v_str("héllo"))
      .kv("u64", v_u64(18000000000000000000ull))
      .kv("i64", v_i64(-9000000000000000000ll))
      .kv("f64", v_f64(-1.25e300));
  const GgufFile f = parse(b.build().bytes);
  EXPECT_EQ(f.version(), 3u);
  ASSERT_EQ(f.metadata().size(), 13u);
  // File order is kept.
  EXPECT_EQ(f.metadata()[0].first, "u8");
  EXPECT_EQ(f.metadata()[12].first, "f64");

  EXPECT_EQ(f.find("u8")->type(), GgufType::U8);
  EXPECT_EQ(f.get_int("u8"), 250);
  EXPECT_EQ(f.get_int("i8"), -7);
  EXPECT_EQ(f.get_int("u16"), 65000);
  EXPECT_EQ(f.get_int("i16"), -30000);
  EXPECT_EQ(f.get_int("u32"), 4000000000ll);
  EXPECT_EQ(f.get_int("i32"), -2000000000);
  EXPECT_EQ(f.get_int("i64"), -9000000000000000000ll);
  EXPECT_EQ(f.get_float("f32"), static_cast<double>(0.1f));  // widened exactly, not 0.1
  EXPECT_EQ(f.get_float("f64"), -1.25e300);
  EXPECT_EQ(f.get_float("i16"), -30000.0);  // integers are numbers too
  EXPECT_EQ(f.get_bool("bool_t"), true);
  EXPECT_EQ(f.get_bool("bool_f"), false);
  EXPECT_EQ(f.get_string("str"), "héllo");
  EXPECT_EQ(f.find("u64")->type(), GgufType::U64);
  EXPECT_EQ(gguf_type_name(f.find("f64")->type()), "float64");

  // A u64 above INT64_MAX is not an int64, but it is a number.
  EXPECT_FALSE(f.find("u64")->as_int().has_value());
  EXPECT_EQ(f.find("u64")->as_uint(), 18000000000000000000ull);
  EXPECT_EQ(f.find("u8")->as_uint(), 250u);
  EXPECT_FALSE(f.find("i8")->as_uint().has_value());
  EXPECT_FALSE(f.find("f32")->as_uint().has_value());
  EXPECT_EQ(f.get_float("u64"), 18000000000000000000.0);
  EXPECT_THROW(f.get_int("u64"), Error);

  // Absent keys are nullopt; present keys of another type are errors naming the key.
  EXPECT_FALSE(f.get_string("missing").has_value());
  EXPECT_FALSE(f.get_int("missing").has_value());
  EXPECT_EQ(f.get_string_array("missing"), nullptr);
  try {
    f.get_string("u32");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.subject(), "metadata 'u32'");
    EXPECT_NE(e.problem().find("uint32"), std::string::npos);
  }
  EXPECT_THROW(f.get_int("f32"), Error);
  EXPECT_THROW(f.get_bool("u8"), Error);
  EXPECT_THROW(f.get_float("str"), Error);
}

TEST(Gguf, Arrays) {
  GgufBuilder b;
  b.kv("u8s", v_array(GgufType::U8, {v_u8(1), v_u8(255)}))
      .kv("i8s", v_array(GgufType::I8, {v_i8(-1), v_i8(127)}))
      .kv("u16s", v_array(GgufType::U16, {v_u16(1), v_u16(65535)}))
      .kv("i16s", v_array(GgufType::I16, {v_i16(-32768)}))
      .kv("u32s", v_array(GgufType::U32, {v_u32(7)}))
      .kv("i32s", v_i32_array({-1, 0, 1}))
      .kv("u64s", v_array(GgufType::U64, {v_u64(1ull << 40)}))
      .kv("i64s", v_array(GgufType::I64, {v_i64(-(1ll << 40))}))
      .kv("f32s", v_array(GgufType::F32, {v_f32(1.5f), v_f32(-0.25f)}))
      .kv("f64s", v_array(GgufType::F64, {v_f64(1e-300)}))
      .kv("bools", v_array(GgufType::BOOL, {v_bool(true), v_bool(false), v_bool(true)}))
      .kv("strs", v_str_array({"x", "", "yz"}))
      .kv("empty", v_array(GgufType::U32, {}))
      .kv("nested", v_array(GgufType::ARRAY, {v_array(GgufType::U8, {v_u8(1), v_u8(2)}),
                                              v_str_array({"deep"}),
                                              v_array(GgufType::ARRAY, {v_array(GgufType::I16, {v_i16(-3)})})}));
  const GgufFile f = parse(b.build().bytes);
  EXPECT_EQ(f.get_int_array("u8s"), (std::vector<int64_t>{1, 255}));
  EXPECT_EQ(f.get_int_array("i8s"), (std::vector<int64_t>{-1, 127}));
  EXPECT_EQ(f.get_int_array("u16s"), (std::vector<int64_t>{1, 65535}));
  EXPECT_EQ(f.get_int_array("i16s"), (std::vector<int64_t>{-32768}));
  EXPECT_EQ(f.get_int_array("u32s"), (std::vector<int64_t>{7}));
  EXPECT_EQ(f.get_int_array("i32s"), (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_EQ(f.get_int_array("u64s"), (std::vector<int64_t>{1ll << 40}));
  EXPECT_EQ(f.get_int_array("i64s"), (std::vector<int64_t>{-(1ll << 40)}));
  EXPECT_EQ(f.get_float_array("f32s"), (std::vector<double>{1.5, -0.25}));
  EXPECT_EQ(f.get_float_array("f64s"), (std::vector<double>{1e-300}));
  EXPECT_EQ(f.get_float_array("i32s"), (std::vector<double>{-1, 0, 1}));
  EXPECT_EQ(*f.get_string_array("strs"), (std::vector<std::string>{"x", "", "yz"}));
  EXPECT_EQ(f.get_int_array("empty"), std::vector<int64_t>{});

  const GgufValue& bools = *f.find("bools");
  EXPECT_TRUE(bools.is_array());
  EXPECT_EQ(bools.element_type(), GgufType::BOOL);
  EXPECT_EQ(bools.size(), 3u);
  EXPECT_EQ(bools.element(0).as_bool(), true);
  EXPECT_EQ(bools.element(1).as_bool(), false);
  EXPECT_EQ(bools.array_bytes().size(), 3u);
  EXPECT_EQ(f.find("f32s")->element(1).as_float(), -0.25);
  EXPECT_EQ(*f.find("strs")->element(2).as_string(), "yz");
  EXPECT_THROW(f.find("strs")->element(3), std::out_of_range);

  const auto* nested = f.find("nested")->as_nested_array();
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->size(), 3u);
  EXPECT_EQ((*nested)[0].as_int_array(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(*(*nested)[1].as_string_array(), std::vector<std::string>{"deep"});
  EXPECT_EQ((*(*nested)[2].as_nested_array())[0].as_int_array(), std::vector<int64_t>{-3});
  EXPECT_EQ(f.find("nested")->element(0).element_type(), GgufType::U8);

  // Arrays of the wrong element type are errors naming the key.
  EXPECT_THROW(f.get_int_array("f32s"), Error);
  EXPECT_THROW(f.get_int_array("strs"), Error);
  EXPECT_THROW(f.get_string_array("u8s"), Error);
  EXPECT_THROW(f.get_float_array("bools"), Error);
  EXPECT_THROW(f.get_int_array("u32s_missing").value(), std::bad_optional_access);
  EXPECT_THROW(f.get_int("i32s"), Error);  // an array is not a scalar
}

TEST(Gguf, TensorsShapesDtypesAndData) {
  const Built built = small_file();
  const GgufFile f = parse(built.bytes);
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset(), built.data_offset);
  EXPECT_EQ(f.data_offset() % 32, 0u);

  const TensorView* a = f.find_tensor("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::F32);
  EXPECT_EQ(a->shape, (std::vector<uint64_t>{2, 3}));  // ne [3, 2] reversed
  EXPECT_EQ(a->nbytes, 24u);
  EXPECT_EQ(a->data, f.file()->data() + built.data_offset);
  EXPECT_EQ(a->data[5], 5);
  EXPECT_EQ(a->file, f.file());

  const TensorView* q = f.find_tensor("b");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dtype, DType::Q8_0);
  EXPECT_EQ(q->shape, std::vector<uint64_t>{32});
  EXPECT_EQ(q->nbytes, 34u);
  EXPECT_EQ(q->data, f.file()->data() + built.data_offset + 32);  // 24 bytes padded to 32
  EXPECT_EQ(q->data[0], 100);
  EXPECT_EQ(q->data + 34, f.file()->data() + f.file()->size());
  EXPECT_EQ(f.find_tensor("c"), nullptr);
}

TEST(Gguf, EveryMappedTensorType) {
  struct Case {
    uint32_t id;
    DType dtype;
  };
  const Case cases[] = {
      {0, DType::F32},    {1, DType::F16},    {2, DType::Q4_0},  {3, DType::Q4_1},
      {6, DType::Q5_0},   {7, DType::Q5_1},   {8, DType::Q8_0},  {10, DType::Q2_K},
      {11, DType::Q3_K},  {12, DType::Q4_K},  {13, DType::Q5_K}, {14, DType::Q6_K},
      {20, DType::IQ4_NL}, {24, DType::I8},   {25, DType::I16},  {26, DType::I32},
      {27, DType::I64},   {28, DType::F64},   {30, DType::BF16},
  };
  GgufBuilder b;
  for (const Case& c : cases) {
    const DTypeInfo& info = dtype_info(c.dtype);
    // Two rows of one block each (or 256 scalars for plain types).
    const uint64_t ne0 = info.block_elems > 1 ? info.block_elems : 256;
    b.tensor(std::string(info.name), c.id, {ne0, 2}, filled(*dtype_bytes(c.dtype, ne0 * 2)));
  }
  const GgufFile f = parse(b.build().bytes);
  ASSERT_EQ(f.tensors().size(), std::size(cases));
  for (size_t i = 0; i < std::size(cases); ++i) {
    const TensorView& t = f.tensors()[i];
    EXPECT_EQ(t.dtype, cases[i].dtype) << t.name;
    EXPECT_EQ(t.name, dtype_name(cases[i].dtype));
    EXPECT_EQ(t.shape[0], 2u);
    EXPECT_EQ(t.nbytes, *dtype_bytes(t.dtype, t.elements()));
    EXPECT_EQ(dtype_from_ggml_type(cases[i].id), cases[i].dtype);
  }
}

TEST(Gguf, CustomAlignment) {
  GgufBuilder b;
  b.alignment = 64;
  b.kv("general.alignment", v_u32(64));
  b.tensor("t0", 0, {5}, filled(20)).tensor("t1", 1, {3}, filled(6, 50));
  const Built built = b.build();
  const GgufFile f = parse(built.bytes);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  EXPECT_EQ(f.data_offset(), built.data_offset);
  EXPECT_EQ(f.tensors()[1].data, f.file()->data() + built.data_offset + 64);
  EXPECT_EQ(f.tensors()[1].data[0], 50);

  // The same tensor offsets are misaligned under the default of 32 once
  // general.alignment says 128.
  GgufBuilder c;
  c.alignment = 32;
  c.kv("general.alignment", v_u32(128));
  c.tensor("t0", 0, {8}, filled(32)).tensor("t1", 0, {8}, filled(32));
  expect_error(c.build().bytes, "tensor 't1'", "not a multiple of the alignment 128");
}

TEST(Gguf, BadAlignmentKey) {
  for (uint32_t bad : {0u, 3u, 48u}) {
    GgufBuilder b;
    b.kv("general.alignment", v_u32(bad));
    expect_error(b.build().bytes, "metadata 'general.alignment'", "power of two");
  }
  GgufBuilder b;
  b.kv("general.alignment", v_u64(32));
  expect_error(b.build().bytes, "metadata 'general.alignment'", "must be a uint32");
}

TEST(Gguf, Version2And3ParseTheSame) {
  const GgufFile v2 = parse(small_file(2).bytes);
  const GgufFile v3 = parse(small_file(3).bytes);
  EXPECT_EQ(v2.version(), 2u);
  EXPECT_EQ(v3.version(), 3u);
  ASSERT_EQ(v2.tensors().size(), v3.tensors().size());
  for (size_t i = 0; i < v2.tensors().size(); ++i) {
    EXPECT_EQ(v2.tensors()[i].name, v3.tensors()[i].name);
    EXPECT_EQ(v2.tensors()[i].shape, v3.tensors()[i].shape);
  }
  EXPECT_EQ(*v2.get_string_array("tokenizer.ggml.tokens"), *v3.get_string_array("tokenizer.ggml.tokens"));
}

TEST(Gguf, RejectsOtherVersionsAndMagic) {
  expect_error(small_file(1).bytes, "header", "version 1 is not supported");
  expect_error(small_file(4).bytes, "header", "unsupported GGUF version 4");
  expect_error(small_file(0).bytes, "header", "unsupported GGUF version 0");
  expect_error(small_file(0x03000000).bytes, "header", "big-endian");
  std::vector<uint8_t> bytes = small_file().bytes;
  bytes[0] = 'X';
  expect_error(bytes, "header", "not a GGUF file");
  expect_error({}, "header", "truncated");
  expect_error({'G', 'G', 'U'}, "header", "truncated");
}

// Every proper prefix of a valid file is an Error, never a crash or a read
// past the end (run under ASan to check the latter).
TEST(Gguf, TruncatedAtEveryByte) {
  for (uint32_t version : {2u, 3u}) {
    const std::vector<uint8_t> bytes = small_file(version).bytes;
    ASSERT_NO_THROW(parse(bytes));
    for (size_t n = 0; n < bytes.size(); ++n) {
      // Copy into an exactly sized buffer so ASan sees any overread.
      std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
      EXPECT_THROW(parse(prefix), Error) << "prefix of " << n << " bytes";
    }
  }
}

TEST(Gguf, HugeCountsAndLengths) {
  GgufBuilder b;
  b.kv_count_override = 1ull << 62;
  expect_error(b.build().bytes, "header", "metadata count");
  b = GgufBuilder();
  b.tensor_count_override = std::numeric_limits<uint64_t>::max();
  expect_error(b.build().bytes, "header", "tensor count");

  // A string length larger than the file.
  Bytes raw;
  raw.u32(0x46554747).u32(3).u64(0).u64(1).u64(1ull << 60);
  raw.raw(std::vector<uint8_t>(64, 'k'));
  expect_error(raw.b, "metadata entry 0", "exceeds the");

  // Array counts that cannot fit, for a fixed-size, a string and an array element type.
  for (GgufType t : {GgufType::U64, GgufType::STRING, GgufType::ARRAY, GgufType::U8}) {
    GgufBuilder a;
    a.kv("arr", v_array(t, {}, (1ull << 63) + 5));
    a.kv("pad", v_str(std::string(100, 'p')));
    expect_error(a.build().bytes, "metadata 'arr'", "cannot fit");
  }
  // A value string length beyond the end.
  GgufBuilder s;
  s.kv("s", Val{GgufType::STRING, Bytes().u64(1000).raw({'a', 'b'}).b});
  expect_error(s.build().bytes, "metadata 's'", "exceeds the");
}

TEST(Gguf, NestingDepthIsBounded) {
  Val v = v_array(GgufType::U8, {v_u8(1)});
  for (int depth = 1; depth < kGgufMaxArrayDepth; ++depth) v = v_array(GgufType::ARRAY, {v});
  GgufBuilder ok;
  ok.kv("deep", v);
  EXPECT_NO_THROW(parse(ok.build().bytes));
  GgufBuilder bad;
  bad.kv("deep", v_array(GgufType::ARRAY, {v}));
  expect_error(bad.build().bytes, "metadata 'deep'", "nested deeper");
}

TEST(Gguf, NestedArrayCountIsBounded) {
  // 2^20 + 1 empty u8 arrays inside one array: 12 bytes each in the file.
  Bytes inner;
  for (uint64_t i = 0; i <= kGgufMaxNestedArrays; ++i) inner.u32(0).u64(0);
  GgufBuilder b;
  b.kv("many", Val{GgufType::ARRAY, Bytes().u32(9).u64(kGgufMaxNestedArrays + 1).raw(inner.b).b});
  expect_error(b.build().bytes, "metadata 'many'", "nested arrays");
}

TEST(Gguf, BadTypes) {
  GgufBuilder b;
  b.kv("odd", Val{static_cast<GgufType>(13), Bytes().u32(0).b});
  expect_error(b.build().bytes, "metadata 'odd'", "unknown value type 13");
  b = GgufBuilder();
  b.kv("odd", Val{GgufType::ARRAY, Bytes().u32(99).u64(0).b});
  expect_error(b.build().bytes, "metadata 'odd'", "unknown value type 99");

  b = GgufBuilder();
  b.tensor("blk.0.attn_q.weight", 16, {256}, filled(66));
  expect_error(b.build().bytes, "tensor 'blk.0.attn_q.weight'", "ggml type 16 (IQ2_XXS) is not supported");
  b = GgufBuilder();
  b.tensor("w", 99, {4}, filled(16));
  expect_error(b.build().bytes, "tensor 'w'", "unknown ggml type 99");
}

TEST(Gguf, DuplicatesAndEmptyNames) {
  GgufBuilder b;
  b.kv("k", v_u8(1)).kv("k", v_u8(2));
  expect_error(b.build().bytes, "metadata 'k'", "duplicate key");
  b = GgufBuilder();
  b.kv("", v_u8(1));
  expect_error(b.build().bytes, "metadata entry 0", "empty key");
  b = GgufBuilder();
  b.tensor("t", 0, {8}, filled(32)).tensor("t", 0, {8}, filled(32));
  expect_error(b.build().bytes, "tensor 't'", "duplicate tensor name");
  b = GgufBuilder();
  b.tensor("", 0, {8}, filled(32));
  expect_error(b.build().bytes, "tensor info 0", "empty tensor name");
}

TEST(Gguf, BadShapes) {
  GgufBuilder b;
  b.tensor("five", 0, {1, 1, 1, 1, 1}, filled(4));
  expect_error(b.build().bytes, "tensor 'five'", "5 dimensions");

  b = GgufBuilder();
  b.tensor("big", 0, {1ull << 32, 1ull << 32}, {});
  expect_error(b.build().bytes, "tensor 'big'", "overflows");

  b = GgufBuilder();
  b.tensor("neg", 0, {1ull << 63}, {});
  expect_error(b.build().bytes, "tensor 'neg'", "invalid size");

  // Element count fits in int64 but the byte size of f64 elements does not fit the file.
  b = GgufBuilder();
  b.tensor("wide", 28, {1ull << 40, 1ull << 20}, {});
  expect_error(b.build().bytes, "tensor 'wide'", "outside the file");

  // Innermost dimension not a whole number of blocks.
  b = GgufBuilder();
  b.tensor("q", 2, {16, 2}, filled(36));
  expect_error(b.build().bytes, "tensor 'q'", "not a multiple of the Q4_0 block size 32");
}

TEST(Gguf, ZeroSizedDimensionsAreEmptyTensors) {
  GgufBuilder b;
  b.tensor("empty", 0, {0, 7}, {});
  b.tensor("scalar", 0, {}, filled(4));
  const GgufFile f = parse(b.build().bytes);
  EXPECT_EQ(f.tensors()[0].shape, (std::vector<uint64_t>{7, 0}));
  EXPECT_EQ(f.tensors()[0].nbytes, 0u);
  EXPECT_EQ(f.tensors()[0].elements(), 0u);
  EXPECT_TRUE(f.tensors()[1].shape.empty());
  EXPECT_EQ(f.tensors()[1].nbytes, 4u);
}

TEST(Gguf, BadOffsets) {
  GgufBuilder b;
  b.tensor("mis", 0, {8}, filled(32), 16);
  expect_error(b.build().bytes, "tensor 'mis'", "not a multiple of the alignment 32");

  b = GgufBuilder();
  b.tensor("far", 0, {8}, filled(32), 1ull << 30);
  expect_error(b.build().bytes, "tensor 'far'", "outside the file");

  // offset + size wraps around 2^64.
  b = GgufBuilder();
  b.tensor("wrap", 0, {16}, filled(64), std::numeric_limits<uint64_t>::max() - 31);
  expect_error(b.build().bytes, "tensor 'wrap'", "outside the file");

  // Last tensor one byte short.
  std::vector<uint8_t> bytes = small_file().bytes;
  bytes.pop_back();
  expect_error(bytes, "tensor 'b'", "outside the file");
}

TEST(Gguf, OpenNamesThePath) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tessera_gguf_test_" + std::to_string(::getpid()) + ".gguf"))
          .string();
  {
    const std::vector<uint8_t> bytes = small_file().bytes;
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const GgufFile f = GgufFile::open(path);
  EXPECT_EQ(f.path(), path);
  EXPECT_EQ(f.tensors().size(), 2u);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << "GGUF";
  }
  try {
    GgufFile::open(path);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), path);
  }
  std::filesystem::remove(path);
  EXPECT_THROW(GgufFile::open(path), Error);
}

TEST(Gguf, GgmlTypeNames) {
  EXPECT_STREQ(ggml_type_name(12), "Q4_K");
  EXPECT_STREQ(ggml_type_name(39), "MXFP4");
  EXPECT_EQ(ggml_type_name(1000), nullptr);
  EXPECT_FALSE(dtype_from_ggml_type(15).has_value());  // Q8_K
}

}  // namespace
}  // namespace tessera
