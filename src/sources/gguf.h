// Reader for GGUF files (the llama.cpp / ggml model format), versions 2 and 3.
//
// File layout (all integers little-endian):
//   u32  magic "GGUF" (bytes 47 47 55 46)
//   u32  version                      2 or 3 (v1 used 32-bit counts: rejected)
//   u64  tensor_count
//   u64  metadata_kv_count
//   metadata_kv_count × { string key; u32 value_type; value }
//   tensor_count × { string name; u32 n_dims; u64 ne[n_dims]; u32 ggml_type; u64 offset }
//   padding to `general.alignment` (u32 key, default 32, a power of two)
//   data section: each tensor's bytes at data_start + offset (offset aligned)
// where string = { u64 byte length; bytes (UTF-8, no terminator) } and an array
// value = { u32 element_type; u64 count; count × element } (elements may be arrays).
// `ne` lists dimensions innermost first; TensorView.shape is the reverse
// (outermost first), so a ggml [ne0 = 576, ne1 = 49152] matrix is shape {49152, 576}.
//
// Every count, length, offset and shape is untrusted. Before anything is
// allocated or read, it is checked against the bytes that remain in the file:
// a count of N elements is accepted only if N × (smallest possible element size)
// fits, so memory use stays a small constant multiple of the file size. Dimension
// products and byte sizes are overflow-checked, the innermost dimension must be a
// whole number of blocks of the tensor's format, tensor offsets must be aligned and
// every tensor must lie inside the file. Duplicate metadata keys and duplicate
// tensor names are errors. A dimension of 0 is accepted (as by ggml): the tensor is
// empty and owns no bytes. Tensor byte ranges may overlap (ggml writes them packed,
// but nothing depends on that here; the data is read-only).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor_view.h"

namespace tessera {

// Metadata value types, numbered as in the file.
enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};

// "uint8", "int32", "float32", "bool", "string", "array", ...
std::string_view gguf_type_name(GgufType t);

// Arrays nest at most this deep (an array of arrays is depth 2). ggml itself
// rejects nested arrays; gguf-py writes them.
inline constexpr int kGgufMaxArrayDepth = 8;
// At most this many arrays inside arrays per file (each one costs a GgufValue,
// far more than its 12 bytes in the file).
inline constexpr uint64_t kGgufMaxNestedArrays = uint64_t{1} << 20;
// ggml's GGML_MAX_DIMS.
inline constexpr uint32_t kGgufMaxDims = 4;
inline constexpr uint32_t kGgufDefaultAlignment = 32;

// One metadata value: a scalar, a string, or an array of any of these.
class GgufValue {
 public:
  GgufType type() const { return type_; }
  bool is_array() const { return type_ == GgufType::ARRAY; }
  bool is_integer() const;  // u8 .. i64 scalar
  bool is_float() const;    // f32 / f64 scalar

  // Scalar accessors; nullopt when the value is not of a fitting type.
  // as_int accepts every integer type (nullopt for a u64 above INT64_MAX),
  // as_float accepts float and integer types (f32 is widened exactly).
  std::optional<int64_t> as_int() const;
  std::optional<uint64_t> as_uint() const;  // any integer type holding a value >= 0
  std::optional<double> as_float() const;
  std::optional<bool> as_bool() const;
  const std::string* as_string() const;  // nullptr unless a string

  // Arrays. element_type() is ARRAY for an array of arrays.
  GgufType element_type() const { return elem_type_; }
  uint64_t size() const { return is_array() ? count_ : 1; }
  // Element i as a value of its own (copies a string element).
  GgufValue element(uint64_t i) const;
  // Whole-array conversions; nullopt when this is not an array of a fitting
  // element type (same acceptance rules as the scalar accessors).
  std::optional<std::vector<int64_t>> as_int_array() const;
  std::optional<std::vector<double>> as_float_array() const;
  const std::vector<std::string>* as_string_array() const;  // nullptr unless strings
  // Raw little-endian element bytes of an array of numbers or bools (empty otherwise).
  std::span<const uint8_t> array_bytes() const { return raw_; }
  // Elements of an array of arrays (nullptr otherwise).
  const std::vector<GgufValue>* as_nested_array() const {
    return elem_type_ == GgufType::ARRAY && is_array() ? &nested_ : nullptr;
  }

 private:
  friend class GgufParser;
  GgufType type_ = GgufType::U8;
  GgufType elem_type_ = GgufType::U8;  // arrays only
  uint64_t count_ = 0;                 // arrays only
  uint64_t bits_ = 0;    // scalar numbers: integer value (two's complement) or double bits
  std::string str_;                    // STRING
  std::vector<uint8_t> raw_;           // arrays of numbers/bools: the file's bytes
  std::vector<std::string> strings_;   // arrays of strings
  std::vector<GgufValue> nested_;      // arrays of arrays
};

class GgufFile {
 public:
  // Maps `path` and parses it. Throws Error naming the path and the subject
  // ("header", "metadata 'general.alignment'", "tensor 'blk.0.attn_q.weight'").
  static GgufFile open(const std::string& path);
  // Parses bytes already mapped (or wrapped with MappedFile::from_bytes).
  static GgufFile parse(std::shared_ptr<const MappedFile> file);

  const std::string& path() const { return file_->path(); }
  const std::shared_ptr<const MappedFile>& file() const { return file_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  // Absolute file offset where the data section starts (aligned).
  uint64_t data_offset() const { return data_offset_; }
  // The metadata key/value records occupy bytes [24, metadata_end()) of the
  // file (after magic, version and the two counts).
  uint64_t metadata_end() const { return metadata_end_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* find(std::string_view key) const;

  // Typed getters: nullopt when the key is absent; Error naming the key when it
  // is present with a type that does not fit (see GgufValue for the rules).
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;
  std::optional<std::vector<double>> get_float_array(std::string_view key) const;
  const std::vector<std::string>* get_string_array(std::string_view key) const;

  // Tensors in file order; shapes outermost first. Each view's `file` keeps the
  // mapping alive.
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find_tensor(std::string_view name) const;

 private:
  friend class GgufParser;
  std::shared_ptr<const MappedFile> file_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  uint64_t metadata_end_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::unordered_map<std::string, size_t> metadata_index_;
  std::vector<TensorView> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

// ggml type id → DType, for the formats Tessera reads; nullopt for others.
std::optional<DType> dtype_from_ggml_type(uint32_t ggml_type);
// ggml's name for a type id ("Q4_K", "IQ2_XXS", ...), or nullptr if unknown.
const char* ggml_type_name(uint32_t ggml_type);

}  // namespace tessera
