#include "sources/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace tessera {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32

// Bytes a scalar of type t occupies; 0 for STRING / ARRAY (variable size).
uint64_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::BOOL: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
    case GgufType::STRING: case GgufType::ARRAY: return 0;
  }
  return 0;
}

bool valid_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::F64); }

// The smallest number of bytes one value of type t can occupy in the file:
// used to bound counts before anything is allocated.
uint64_t min_encoded_size(GgufType t) {
  if (t == GgufType::STRING) return 8;      // u64 length, empty string
  if (t == GgufType::ARRAY) return 4 + 8;   // u32 element type + u64 count, no elements
  return scalar_size(t);
}

bool is_integer_type(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16:
    case GgufType::U32: case GgufType::I32: case GgufType::U64: case GgufType::I64:
      return true;
    default:
      return false;
  }
}

bool is_signed_type(GgufType t) {
  return t == GgufType::I8 || t == GgufType::I16 || t == GgufType::I32 || t == GgufType::I64;
}

uint64_t load_le(const uint8_t* p, uint64_t n) {
  uint64_t v = 0;
  for (uint64_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// Decodes one little-endian scalar of type t at p into the `bits_` encoding of
// GgufValue: integers as their 64-bit two's complement value (sign-extended for
// signed types), bools as 0/1 (any nonzero byte is true, as in ggml), f32 and
// f64 as the bits of the (exactly widened) double.
uint64_t decode_scalar_bits(GgufType t, const uint8_t* p) {
  const uint64_t raw = load_le(p, scalar_size(t));
  switch (t) {
    case GgufType::I8: return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(raw)));
    case GgufType::I16: return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(raw)));
    case GgufType::I32: return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(raw)));
    case GgufType::BOOL: return raw != 0 ? 1 : 0;
    case GgufType::F32:
      return std::bit_cast<uint64_t>(
          static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(raw))));
    default: return raw;  // unsigned types, I64 (already 64-bit), F64 (already double bits)
  }
}

std::optional<int64_t> int_from_bits(GgufType t, uint64_t bits) {
  if (!is_integer_type(t)) return std::nullopt;
  if (!is_signed_type(t) && bits > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return std::nullopt;
  return static_cast<int64_t>(bits);
}

std::optional<double> float_from_bits(GgufType t, uint64_t bits) {
  if (t == GgufType::F32 || t == GgufType::F64) return std::bit_cast<double>(bits);
  if (is_signed_type(t)) return static_cast<double>(static_cast<int64_t>(bits));
  if (is_integer_type(t)) return static_cast<double>(bits);
  return std::nullopt;
}

// Up-front reservations follow untrusted counts only this far; beyond it the
// containers grow with what the file really contains.
size_t capped(uint64_t count) { return static_cast<size_t>(std::min<uint64_t>(count, 4096)); }

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }  // caller checks overflow

}  // namespace

std::string_view gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::U8: return "uint8";
    case GgufType::I8: return "int8";
    case GgufType::U16: return "uint16";
    case GgufType::I16: return "int16";
    case GgufType::U32: return "uint32";
    case GgufType::I32: return "int32";
    case GgufType::F32: return "float32";
    case GgufType::BOOL: return "bool";
    case GgufType::STRING: return "string";
    case GgufType::ARRAY: return "array";
    case GgufType::U64: return "uint64";
    case GgufType::I64: return "int64";
    case GgufType::F64: return "float64";
  }
  return "?";
}

// ---------------------------------------------------------------------------
// GgufValue

bool GgufValue::is_integer() const { return is_integer_type(type_); }
bool GgufValue::is_float() const { return type_ == GgufType::F32 || type_ == GgufType::F64; }

std::optional<int64_t> GgufValue::as_int() const { return int_from_bits(type_, bits_); }
std::optional<uint64_t> GgufValue::as_uint() const {
  if (!is_integer_type(type_)) return std::nullopt;
  if (is_signed_type(type_) && static_cast<int64_t>(bits_) < 0) return std::nullopt;
  return bits_;
}

std::optional<double> GgufValue::as_float() const { return float_from_bits(type_, bits_); }

std::optional<bool> GgufValue::as_bool() const {
  if (type_ != GgufType::BOOL) return std::nullopt;
  return bits_ != 0;
}

const std::string* GgufValue::as_string() const {
  return type_ == GgufType::STRING ? &str_ : nullptr;
}

GgufValue GgufValue::element(uint64_t i) const {
  if (!is_array() || i >= count_) throw std::out_of_range("GgufValue::element");
  if (elem_type_ == GgufType::ARRAY) return nested_[i];
  GgufValue v;
  v.type_ = elem_type_;
  if (elem_type_ == GgufType::STRING) {
    v.str_ = strings_[i];
  } else {
    const uint64_t size = scalar_size(elem_type_);
    v.bits_ = decode_scalar_bits(elem_type_, raw_.data() + i * size);
  }
  return v;
}

std::optional<std::vector<int64_t>> GgufValue::as_int_array() const {
  if (!is_array() || !is_integer_type(elem_type_)) return std::nullopt;
  const uint64_t size = scalar_size(elem_type_);
  std::vector<int64_t> out;
  out.reserve(count_);
  for (uint64_t i = 0; i < count_; ++i) {
    auto v = int_from_bits(elem_type_, decode_scalar_bits(elem_type_, raw_.data() + i * size));
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

std::optional<std::vector<double>> GgufValue::as_float_array() const {
  if (!is_array() || elem_type_ == GgufType::STRING || elem_type_ == GgufType::ARRAY ||
      elem_type_ == GgufType::BOOL)
    return std::nullopt;
  const uint64_t size = scalar_size(elem_type_);
  std::vector<double> out;
  out.reserve(count_);
  for (uint64_t i = 0; i < count_; ++i)
    out.push_back(*float_from_bits(elem_type_, decode_scalar_bits(elem_type_, raw_.data() + i * size)));
  return out;
}

const std::vector<std::string>* GgufValue::as_string_array() const {
  return is_array() && elem_type_ == GgufType::STRING ? &strings_ : nullptr;
}

// ---------------------------------------------------------------------------
// ggml tensor types

std::optional<DType> dtype_from_ggml_type(uint32_t t) {
  switch (t) {
    case 0: return DType::F32;
    case 1: return DType::F16;
    case 2: return DType::Q4_0;
    case 3: return DType::Q4_1;
    case 6: return DType::Q5_0;
    case 7: return DType::Q5_1;
    case 8: return DType::Q8_0;
    case 10: return DType::Q2_K;
    case 11: return DType::Q3_K;
    case 12: return DType::Q4_K;
    case 13: return DType::Q5_K;
    case 14: return DType::Q6_K;
    case 20: return DType::IQ4_NL;
    case 24: return DType::I8;
    case 25: return DType::I16;
    case 26: return DType::I32;
    case 27: return DType::I64;
    case 28: return DType::F64;
    case 30: return DType::BF16;
    default: return std::nullopt;
  }
}

const char* ggml_type_name(uint32_t t) {
  // ggml.h `enum ggml_type`; ids 4, 5 and 31..33, 36..38 were formats that
  // ggml has since removed.
  static constexpr const char* kNames[] = {
      "F32",     "F16",      "Q4_0",     "Q4_1",     "Q4_2",     "Q4_3",     "Q5_0",
      "Q5_1",    "Q8_0",     "Q8_1",     "Q2_K",     "Q3_K",     "Q4_K",     "Q5_K",
      "Q6_K",    "Q8_K",     "IQ2_XXS",  "IQ2_XS",   "IQ3_XXS",  "IQ1_S",    "IQ4_NL",
      "IQ3_S",   "IQ2_S",    "IQ4_XS",   "I8",       "I16",      "I32",      "I64",
      "F64",     "IQ1_M",    "BF16",     "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",
      "TQ2_0",   "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4", "NVFP4", "Q1_0",
  };
  return t < std::size(kNames) ? kNames[t] : nullptr;
}

// ---------------------------------------------------------------------------
// Parser: a bounds-checked cursor over the mapped bytes.

class GgufParser {
 public:
  explicit GgufParser(std::shared_ptr<const MappedFile> file)
      : file_(std::move(file)), base_(file_->data()), size_(file_->size()) {}

  GgufFile run() {
    GgufFile out;
    out.file_ = file_;
    parse_header(out);
    parse_metadata(out);
    parse_tensor_infos(out);
    return out;
  }

 private:
  const std::string& path() const { return file_->path(); }
  uint64_t remaining() const { return size_ - pos_; }

  // Fails unless n more bytes exist at the cursor.
  void need(uint64_t n, const std::string& subject, std::string_view what) {
    if (n > remaining())
      fail(path(), subject, "truncated: {} needs {} bytes at offset {}, but the file ends at {}",
           what, n, pos_, size_);
  }
  uint32_t u32(const std::string& subject, std::string_view what) {
    need(4, subject, what);
    const uint32_t v = static_cast<uint32_t>(load_le(base_ + pos_, 4));
    pos_ += 4;
    return v;
  }
  uint64_t u64(const std::string& subject, std::string_view what) {
    need(8, subject, what);
    const uint64_t v = load_le(base_ + pos_, 8);
    pos_ += 8;
    return v;
  }
  std::string str(const std::string& subject, std::string_view what) {
    const uint64_t len = u64(subject, what);
    if (len > remaining())
      fail(path(), subject, "{} length {} at offset {} exceeds the {} bytes left in the file", what,
           len, pos_ - 8, remaining());
    std::string s(reinterpret_cast<const char*>(base_ + pos_), static_cast<size_t>(len));
    pos_ += len;
    return s;
  }
  GgufType type_id(const std::string& subject, std::string_view what) {
    const uint32_t t = u32(subject, what);
    if (!valid_type(t)) fail(path(), subject, "unknown value type {} at offset {}", t, pos_ - 4);
    return static_cast<GgufType>(t);
  }

  void parse_header(GgufFile& out) {
    const std::string subject = "header";
    if (u32(subject, "magic") != kMagic) {
      fail(path(), subject, "not a GGUF file (bad magic bytes {:02x} {:02x} {:02x} {:02x})",
           base_[0], base_[1], base_[2], base_[3]);
    }
    const uint32_t version = u32(subject, "version");
    if (version != 0 && (version & 0xffffu) == 0)
      fail(path(), subject, "version field 0x{:08x} looks byte-swapped: big-endian GGUF files are not supported",
           version);
    if (version == 1)
      fail(path(), subject, "GGUF version 1 is not supported (it predates 64-bit counts); "
           "re-convert the model with a current llama.cpp");
    if (version != 2 && version != 3)
      fail(path(), subject, "unsupported GGUF version {} (supported: 2 and 3)", version);
    out.version_ = version;
    tensor_count_ = u64(subject, "tensor count");
    kv_count_ = u64(subject, "metadata count");
    // Bound both counts by what the rest of the file could hold, before any
    // loop or allocation: a metadata entry takes at least 8 (key length) + 1
    // (a key is non-empty) + 4 (type) + 1 (smallest value) bytes, a tensor info
    // at least 8 + 1 (name) + 4 (n_dims) + 4 (type) + 8 (offset).
    if (kv_count_ > remaining() / 14)
      fail(path(), subject, "metadata count {} cannot fit in the {} bytes left in the file",
           kv_count_, remaining());
    if (tensor_count_ > remaining() / 25)
      fail(path(), subject, "tensor count {} cannot fit in the {} bytes left in the file",
           tensor_count_, remaining());
  }

  // Reads one value of type t (the type id already consumed). depth counts
  // enclosing arrays.
  GgufValue value(GgufType t, const std::string& subject, int depth) {
    GgufValue v;
    v.type_ = t;
    if (t == GgufType::STRING) {
      v.str_ = str(subject, "string");
      return v;
    }
    if (t != GgufType::ARRAY) {
      const uint64_t n = scalar_size(t);
      need(n, subject, gguf_type_name(t));
      v.bits_ = decode_scalar_bits(t, base_ + pos_);
      pos_ += n;
      return v;
    }
    if (depth + 1 > kGgufMaxArrayDepth)
      fail(path(), subject, "arrays nested deeper than {} levels", kGgufMaxArrayDepth);
    v.elem_type_ = type_id(subject, "array element type");
    const uint64_t count = u64(subject, "array length");
    const uint64_t min_size = min_encoded_size(v.elem_type_);
    if (count > remaining() / min_size)
      fail(path(), subject, "array of {} {} elements cannot fit in the {} bytes left in the file",
           count, gguf_type_name(v.elem_type_), remaining());
    v.count_ = count;
    if (v.elem_type_ == GgufType::STRING) {
      v.strings_.reserve(capped(count));
      for (uint64_t i = 0; i < count; ++i) v.strings_.push_back(str(subject, "string element"));
    } else if (v.elem_type_ == GgufType::ARRAY) {
      if (count > kGgufMaxNestedArrays - nested_arrays_)
        fail(path(), subject, "more than {} nested arrays in the file", kGgufMaxNestedArrays);
      nested_arrays_ += count;
      v.nested_.reserve(capped(count));
      // Elements of an array of arrays carry no type tag of their own: each is
      // directly { u32 element_type; u64 count; elements } (as gguf-py writes them).
      for (uint64_t i = 0; i < count; ++i) v.nested_.push_back(value(GgufType::ARRAY, subject, depth + 1));
    } else {
      const uint64_t nbytes = count * min_size;  // fits: checked against remaining()
      v.raw_.assign(base_ + pos_, base_ + pos_ + nbytes);
      pos_ += nbytes;
    }
    return v;
  }

  void parse_metadata(GgufFile& out) {
    out.metadata_.reserve(capped(kv_count_));
    for (uint64_t i = 0; i < kv_count_; ++i) {
      const std::string entry = fmt::format("metadata entry {}", i);
      std::string key = str(entry, "key");
      if (key.empty()) fail(path(), entry, "empty key");
      const std::string subject = fmt::format("metadata '{}'", key);
      if (out.metadata_index_.count(key)) fail(path(), subject, "duplicate key");
      const GgufType t = type_id(subject, "value type");
      GgufValue v = value(t, subject, 0);
      out.metadata_index_.emplace(key, out.metadata_.size());
      out.metadata_.emplace_back(std::move(key), std::move(v));
    }
    out.metadata_end_ = pos_;
    if (const GgufValue* a = out.find("general.alignment")) {
      const std::string subject = "metadata 'general.alignment'";
      // ggml and gguf-py both require exactly uint32 here.
      if (a->type() != GgufType::U32)
        fail(path(), subject, "must be a uint32, found {}", gguf_type_name(a->type()));
      const uint64_t align = static_cast<uint64_t>(*a->as_int());
      if (align == 0 || (align & (align - 1)) != 0)
        fail(path(), subject, "alignment {} is not a nonzero power of two", align);
      out.alignment_ = static_cast<uint32_t>(align);
    }
  }

  void parse_tensor_infos(GgufFile& out) {
    std::vector<uint64_t> offsets;  // relative to the data section
    offsets.reserve(capped(tensor_count_));
    out.tensors_.reserve(capped(tensor_count_));
    for (uint64_t i = 0; i < tensor_count_; ++i) {
      const std::string entry = fmt::format("tensor info {}", i);
      std::string name = str(entry, "name");
      if (name.empty()) fail(path(), entry, "empty tensor name");
      const std::string subject = fmt::format("tensor '{}'", name);
      if (out.tensor_index_.count(name)) fail(path(), subject, "duplicate tensor name");

      const uint32_t n_dims = u32(subject, "dimension count");
      if (n_dims > kGgufMaxDims)
        fail(path(), subject, "{} dimensions (at most {} supported)", n_dims, kGgufMaxDims);
      uint64_t ne[kGgufMaxDims] = {1, 1, 1, 1};
      uint64_t elements = 1;
      bool empty = false;
      for (uint32_t d = 0; d < n_dims; ++d) {
        ne[d] = u64(subject, "dimension");
        // ggml stores ne as int64: anything above INT64_MAX is negative there.
        if (ne[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          fail(path(), subject, "dimension {} has invalid size {}", d, ne[d]);
        if (ne[d] == 0) empty = true;
      }
      if (!empty) {
        for (uint32_t d = 0; d < n_dims; ++d) {
          if (elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / ne[d])
            fail(path(), subject, "element count of dimensions {} x {} x {} x {} overflows int64",
                 ne[0], ne[1], ne[2], ne[3]);
          elements *= ne[d];
        }
      } else {
        elements = 0;
      }

      const uint32_t type = u32(subject, "type");
      const std::optional<DType> dtype = dtype_from_ggml_type(type);
      if (!dtype) {
        const char* gname = ggml_type_name(type);
        if (gname != nullptr)
          fail(path(), subject, "ggml type {} ({}) is not supported", type, gname);
        fail(path(), subject, "unknown ggml type {}", type);
      }
      const DTypeInfo& info = dtype_info(*dtype);
      if (ne[0] % info.block_elems != 0)
        fail(path(), subject, "innermost dimension {} is not a multiple of the {} block size {}",
             ne[0], info.name, info.block_elems);
      const std::optional<uint64_t> nbytes = dtype_bytes(*dtype, elements);
      if (!nbytes) fail(path(), subject, "byte size of {} {} elements overflows", elements, info.name);

      const uint64_t offset = u64(subject, "data offset");
      if (offset % out.alignment_ != 0)
        fail(path(), subject, "data offset {} is not a multiple of the alignment {}", offset,
             out.alignment_);

      TensorView view;
      view.name = name;
      view.dtype = *dtype;
      for (uint32_t d = n_dims; d-- > 0;) view.shape.push_back(ne[d]);  // outermost first
      view.nbytes = *nbytes;
      view.file = file_;
      out.tensor_index_.emplace(std::move(name), out.tensors_.size());
      out.tensors_.push_back(std::move(view));
      offsets.push_back(offset);
    }

    // The data section starts at the next multiple of the alignment. pos_ <= size_,
    // so the rounding cannot overflow a u64.
    out.data_offset_ = align_up(pos_, out.alignment_);
    for (size_t i = 0; i < out.tensors_.size(); ++i) {
      TensorView& t = out.tensors_[i];
      const uint64_t offset = offsets[i];
      // Checked as data_offset + offset + nbytes <= size without overflow.
      const bool inside = out.data_offset_ <= size_ && offset <= size_ - out.data_offset_ &&
                          t.nbytes <= size_ - out.data_offset_ - offset;
      if (!inside)
        fail(path(), fmt::format("tensor '{}'", t.name),
             "{} data bytes at offset {} of the data section (which starts at {}) lie outside "
             "the file ({} bytes)",
             t.nbytes, offset, out.data_offset_, size_);
      t.data = base_ + out.data_offset_ + offset;
    }
  }

  std::shared_ptr<const MappedFile> file_;
  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
  uint64_t tensor_count_ = 0;
  uint64_t kv_count_ = 0;
  uint64_t nested_arrays_ = 0;  // arrays inside arrays so far
};

// ---------------------------------------------------------------------------
// GgufFile

GgufFile GgufFile::open(const std::string& path) { return parse(MappedFile::open(path)); }

GgufFile GgufFile::parse(std::shared_ptr<const MappedFile> file) {
  return GgufParser(std::move(file)).run();
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = metadata_index_.find(std::string(key));
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const TensorView* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

[[noreturn]] void wrong_type(const std::string& path, std::string_view key, std::string_view want,
                             const GgufValue& v) {
  std::string found(gguf_type_name(v.type()));
  if (v.is_array()) found = fmt::format("array of {}", gguf_type_name(v.element_type()));
  fail(path, fmt::format("metadata '{}'", key), "expected {}, found {}", want, found);
}

}  // namespace

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (const std::string* s = v->as_string()) return *s;
  wrong_type(path(), key, "a string", *v);
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (auto i = v->as_int()) return i;
  if (v->is_integer()) fail(path(), fmt::format("metadata '{}'", key), "value exceeds the int64 range");
  wrong_type(path(), key, "an integer", *v);
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (auto f = v->as_float()) return f;
  wrong_type(path(), key, "a number", *v);
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (auto b = v->as_bool()) return b;
  wrong_type(path(), key, "a bool", *v);
}

std::optional<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (auto a = v->as_int_array()) return a;
  wrong_type(path(), key, "an array of integers (within the int64 range)", *v);
}

std::optional<std::vector<double>> GgufFile::get_float_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (auto a = v->as_float_array()) return a;
  wrong_type(path(), key, "an array of numbers", *v);
}

const std::vector<std::string>* GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return nullptr;
  if (const auto* a = v->as_string_array()) return a;
  wrong_type(path(), key, "an array of strings", *v);
}

}  // namespace tessera
