#include "sources/safetensors.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <unordered_set>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace tessera {
namespace {

using nlohmann::json;

// Tensor names come from the file; keep them printable and short in messages.
std::string printable(std::string_view s) {
  constexpr size_t kMax = 200;
  std::string out;
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMax) out += "...";
  return out;
}

std::string tensor_subject(std::string_view name) {
  return fmt::format("tensor '{}'", printable(name));
}

// Safetensors dtype names are exact upper-case strings; only the ones Tessera can
// compute with are accepted (no F8_*, U16/U32/U64, complex or sub-byte formats).
std::optional<DType> safetensors_dtype(std::string_view name) {
  static constexpr std::pair<std::string_view, DType> kTable[] = {
      {"F32", DType::F32}, {"F16", DType::F16}, {"BF16", DType::BF16}, {"F64", DType::F64},
      {"I8", DType::I8},   {"U8", DType::U8},   {"I16", DType::I16},   {"I32", DType::I32},
      {"I64", DType::I64}, {"BOOL", DType::BOOL},
  };
  for (const auto& [n, t] : kTable)
    if (n == name) return t;
  return std::nullopt;
}

// One tensor entry while its JSON object is being read.
struct PendingEntry {
  std::string name;
  std::optional<std::string> dtype;
  std::vector<uint64_t> shape;
  bool has_shape = false;
  std::vector<uint64_t> offsets;
  bool has_offsets = false;
  std::set<std::string> keys;  // for duplicate detection inside the entry
};

struct RawTensor {
  std::string name;
  DType dtype;
  std::vector<uint64_t> shape;
  uint64_t begin, end;
};

// Streaming handler for nlohmann::json::sax_parse. It accepts exactly
//   { name: {dtype: str, shape: [uint...], data_offsets: [uint, uint], other: any},
//     "__metadata__": {str: str} | null }
// and throws Error for anything else, so no DOM is ever built for the header.
class HeaderHandler {
 public:
  HeaderHandler(const std::string& path, uint64_t data_size) : path_(path), data_size_(data_size) {}

  std::vector<RawTensor> tensors;
  std::map<std::string, std::string> metadata;

  bool done() const { return state_ == State::Done; }

  bool null() { return value("null"); }
  bool boolean(bool) { return value("a boolean"); }
  bool number_integer(json::number_integer_t v) {
    if (state_ == State::Shape || state_ == State::Offsets) bad_number(fmt::format("{}", v));
    return value("a number");
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (state_ == State::Shape) {
      if (entry_.shape.size() >= kSafetensorsMaxRank)
        fail(path_, tensor_subject(entry_.name), "shape has more than {} dimensions",
             kSafetensorsMaxRank);
      entry_.shape.push_back(v);
      return true;
    }
    if (state_ == State::Offsets) {
      if (entry_.offsets.size() >= 2)
        fail(path_, tensor_subject(entry_.name), "data_offsets must have exactly 2 entries");
      entry_.offsets.push_back(v);
      return true;
    }
    return value("a number");
  }
  bool number_float(json::number_float_t, const std::string& text) {
    if (state_ == State::Shape || state_ == State::Offsets) bad_number(text);
    return value("a number");
  }
  bool string(std::string& s) {
    if (state_ == State::EntryValue && field_ == Field::Dtype) {
      entry_.dtype = s;
      state_ = State::Entry;
      return true;
    }
    if (state_ == State::MetadataValue) {
      metadata.emplace(std::move(metadata_key_), std::move(s));
      state_ = State::Metadata;
      return true;
    }
    return value("a string");
  }
  bool binary(json::binary_t&) { return value("binary data"); }

  bool start_object(std::size_t) {
    switch (state_) {
      case State::Start: state_ = State::Top; return true;
      case State::TopValue: state_ = in_metadata_key_ ? State::Metadata : State::Entry; return true;
      case State::EntryValue:
        if (field_ != Field::Other) return value("an object");
        state_ = State::Skip;
        skip_depth_ = 1;
        return true;
      case State::Skip: ++skip_depth_; return true;
      default: return value("an object");
    }
  }

  bool end_object() {
    switch (state_) {
      case State::Entry: finish_entry(); state_ = State::Top; return true;
      case State::Metadata: state_ = State::Top; return true;
      case State::Top: state_ = State::Done; return true;
      case State::Skip: return end_skip();
      default: unexpected("end of an object");
    }
  }

  bool start_array(std::size_t) {
    switch (state_) {
      case State::EntryValue:
        switch (field_) {
          case Field::Shape: state_ = State::Shape; entry_.has_shape = true; return true;
          case Field::Offsets: state_ = State::Offsets; entry_.has_offsets = true; return true;
          case Field::Other: state_ = State::Skip; skip_depth_ = 1; return true;
          case Field::Dtype: return value("an array");
        }
        return value("an array");
      case State::Skip: ++skip_depth_; return true;
      default: return value("an array");
    }
  }

  bool end_array() {
    switch (state_) {
      case State::Shape: state_ = State::Entry; return true;
      case State::Offsets:
        if (entry_.offsets.size() != 2)
          fail(path_, tensor_subject(entry_.name), "data_offsets must have exactly 2 entries");
        state_ = State::Entry;
        return true;
      case State::Skip: return end_skip();
      default: unexpected("end of an array");
    }
  }

  bool key(std::string& k) {
    switch (state_) {
      case State::Top:
        if (!top_keys_.insert(k).second)
          fail(path_, k == "__metadata__" ? "__metadata__" : tensor_subject(k),
               "key appears twice in the header");
        in_metadata_key_ = (k == "__metadata__");
        if (!in_metadata_key_) {
          entry_ = PendingEntry{};
          entry_.name = k;
        }
        state_ = State::TopValue;
        return true;
      case State::Entry:
        if (!entry_.keys.insert(k).second)
          fail(path_, tensor_subject(entry_.name), "key '{}' appears twice", printable(k));
        field_ = k == "dtype"          ? Field::Dtype
                 : k == "shape"        ? Field::Shape
                 : k == "data_offsets" ? Field::Offsets
                                       : Field::Other;
        state_ = State::EntryValue;
        return true;
      case State::Metadata:
        if (metadata.count(k))
          fail(path_, "__metadata__", "key '{}' appears twice", printable(k));
        metadata_key_ = k;
        state_ = State::MetadataValue;
        return true;
      case State::Skip: return true;
      default: unexpected("a key");
    }
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    fail(path_, "header", "invalid JSON near byte {}: {}", position, e.what());
  }

 private:
  enum class State { Start, Top, TopValue, Entry, EntryValue, Shape, Offsets, Metadata, MetadataValue, Skip, Done };
  enum class Field { Dtype, Shape, Offsets, Other };

  // A value arrived that is not the start of a structure this state expects:
  // a scalar anywhere, or an object / array where the schema has none.
  bool value(const char* what) {
    // Built once, before the switch (see fail() in core/error.h).
    const std::string subject = tensor_subject(entry_.name);
    switch (state_) {
      case State::Start: fail(path_, "header", "must be a JSON object, got {}", what);
      case State::TopValue:
        if (in_metadata_key_ && std::string_view(what) == "null") {
          state_ = State::Top;
          return true;
        }
        if (in_metadata_key_) fail(path_, "__metadata__", "must be an object of strings, got {}", what);
        fail(path_, subject, "entry must be an object, got {}", what);
      case State::EntryValue:
        switch (field_) {
          case Field::Dtype: fail(path_, subject, "dtype must be a string, got {}", what);
          case Field::Shape: fail(path_, subject, "shape must be an array, got {}", what);
          case Field::Offsets:
            fail(path_, subject, "data_offsets must be an array, got {}", what);
          case Field::Other: state_ = State::Entry; return true;  // a scalar under an unknown key
        }
        return true;
      case State::Shape:
        fail(path_, subject, "shape entries must be non-negative integers, got {}", what);
      case State::Offsets:
        fail(path_, subject, "data_offsets entries must be non-negative integers, got {}",
             what);
      case State::MetadataValue: {
        const std::string key = printable(metadata_key_);
        fail(path_, "__metadata__", "value of '{}' must be a string, got {}", key, what);
      }
      case State::Skip: return true;
      default: unexpected(what);
    }
  }

  [[noreturn]] void bad_number(const std::string& text) {
    fail(path_, tensor_subject(entry_.name), "{} must hold non-negative integers below 2^64, got {}",
         state_ == State::Shape ? "shape" : "data_offsets", printable(text));
  }

  // Unreachable for input the JSON grammar accepts; kept so that every path throws.
  [[noreturn]] void unexpected(const char* what) { fail(path_, "header", "unexpected {}", what); }

  bool end_skip() {
    if (--skip_depth_ == 0) state_ = State::Entry;
    return true;
  }

  // Checks one complete entry: fields present, dtype known, and
  // product(shape) × sizeof(dtype) == end - begin with begin <= end <= data size.
  void finish_entry() {
    const std::string subject = tensor_subject(entry_.name);
    if (!entry_.dtype) fail(path_, subject, "missing 'dtype'");
    if (!entry_.has_shape) fail(path_, subject, "missing 'shape'");
    if (!entry_.has_offsets) fail(path_, subject, "missing 'data_offsets'");
    const std::optional<DType> dtype = safetensors_dtype(*entry_.dtype);
    if (!dtype) fail(path_, subject, "unsupported dtype '{}'", printable(*entry_.dtype));
    uint64_t elems = 1;
    for (uint64_t d : entry_.shape)
      if (__builtin_mul_overflow(elems, d, &elems))
        fail(path_, subject, "shape [{}] has more than 2^64 elements", fmt::join(entry_.shape, ", "));
    const std::optional<uint64_t> nbytes = dtype_bytes(*dtype, elems);
    if (!nbytes)
      fail(path_, subject, "shape [{}] of {} does not fit in 2^64 bytes", fmt::join(entry_.shape, ", "),
           dtype_name(*dtype));
    const uint64_t begin = entry_.offsets[0], end = entry_.offsets[1];
    if (begin > end) fail(path_, subject, "data_offsets [{}, {}] end before they begin", begin, end);
    if (end > data_size_)
      fail(path_, subject, "data_offsets [{}, {}] run past the data section of {} bytes", begin, end,
           data_size_);
    if (end - begin != *nbytes)
      fail(path_, subject, "data_offsets [{}, {}] hold {} bytes but shape [{}] of {} needs {}", begin, end,
           end - begin, fmt::join(entry_.shape, ", "), dtype_name(*dtype), *nbytes);
    tensors.push_back(RawTensor{std::move(entry_.name), *dtype, std::move(entry_.shape), begin, end});
    entry_ = PendingEntry{};
  }

  const std::string& path_;
  const uint64_t data_size_;
  State state_ = State::Start;
  Field field_ = Field::Other;
  bool in_metadata_key_ = false;
  size_t skip_depth_ = 0;
  PendingEntry entry_;
  std::string metadata_key_;
  std::unordered_set<std::string> top_keys_;
};

void build_index(const std::vector<TensorView>& tensors, std::unordered_map<std::string, size_t>& index) {
  index.clear();
  index.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) index.emplace(tensors[i].name, i);
}

const TensorView* lookup(const std::vector<TensorView>& tensors,
                         const std::unordered_map<std::string, size_t>& index, std::string_view name) {
  const auto it = index.find(std::string(name));
  return it == index.end() ? nullptr : &tensors[it->second];
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) { return parse(MappedFile::open(path)); }

SafetensorsFile SafetensorsFile::parse(std::shared_ptr<const MappedFile> file) {
  if (!file) fail("", "", "SafetensorsFile::parse called without a file");
  const std::string& path = file->path();
  const uint64_t size = file->size();
  if (size < 8) fail(path, "header", "file has {} bytes, too short for the 8-byte header length", size);
  const uint8_t* p = file->data();
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | p[i];
  if (header_len > kSafetensorsMaxHeaderBytes)
    fail(path, "header", "length {} exceeds the limit of {} bytes", header_len, kSafetensorsMaxHeaderBytes);
  if (header_len > size - 8)
    fail(path, "header", "length {} runs past the end of the {}-byte file", header_len, size);

  const uint64_t data_offset = 8 + header_len;
  HeaderHandler handler(path, size - data_offset);
  const char* json_begin = reinterpret_cast<const char*>(p + 8);
  const bool ok = json::sax_parse(json_begin, json_begin + header_len, &handler,
                                  nlohmann::detail::input_format_t::json, /*strict=*/true);
  if (!ok || !handler.done()) fail(path, "header", "incomplete JSON object");

  // Ranges must not share bytes. Sorted by begin, a non-empty range overlaps an
  // earlier one exactly when it starts before the furthest end seen so far.
  std::vector<const RawTensor*> by_offset;
  by_offset.reserve(handler.tensors.size());
  for (const RawTensor& t : handler.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const RawTensor* a, const RawTensor* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  const RawTensor* furthest = nullptr;
  for (const RawTensor* t : by_offset) {
    if (t->begin == t->end) continue;
    if (furthest != nullptr && t->begin < furthest->end)
      fail(path, tensor_subject(t->name), "data_offsets [{}, {}] overlap those of tensor '{}' [{}, {}]",
           t->begin, t->end, printable(furthest->name), furthest->begin, furthest->end);
    if (furthest == nullptr || t->end > furthest->end) furthest = t;
  }

  SafetensorsFile out;
  out.file_ = file;
  out.data_offset_ = data_offset;
  out.metadata_ = std::move(handler.metadata);
  out.tensors_.reserve(handler.tensors.size());
  for (RawTensor& t : handler.tensors) {
    TensorView v;
    v.name = std::move(t.name);
    v.dtype = t.dtype;
    v.shape = std::move(t.shape);
    v.data = p + data_offset + t.begin;
    v.nbytes = t.end - t.begin;
    v.file = file;
    out.tensors_.push_back(std::move(v));
  }
  std::sort(out.tensors_.begin(), out.tensors_.end(),
            [](const TensorView& a, const TensorView& b) { return a.name < b.name; });
  build_index(out.tensors_, out.index_);
  return out;
}

const TensorView* SafetensorsFile::find(std::string_view name) const { return lookup(tensors_, index_, name); }

namespace {

// A shard name from the index must name a file directly inside the checkpoint
// directory: no separators, no parent references, nothing empty.
void check_shard_name(const std::string& index_path, const std::string& tensor, const std::string& shard) {
  const bool bad = shard.empty() || shard == "." || shard.find('/') != std::string::npos ||
                   shard.find('\\') != std::string::npos || shard.find("..") != std::string::npos ||
                   shard.find('\0') != std::string::npos;
  if (bad)
    fail(index_path, fmt::format("weight_map '{}'", printable(tensor)),
         "shard '{}' is not a plain file name inside the checkpoint directory", printable(shard));
}

// Parses the index JSON, rejecting duplicate keys at any depth (nlohmann would
// otherwise keep the last one silently, hiding a tensor mapped to two shards).
json parse_index(const MappedFile& file) {
  const std::string& path = file.path();
  std::vector<std::set<std::string>> seen;  // one key set per open object
  std::string duplicate;
  auto callback = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: seen.emplace_back(); break;
      case json::parse_event_t::object_end:
        if (!seen.empty()) seen.pop_back();
        break;
      case json::parse_event_t::key:
        if (!seen.empty() && !seen.back().insert(parsed.get<std::string>()).second && duplicate.empty())
          duplicate = parsed.get<std::string>();
        break;
      default: break;
    }
    return true;
  };
  if (file.size() > kSafetensorsMaxHeaderBytes)
    fail(path, "", "index file of {} bytes exceeds the limit of {} bytes", file.size(), kSafetensorsMaxHeaderBytes);
  const char* begin = reinterpret_cast<const char*>(file.data());
  json j;
  try {
    j = json::parse(begin, begin + file.size(), callback);
  } catch (const json::exception& e) {
    fail(path, "", "invalid JSON: {}", e.what());
  }
  if (!duplicate.empty()) fail(path, fmt::format("key '{}'", printable(duplicate)), "appears twice");
  return j;
}

}  // namespace

SafetensorsCheckpoint SafetensorsCheckpoint::open(const std::string& directory) {
  namespace fs = std::filesystem;
  SafetensorsCheckpoint out;
  out.directory_ = directory;
  const fs::path dir(directory);
  const fs::path index_path = dir / "model.safetensors.index.json";
  const fs::path single_path = dir / "model.safetensors";
  std::error_code ec;

  // transformers looks for the single file first and falls back to the index.
  if (fs::exists(single_path, ec)) {
    out.shards_.push_back(SafetensorsFile::open(single_path.string()));
    out.tensors_ = out.shards_.front().tensors();
    build_index(out.tensors_, out.index_);
    return out;
  }

  if (!fs::exists(index_path, ec))
    fail(directory, "", "neither model.safetensors nor model.safetensors.index.json found");
  out.sharded_ = true;
  const std::string ipath = index_path.string();
  const json index = parse_index(*MappedFile::open(ipath));
  if (!index.is_object()) fail(ipath, "", "must be a JSON object");
  const auto wm = index.find("weight_map");
  if (wm == index.end()) fail(ipath, "weight_map", "missing");
  if (!wm->is_object()) fail(ipath, "weight_map", "must be an object of tensor name to shard file");
  if (const auto md = index.find("metadata"); md != index.end() && !md->is_null()) {
    if (!md->is_object()) fail(ipath, "metadata", "must be an object");
    for (const auto& [k, v] : md->items()) out.index_metadata_[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }

  // Shard file name -> tensors the index places in it.
  std::map<std::string, std::vector<std::string>> expected;
  for (const auto& [tensor, shard] : wm->items()) {
    if (!shard.is_string())
      fail(ipath, fmt::format("weight_map '{}'", printable(tensor)), "shard must be a string");
    const std::string name = shard.get<std::string>();
    check_shard_name(ipath, tensor, name);
    expected[name].push_back(tensor);
  }
  if (expected.empty()) fail(ipath, "weight_map", "is empty");

  std::unordered_map<std::string, std::string> owner;  // tensor -> shard it was found in
  for (const auto& [shard_name, names] : expected) {
    SafetensorsFile shard = SafetensorsFile::open((dir / shard_name).string());
    for (const std::string& n : names)
      if (shard.find(n) == nullptr)
        fail(ipath, tensor_subject(n), "weight_map places it in '{}' but that shard does not contain it",
             printable(shard_name));
    for (const TensorView& t : shard.tensors()) {
      const auto [it, inserted] = owner.emplace(t.name, shard_name);
      if (!inserted)
        fail(ipath, tensor_subject(t.name), "present in two shards: '{}' and '{}'", printable(it->second),
             printable(shard_name));
      out.tensors_.push_back(t);
    }
    out.shards_.push_back(std::move(shard));
  }
  std::sort(out.tensors_.begin(), out.tensors_.end(),
            [](const TensorView& a, const TensorView& b) { return a.name < b.name; });
  build_index(out.tensors_, out.index_);
  return out;
}

const TensorView* SafetensorsCheckpoint::find(std::string_view name) const {
  return lookup(tensors_, index_, name);
}

}  // namespace tessera
