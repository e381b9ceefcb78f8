#include "convert/converter.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <numeric>
#include <regex>
#include <set>

#include "bundle/bundle_writer.h"
#include "convert/calibration.h"
#include "convert/gguf_transcode.h"
#include "convert/quantize.h"
#include "core/error.h"
#include "core/progress.h"
#include "graph/program.h"
#include "model/builders.h"
#include "model/open_model_source.h"
#include "sources/gguf.h"
#include "sources/stop_tokens.h"
#include "sources/weight_loader.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

namespace fs = std::filesystem;

std::pair<std::string, WeightFormat> parse_keep_rule(const std::string& rule) {
  const size_t eq = rule.rfind('=');
  if (eq == std::string::npos || eq == 0) fail("--keep", rule, "expected REGEX=FORMAT");
  const auto f = weight_format_from_name(rule.substr(eq + 1));
  if (!f) fail("--keep", rule, "unknown format '{}' (f32, f16, bf16, int8, lut4, lut3, lut2, q4_0)", rule.substr(eq + 1));
  if (is_blocked(*f)) fail("--keep", rule, "{} is what a quantized GGUF's tensors become by default; it cannot be asked for", rule.substr(eq + 1));
  try {
    std::regex re(rule.substr(0, eq));
  } catch (const std::regex_error& e) {
    fail("--keep", rule, "invalid regular expression: {}", e.what());
  }
  return {rule.substr(0, eq), *f};
}

namespace {

// The stored GGUF tensor behind `name` when rule 2 applies to it.
std::optional<GgufStoredTensor> transcodable(const ModelSource& src, const std::string& name) {
  std::optional<GgufStoredTensor> t = gguf_stored_tensor(src, name);
  if (t && t->view->shape.size() == 2 && can_transcode(t->view->dtype)) return t;
  return std::nullopt;
}

// The index of the first --keep rule matching `name` (rule 1).
std::optional<size_t> keep_rule(const std::string& name, const std::vector<std::regex>& keep) {
  for (size_t i = 0; i < keep.size(); ++i)
    if (std::regex_match(name, keep[i])) return i;
  return std::nullopt;
}

// `matrices`: the weights the programs read as Linear or Embed tables; every
// other tensor (norm vectors, convolution taps) stays f32.
WeightFormat choose_format(const std::string& name, const F32Tensor& t, const ConvertOptions& o,
                           const std::vector<std::regex>& keep, const std::set<std::string>& matrices) {
  if (const auto i = keep_rule(name, keep)) return o.keep[*i].second;
  if (t.shape.size() != 2 || !matrices.count(name)) return WeightFormat::F32;
  if (name == "model.embed_tokens.weight") return o.embeddings;
  if (name == "lm_head.weight") return o.lm_head;
  return o.weights;
}

// The GGUF's metadata (tokenizer, chat template, everything else) as a GGUF
// file of its own with no tensors: header + the original key/value bytes.
std::vector<uint8_t> gguf_metadata_only(const GgufFile& g) {
  const uint8_t* base = g.file()->data();
  std::vector<uint8_t> out(base, base + 8);  // magic + version
  const uint64_t tensors = 0, kv = g.metadata().size();
  out.insert(out.end(), reinterpret_cast<const uint8_t*>(&tensors), reinterpret_cast<const uint8_t*>(&tensors) + 8);
  out.insert(out.end(), reinterpret_cast<const uint8_t*>(&kv), reinterpret_cast<const uint8_t*>(&kv) + 8);
  out.insert(out.end(), base + 24, base + g.metadata_end());
  while (out.size() % g.alignment() != 0) out.push_back(0);
  return out;
}

}  // namespace

ConvertOptions default_convert_options(const std::string& source, int threads) {
  ConvertOptions o;
  o.threads = threads;
  const ModelSource src = open_model_source(source);
  if (src.format != SourceFormat::Gguf) return o;
  for (const TensorView& t : src.tensors)
    if (t.shape.size() == 2 && can_transcode(t.dtype)) o.keep_source_quant = true;
  // The few matrices such a file keeps unquantized (llama-quantize leaves
  // e.g. Gemma 4's per-layer projection in f16) become int8: palettes would
  // start a calibration run that holds the whole model in f32 (21 GB for a
  // Gemma 4 E2B file) for a handful of tensors.
  if (o.keep_source_quant) o.weights = WeightFormat::Int8;
  return o;
}

void convert_model(const std::string& source, const std::string& out, const ConvertOptions& o) {
  if (o.group_size < 1) fail("options", "--group-size", "must be at least 1, got {}", o.group_size);
  if (o.calibration_tokens < 1)
    fail("options", "--calibration-tokens", "must be at least 1, got {}", o.calibration_tokens);
  const ModelSource src = open_model_source(source);
  model::BuildOptions build;
  build.chunks = o.chunks;
  build.prefill_sizes = o.prefill_sizes;
  const ProgramSet programs = model::build_programs(src.spec, build);
  const std::vector<std::string> names = weights_used(programs);
  std::set<std::string> matrices;
  for (const Program& p : programs.programs)
    for (const Op& op : p.ops)
      if ((op.kind == OpKind::Linear || op.kind == OpKind::Embed) && !op.weights.empty())
        matrices.insert(op.weights[0]);
  std::vector<std::regex> keep;
  for (const auto& [re, f] : o.keep) keep.emplace_back(re);

  // Rule 2: the matrices transcoded as they are stored.
  std::map<std::string, GgufStoredTensor> transcoded;
  if (o.keep_source_quant)
    for (const std::string& name : names)
      if (!keep_rule(name, keep) && matrices.count(name))
        if (auto t = transcodable(src, name)) transcoded.emplace(name, std::move(*t));

  // Activation-aware palettes: input moments of every linear, when any
  // weight may become a LUT.
  bool any_lut = false;
  for (const auto& [re, f] : o.keep) any_lut = any_lut || is_lut(f);
  if (is_lut(o.weights) || is_lut(o.embeddings) || is_lut(o.lm_head))
    for (const std::string& name : names) any_lut = any_lut || !transcoded.count(name);
  std::optional<Calibration> cal;
  nlohmann::ordered_json cal_json = {{"text", "none"}};
  if (any_lut && o.calibration != "none") {
    CalibrationOptions co;
    co.max_tokens = o.calibration_tokens;
    co.threads = o.threads;
    if (o.calibration != "builtin") {
      std::ifstream f(o.calibration, std::ios::binary);
      if (!f) fail(o.calibration, "--calibration", "cannot read the calibration text file");
      std::ostringstream text;
      text << f.rdbuf();
      co.text = text.str();
      if (co.text.empty()) fail(o.calibration, "--calibration", "the calibration text file is empty");
    }
    if (o.progress) std::cerr << "calibrating on " << co.max_tokens << " tokens at most\n";
    cal = calibrate(src.path, co);
    cal_json = {{"text", o.calibration}, {"tokens", cal->ids.size()}, {"random_ids", cal->random_ids}};
  }

  BundleWriter writer(out, o.force);
  Manifest& m = writer.manifest;
  m.tessera_version = TESSERA_VERSION;
  m.source = {{"path", src.path}, {"format", src.format == SourceFormat::Gguf ? "gguf" : "hf"}};
  m.spec = src.spec;
  m.chunks = programs.num_chunks;
  m.prefill_sizes = programs.prefill_sizes;
  for (const Program& p : programs.programs) m.programs.push_back(program_to_json(p));
  nlohmann::ordered_json keep_json = nlohmann::ordered_json::array();
  for (const auto& [re, f] : o.keep) keep_json.push_back(re + "=" + std::string(weight_format_name(f)));
  m.quantization = {{"weights", weight_format_name(o.weights)}, {"embeddings", weight_format_name(o.embeddings)},
                    {"lm_head", weight_format_name(o.lm_head)},   {"group_size", o.group_size},
                    {"seed", o.seed},                              {"kmeans_iterations", o.kmeans_iterations},
                    {"palette_grid", "int8"},  // palettes snapped to q·m/127 (PalettizeOptions::int8_grid)
                    {"keep", keep_json},
                    {"source_blocks_kept", o.keep_source_quant},
                    {"calibration", cal_json}};

  // Weights, one tensor at a time (dequantize, quantize, append), so memory
  // stays at about one f32 tensor beyond the source mapping. (Calibration,
  // above, briefly held the whole model in f32 — 4 bytes per parameter —
  // and has released it by now.)
  std::optional<Progress> bar;
  if (o.progress) bar.emplace("converting " + fs::path(src.path).filename().string(), names.size());
  QuantizeOptions q;
  q.seed = o.seed;
  q.kmeans_iterations = o.kmeans_iterations;
  q.threads = o.threads;
  nlohmann::ordered_json errors = nlohmann::ordered_json::object();
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (const auto it = transcoded.find(name); it != transcoded.end()) {
      QuantizedWeight w;
      try {
        w = transcode_ggml_blocks(*it->second.view, it->second.row_source);
      } catch (const Error& e) {
        fail(src.path, it->second.view->name, "{}", e.problem());
      }
      writer.add_tensor(name, w.view());
      errors[name] = 0.0;  // the source's values, exactly
      if (bar) bar->update(i + 1);
      continue;
    }
    F32Weights one = load_f32_weights(src, {name});
    const F32Tensor& t = one.at(name);
    const WeightFormat f = choose_format(name, t, o, keep, matrices);
    q.group_size = o.group_size;
    q.input_moments = nullptr;
    if (cal) {
      const auto it = cal->input_moments.find(name);
      if (it != cal->input_moments.end()) q.input_moments = &it->second;
    }
    if (is_lut(f)) {
      if (t.shape.back() % 8 != 0)
        fail(src.path, name, "{} needs a multiple of 8 columns, this tensor has {}", weight_format_name(f),
             t.shape.back());
      while (t.shape[0] % q.group_size != 0) --q.group_size;
    }
    if (f == WeightFormat::Q4_0 && t.shape.back() % 32 != 0)
      fail(src.path, name, "q4_0 needs a multiple of 32 columns, this tensor has {}", t.shape.back());
    QuantizedWeight w;
    try {
      w = quantize_weight(t.data.data(), t.shape, f, q);
    } catch (const Error& e) {
      fail(src.path, name, "{}", e.problem());
    }
    writer.add_tensor(name, w.view());
    if (f != WeightFormat::F32) errors[name] = w.mse;
    if (bar) bar->update(i + 1);
  }
  bar.reset();
  m.quantization["mse"] = std::move(errors);

  // Tokenizer, chat template and stop tokens.
  std::optional<int32_t> eos;
  if (src.format == SourceFormat::Gguf) {
    writer.add_bytes("tokenizer.gguf", gguf_metadata_only(*src.gguf));
    m.tokenizer = {{"kind", "gguf"}, {"file", "tokenizer.gguf"}};
    eos = tok::Tokenizer::from_gguf(*src.gguf).eos_id();
  } else {
    nlohmann::ordered_json files = nlohmann::ordered_json::array();
    for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                          "special_tokens_map.json", "chat_template.jinja", "chat_template.json"}) {
      std::error_code ec;
      const fs::path p = fs::path(src.path) / f;
      if (!fs::is_regular_file(p, ec)) continue;
      writer.add_file(p.string(), f);
      files.push_back(f);
    }
    const bool has_tokenizer = fs::is_regular_file(fs::path(src.path) / "tokenizer.json");
    m.tokenizer = {{"kind", has_tokenizer ? "hf" : "none"}, {"files", files}};
    if (has_tokenizer) eos = tok::Tokenizer::from_file(src.path).eos_id();
  }
  m.stop_token_ids = stop_token_ids(src, eos);
  writer.commit();
}

}  // namespace tessera
