#include "bundle/manifest.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "core/model_spec_json.h"

namespace tessera {

namespace {

nlohmann::ordered_json section_json(const Section& s) { return {s.offset, s.bytes}; }

const nlohmann::json& field(const nlohmann::json& j, const char* key, const std::string& file,
                            const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) fail(file, where.empty() ? key : where + "." + key, "missing");
  return *it;
}

uint64_t u64(const nlohmann::json& v, const std::string& file, const std::string& where) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    fail(file, where, "must be a non-negative integer");
  return v.get<uint64_t>();
}

Section parse_section(const nlohmann::json& t, const char* key, const std::string& file, const std::string& where) {
  auto it = t.find(key);
  if (it == t.end()) return {};
  const std::string w = where + "." + key;
  if (!it->is_array() || it->size() != 2) fail(file, w, "must be [offset, bytes]");
  return {u64((*it)[0], file, w), u64((*it)[1], file, w)};
}

}  // namespace

nlohmann::ordered_json manifest_to_json(const Manifest& m) {
  nlohmann::ordered_json j;
  j["format"] = "tessera-bundle";
  j["schema_version"] = kBundleSchemaVersion;
  j["tessera_version"] = m.tessera_version;
  j["source"] = m.source;
  j["spec"] = nlohmann::ordered_json::parse(model_spec_to_json(m.spec).dump());
  j["build"] = {{"chunks", m.chunks}, {"prefill_sizes", m.prefill_sizes}};
  j["tokenizer"] = m.tokenizer;
  j["stop_token_ids"] = m.stop_token_ids;
  j["quantization"] = m.quantization;
  j["weights_file"] = m.weights_file;
  j["weights_bytes"] = m.weights_bytes;
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const TensorEntry& t : m.tensors) {
    nlohmann::ordered_json e;
    e["name"] = t.name;
    e["format"] = std::string(weight_format_name(t.format));
    e["shape"] = t.shape;
    if (t.group_size) e["group_size"] = t.group_size;
    if (is_blocked(t.format)) {
      e["block"] = {{"cols", t.block_cols}, {"scale_type", t.block_f32 ? "f32" : "f16"}, {"offsets", t.block_offsets}};
      if (t.block_super > 0) e["block"]["super_cols"] = t.block_super;
    }
    e["data"] = section_json(t.data);
    if (t.scales.bytes) e["scales"] = section_json(t.scales);
    if (t.palette.bytes) e["palette"] = section_json(t.palette);
    e["sha256"] = t.sha256;
    tensors.push_back(std::move(e));
  }
  j["tensors"] = std::move(tensors);
  j["programs"] = m.programs;
  return j;
}

WeightView entry_view(const TensorEntry& t, const uint8_t* base) {
  WeightView v;
  v.format = t.format;
  v.shape = t.shape;
  v.group_size = t.group_size;
  v.block_cols = t.block_cols;
  v.block_f32 = t.block_f32;
  v.block_offsets = t.block_offsets;
  v.block_super = t.block_super;
  if (base == nullptr) return v;
  v.data = base + t.data.offset;
  if (t.scales.bytes) {
    if (is_blocked(t.format)) v.block_params = base + t.scales.offset;
    else v.scales = reinterpret_cast<const float*>(base + t.scales.offset);
  }
  if (t.palette.bytes) v.palette = reinterpret_cast<const float*>(base + t.palette.offset);
  return v;
}

Manifest parse_manifest(const nlohmann::json& j, const std::string& file) {
  if (!j.is_object()) fail(file, "", "the manifest must be a JSON object");
  if (field(j, "format", file, "") != "tessera-bundle") fail(file, "format", "not a Tessera bundle manifest");
  const nlohmann::json& version = field(j, "schema_version", file, "");
  if (!version.is_number_integer() || version.get<int64_t>() != kBundleSchemaVersion)
    fail(file, "schema_version", "version {} is not supported (this build reads version {})", version.dump(),
         kBundleSchemaVersion);
  Manifest m;
  const nlohmann::json& tv = field(j, "tessera_version", file, "");
  if (!tv.is_string()) fail(file, "tessera_version", "must be a string");
  m.tessera_version = tv.get<std::string>();
  m.source = nlohmann::ordered_json::parse(field(j, "source", file, "").dump());
  m.spec = model_spec_from_json(field(j, "spec", file, ""), file);
  const nlohmann::json& build = field(j, "build", file, "");
  const nlohmann::json& chunks = field(build, "chunks", file, "build");
  if (!chunks.is_number_integer()) fail(file, "build.chunks", "must be an integer");
  m.chunks = chunks.get<int64_t>();
  const nlohmann::json& sizes = field(build, "prefill_sizes", file, "build");
  if (!sizes.is_array()) fail(file, "build.prefill_sizes", "must be an array");
  for (const auto& v : sizes) m.prefill_sizes.push_back(static_cast<int64_t>(u64(v, file, "build.prefill_sizes")));
  m.tokenizer = nlohmann::ordered_json::parse(field(j, "tokenizer", file, "").dump());
  const nlohmann::json& stop = field(j, "stop_token_ids", file, "");
  if (!stop.is_array()) fail(file, "stop_token_ids", "must be an array");
  for (const auto& v : stop) m.stop_token_ids.push_back(static_cast<int32_t>(u64(v, file, "stop_token_ids")));
  m.quantization = nlohmann::ordered_json::parse(field(j, "quantization", file, "").dump());
  const nlohmann::json& wf = field(j, "weights_file", file, "");
  if (!wf.is_string() || wf.get<std::string>().empty() || wf.get<std::string>().find('/') != std::string::npos ||
      wf.get<std::string>().find("..") != std::string::npos)
    fail(file, "weights_file", "must be a plain file name inside the bundle");
  m.weights_file = wf.get<std::string>();
  m.weights_bytes = u64(field(j, "weights_bytes", file, ""), file, "weights_bytes");

  const nlohmann::json& tensors = field(j, "tensors", file, "");
  if (!tensors.is_array()) fail(file, "tensors", "must be an array");
  std::vector<std::pair<uint64_t, uint64_t>> used;  // [begin, end) of every section
  for (size_t i = 0; i < tensors.size(); ++i) {
    const nlohmann::json& e = tensors[i];
    std::string where = fmt::format("tensors[{}]", i);
    if (!e.is_object()) fail(file, where, "must be an object");
    const nlohmann::json& name = field(e, "name", file, where);
    if (!name.is_string()) fail(file, where + ".name", "must be a string");
    TensorEntry t;
    t.name = name.get<std::string>();
    where = "tensor " + t.name;
    const nlohmann::json& format = field(e, "format", file, where);
    const auto f = format.is_string() ? weight_format_from_name(format.get<std::string>()) : std::nullopt;
    if (!f) fail(file, where + ".format", "unknown weight format {}", format.dump());
    t.format = *f;
    const nlohmann::json& shape = field(e, "shape", file, where);
    if (!shape.is_array() || shape.empty() || shape.size() > 2) fail(file, where + ".shape", "must be [cols] or [rows, cols]");
    for (const auto& d : shape) {
      const uint64_t v = u64(d, file, where + ".shape");
      if (v == 0 || v > (uint64_t{1} << 31)) fail(file, where + ".shape", "dimension {} out of range", v);
      t.shape.push_back(static_cast<int64_t>(v));
    }
    if (e.contains("group_size")) t.group_size = static_cast<int64_t>(u64(e["group_size"], file, where + ".group_size"));
    if (is_blocked(t.format)) {
      const nlohmann::json& block = field(e, "block", file, where);
      if (!block.is_object()) fail(file, where + ".block", "must be an object");
      t.block_cols = static_cast<int64_t>(u64(field(block, "cols", file, where + ".block"), file, where + ".block.cols"));
      const nlohmann::json& st = field(block, "scale_type", file, where + ".block");
      if (!st.is_string() || (st != "f16" && st != "f32")) fail(file, where + ".block.scale_type", "must be \"f16\" or \"f32\"");
      t.block_f32 = st == "f32";
      const nlohmann::json& off = field(block, "offsets", file, where + ".block");
      if (!off.is_boolean()) fail(file, where + ".block.offsets", "must be true or false");
      t.block_offsets = off.get<bool>();
      if (block.contains("super_cols"))
        t.block_super = static_cast<int64_t>(u64(block["super_cols"], file, where + ".block.super_cols"));
    }
    t.data = parse_section(e, "data", file, where);
    t.scales = parse_section(e, "scales", file, where);
    t.palette = parse_section(e, "palette", file, where);
    const nlohmann::json& sha = field(e, "sha256", file, where);
    if (!sha.is_string() || sha.get<std::string>().size() != 64) fail(file, where + ".sha256", "must be 64 hex digits");
    t.sha256 = sha.get<std::string>();

    // Sizes the format implies.
    const int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1, cols = t.shape.back();
    if (t.shape.size() == 1 && t.format != WeightFormat::F32)
      fail(file, where, "vectors must be f32, found {}", weight_format_name(t.format));
    if (is_lut(t.format)) {
      if (cols % 8 != 0) fail(file, where, "{} needs a multiple of 8 columns, found {}", weight_format_name(t.format), cols);
      if (t.group_size < 1 || rows % t.group_size != 0)
        fail(file, where + ".group_size", "{} does not divide the {} rows", t.group_size, rows);
    }
    if (t.format == WeightFormat::Q4_0 && cols % 32 != 0)
      fail(file, where, "q4_0 needs a multiple of 32 columns, found {}", cols);
    if (is_blocked(t.format) && (t.block_cols != 16 && t.block_cols != 32))
      fail(file, where + ".block.cols", "must be 16 or 32, found {}", t.block_cols);
    if (is_blocked(t.format) && cols % t.block_cols != 0)
      fail(file, where, "{} columns are not a whole number of {}-column blocks", cols, t.block_cols);
    if (t.format == WeightFormat::Blk4 && t.block_cols != 32) fail(file, where + ".block.cols", "blk4 blocks are 32 columns");
    if (t.block_super > 0) {
      if (t.block_super % t.block_cols != 0 || cols % t.block_super != 0 || t.block_super / t.block_cols > 64)
        fail(file, where + ".block.super_cols", "{} columns per super-block do not fit {}-column blocks in {} columns",
             t.block_super, t.block_cols, cols);
      if (t.block_f32) fail(file, where + ".block.scale_type", "super-block multipliers are f16");
    }
    const WeightView shape_of = entry_view(t, nullptr);
    const uint64_t want_data = weight_data_bytes(t.format, rows, cols);
    const uint64_t want_scales = scales_section_bytes(shape_of);
    const uint64_t want_palette = palette_section_bytes(shape_of);
    for (auto [sec, want, label] : {std::tuple{t.data, want_data, "data"}, std::tuple{t.scales, want_scales, "scales"},
                                    std::tuple{t.palette, want_palette, "palette"}}) {
      if (sec.bytes != want)
        fail(file, where + "." + label, "{} bytes, but a {} [{}] tensor needs {}", sec.bytes,
             weight_format_name(t.format), fmt::join(t.shape, ", "), want);
      if (!want) continue;
      if (sec.offset % kBundleAlignment != 0)
        fail(file, where + "." + label, "offset {} is not {}-byte aligned", sec.offset, kBundleAlignment);
      if (sec.offset > m.weights_bytes || sec.bytes > m.weights_bytes - sec.offset)
        fail(file, where + "." + label, "bytes [{}, {}) lie outside the {}-byte weights file", sec.offset,
             sec.offset + sec.bytes, m.weights_bytes);
      used.emplace_back(sec.offset, sec.offset + sec.bytes);
    }
    m.tensors.push_back(std::move(t));
  }
  std::sort(used.begin(), used.end());
  for (size_t i = 1; i < used.size(); ++i)
    if (used[i].first < used[i - 1].second) fail(file, "tensors", "two sections overlap at byte {}", used[i].first);
  const nlohmann::json& programs = field(j, "programs", file, "");
  if (!programs.is_array()) fail(file, "programs", "must be an array");
  m.programs = nlohmann::ordered_json::parse(programs.dump());
  return m;
}

}  // namespace tessera
