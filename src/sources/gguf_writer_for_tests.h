// Test-only GGUF writer: builds small GGUF files in memory, valid by default,
// with hooks to make them hostile (wrong counts, offsets, lengths). Header-only;
// used by the *_test.cc files, never by the library.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sources/gguf.h"

namespace tessera::testing {

// Little-endian byte appender.
struct Bytes {
  std::vector<uint8_t> b;
  Bytes& u8(uint8_t v) { b.push_back(v); return *this; }
  Bytes& u16(uint16_t v) { return le(v, 2); }
  Bytes& u32(uint32_t v) { return le(v, 4); }
  Bytes& u64(uint64_t v) { return le(v, 8); }
  Bytes& f32(float v) { return u32(std::bit_cast<uint32_t>(v)); }
  Bytes& f64(double v) { return u64(std::bit_cast<uint64_t>(v)); }
  // GGUF string: u64 length + bytes.
  Bytes& str(std::string_view s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& raw(const std::vector<uint8_t>& v) { b.insert(b.end(), v.begin(), v.end()); return *this; }
  Bytes& le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
};

// One encoded metadata value: its type and the bytes that follow the type tag.
struct Val {
  GgufType type;
  std::vector<uint8_t> payload;
};

inline Val v_u8(uint8_t x) { return {GgufType::U8, Bytes().u8(x).b}; }
inline Val v_i8(int8_t x) { return {GgufType::I8, Bytes().u8(static_cast<uint8_t>(x)).b}; }
inline Val v_u16(uint16_t x) { return {GgufType::U16, Bytes().u16(x).b}; }
inline Val v_i16(int16_t x) { return {GgufType::I16, Bytes().u16(static_cast<uint16_t>(x)).b}; }
inline Val v_u32(uint32_t x) { return {GgufType::U32, Bytes().u32(x).b}; }
inline Val v_i32(int32_t x) { return {GgufType::I32, Bytes().u32(static_cast<uint32_t>(x)).b}; }
inline Val v_f32(float x) { return {GgufType::F32, Bytes().f32(x).b}; }
inline Val v_bool(bool x) { return {GgufType::BOOL, Bytes().u8(x ? 1 : 0).b}; }
inline Val v_str(std::string_view s) { return {GgufType::STRING, Bytes().str(s).b}; }
inline Val v_u64(uint64_t x) { return {GgufType::U64, Bytes().u64(x).b}; }
inline Val v_i64(int64_t x) { return {GgufType::I64, Bytes().u64(static_cast<uint64_t>(x)).b}; }
inline Val v_f64(double x) { return {GgufType::F64, Bytes().f64(x).b}; }
// An array of `elems` (all of type elem; nested arrays are Vals of type ARRAY).
// `count` overrides the written element count (for hostile files).
inline Val v_array(GgufType elem, const std::vector<Val>& elems,
                   std::optional<uint64_t> count = std::nullopt) {
  Bytes p;
  p.u32(static_cast<uint32_t>(elem)).u64(count ? *count : elems.size());
  for (const Val& e : elems) p.raw(e.payload);
  return {GgufType::ARRAY, p.b};
}
inline Val v_str_array(const std::vector<std::string>& items) {
  std::vector<Val> elems;
  for (const auto& s : items) elems.push_back(v_str(s));
  return v_array(GgufType::STRING, elems);
}
inline Val v_i32_array(const std::vector<int32_t>& items) {
  std::vector<Val> elems;
  for (int32_t x : items) elems.push_back(v_i32(x));
  return v_array(GgufType::I32, elems);
}

struct TensorSpec {
  std::string name;
  uint32_t ggml_type;
  std::vector<uint64_t> ne;  // innermost first, as in the file
  std::vector<uint8_t> data;
  std::optional<uint64_t> offset;  // data-section offset; default: packed + aligned
};

struct Built {
  std::vector<uint8_t> bytes;
  uint64_t data_offset;              // where the data section starts
  std::vector<uint64_t> tensor_info_at;  // file offset of each tensor info record
};

class GgufBuilder {
 public:
  uint32_t version = 3;
  uint32_t alignment = 32;  // padding used here; add "general.alignment" to change the file's
  std::optional<uint64_t> tensor_count_override;
  std::optional<uint64_t> kv_count_override;

  GgufBuilder& kv(std::string key, Val v) {
    kvs_.push_back({std::move(key), std::move(v)});
    return *this;
  }
  // Replaces the value of an existing key (keeping its place), else adds it.
  GgufBuilder& set(const std::string& key, Val v) {
    for (auto& [k, old] : kvs_)
      if (k == key) {
        old = std::move(v);
        return *this;
      }
    return kv(key, std::move(v));
  }
  const std::vector<std::pair<std::string, Val>>& kvs() const { return kvs_; }
  GgufBuilder& tensor(std::string name, uint32_t ggml_type, std::vector<uint64_t> ne,
                      std::vector<uint8_t> data, std::optional<uint64_t> offset = std::nullopt) {
    tensors_.push_back({std::move(name), ggml_type, std::move(ne), std::move(data), offset});
    return *this;
  }
  // An F32 tensor with the given values (ne innermost first).
  GgufBuilder& f32_tensor(std::string name, std::vector<uint64_t> ne, const std::vector<float>& v) {
    Bytes d;
    for (float x : v) d.f32(x);
    return tensor(std::move(name), 0, std::move(ne), d.b);
  }

  Built build() const {
    Bytes out;
    out.u32(0x46554747).u32(version);
    out.u64(tensor_count_override ? *tensor_count_override : tensors_.size());
    out.u64(kv_count_override ? *kv_count_override : kvs_.size());
    for (const auto& [key, v] : kvs_) {
      out.str(key).u32(static_cast<uint32_t>(v.type)).raw(v.payload);
    }
    Built built;
    uint64_t next = 0;
    std::vector<uint64_t> offsets;
    for (const TensorSpec& t : tensors_) {
      const uint64_t off = t.offset ? *t.offset : next;
      offsets.push_back(off);
      next = pad(off + t.data.size());
      built.tensor_info_at.push_back(out.b.size());
      out.str(t.name).u32(static_cast<uint32_t>(t.ne.size()));
      for (uint64_t d : t.ne) out.u64(d);
      out.u32(t.ggml_type).u64(off);
    }
    while (out.b.size() % alignment != 0) out.u8(0);
    built.data_offset = out.b.size();
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const uint64_t at = built.data_offset + offsets[i];
      const auto& d = tensors_[i].data;
      if (offsets[i] > (1u << 24) || d.size() > (1u << 24)) continue;  // hostile offset: no data
      if (out.b.size() < at) out.b.resize(at, 0);
      if (out.b.size() < at + d.size()) out.b.resize(at + d.size(), 0);
      if (!d.empty()) std::memcpy(out.b.data() + at, d.data(), d.size());
    }
    built.bytes = std::move(out.b);
    return built;
  }

 private:
  uint64_t pad(uint64_t x) const { return (x + alignment - 1) / alignment * alignment; }
  std::vector<std::pair<std::string, Val>> kvs_;
  std::vector<TensorSpec> tensors_;
};

}  // namespace tessera::testing
