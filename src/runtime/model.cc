#include "runtime/model.h"

#include <algorithm>
#include <filesystem>
#include <set>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "bundle/bundle.h"
#include "bundle/bundle_summary.h"
#include "core/cpu_cores.h"
#include "core/error.h"
#include "core/model_spec_json.h"
#include "core/progress.h"
#include "core/sha256.h"
#include "cpu/cpu_backend.h"
#include "model/architectures.h"
#include "model/open_model_source.h"
#include "sources/gguf.h"
#include "sources/stop_tokens.h"

namespace tessera {

namespace fs = std::filesystem;

namespace {
// The sections of the tensors the programs read only through an embedding
// lookup (an untied embedding table: a row a token), which the file keeps
// mapped rather than read (MappedFile::open, `lazy`).
std::vector<std::pair<uint64_t, uint64_t>> lookup_only_sections(const Manifest& m) {
  std::set<std::string> looked_up, read_otherwise;
  for (const auto& prog : m.programs) {
    const auto ops = prog.is_object() ? prog.find("ops") : prog.end();
    if (ops == prog.end() || !ops->is_array()) continue;
    for (const auto& op : *ops) {
      if (!op.is_object() || !op.contains("weights") || !op["weights"].is_array()) continue;
      const bool embed = op.value("op", std::string()) == op_kind_name(OpKind::Embed);
      for (const auto& w : op["weights"])
        if (w.is_string()) (embed ? looked_up : read_otherwise).insert(w.get<std::string>());
    }
  }
  std::vector<std::pair<uint64_t, uint64_t>> lazy;
  for (const TensorEntry& t : m.tensors)
    if (looked_up.count(t.name) && !read_otherwise.count(t.name))
      for (const Section& s : {t.data, t.scales}) lazy.emplace_back(s.offset, s.bytes);
  return lazy;
}


// Building a tokenizer leaves its transient memory (the metadata's strings,
// about 30 MiB for a 150,000-piece vocabulary) free in the heap, where
// glibc keeps it resident; handed back before the weights arrive, it is
// not part of the model's peak RSS.
void give_back_free_heap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

// The model's own chat template (next to `path`), else the built-in one for its architecture.
std::optional<ChatTemplate> load_chat_template(const std::string& path, const ModelSpec& spec) {
  if (std::optional<std::string> tpl = find_chat_template(path))
    return ChatTemplate::parse(*tpl, path + ": chat template");
  if (const char* builtin = model::architecture_of(spec).builtin_chat_template)
    return ChatTemplate::parse(builtin, "built-in " + spec.arch + " chat template");
  return std::nullopt;
}

}  // namespace

void Model::finish_load(const LoadOptions& options, int64_t default_chunks, std::vector<int64_t> default_prefill,
                        bool argmax) {
  model::BuildOptions build;
  build.argmax = argmax;
  build.chunks = options.chunks > 0 ? options.chunks : default_chunks;
  if (!options.prefill_sizes.empty()) {
    build.prefill_sizes = options.prefill_sizes;
  } else if (!default_prefill.empty()) {
    build.prefill_sizes = std::move(default_prefill);
  }
  programs_ = model::build_programs(spec_, build);
  kv_type_ = options.kv_type;
  arithmetic_ = options.arithmetic;
  // The backend: the CPU's, at the instruction set asked for or the best this CPU has.
  CpuBackendOptions cpu;
  cpu.isa = options.isa ? *options.isa : active_isa();
  cpu.row_block = options.row_block;
  cpu.arithmetic = options.arithmetic;
  backend_ = std::make_unique<CpuBackend>(cpu, *pool_);  // throws if this CPU lacks cpu.isa
  executables_.reserve(programs_.programs.size());
  for (const Program& p : programs_.programs) executables_.push_back(backend_->bind(p, weights_));

  // RoPE tables of the global and (Gemma 3) local layers.
  int64_t global_layer = -1, local_layer = -1;
  for (int64_t l = 0; l < spec_.num_layers; ++l) {
    const bool local = spec_.layer_types[l] == LayerKind::SlidingAttention && spec_.rope_local;
    (local ? local_layer : global_layer) = l;
  }
  if (global_layer >= 0) rope_.emplace(spec_.rope, model::rotary_dim(spec_, global_layer), spec_.context_length);
  if (local_layer >= 0)
    rope_local_.emplace(*spec_.rope_local, model::rotary_dim(spec_, local_layer), spec_.context_length);
  if (!rope_) rope_ = rope_local_;
}

std::unique_ptr<Model> Model::load(const std::string& name_or_path, const LoadOptions& options) {
  auto m = std::unique_ptr<Model>(new Model());
  m->pool_ = std::make_unique<ThreadPool>(resolve_thread_count(options.threads));
  std::error_code ec;

  if (Bundle::is_bundle(name_or_path)) {
    // The manifest, then the tokenizer, then the weights. Building a
    // tokenizer takes transient memory (Gemma 3's 262,144 pieces: about 29
    // MiB above the 50 it keeps) that is given back when it is built; read
    // into huge pages, all of weights.bin is resident as soon as it is
    // opened, so loading the tokenizer after it stacked the two (Gemma 3
    // lut4: peak RSS 301 MiB, over the bundle + KV + 64 MiB bound of 292;
    // docs/BENCHMARKING.md, "Memory").
    Manifest man = Bundle::read_manifest(name_or_path);
    m->spec_ = man.spec;
    const std::string kind = man.tokenizer.value("kind", "none");
    if (kind == "gguf" || kind == "hf") {
      const std::string path = bundle_tokenizer_path(man, name_or_path);  // the GGUF, or the directory
      m->tokenizer_.emplace(tok::Tokenizer::from_file(path));
      m->chat_template_ = load_chat_template(path, m->spec_);
      give_back_free_heap();
    }
    m->stop_ids_ = man.stop_token_ids;
    const auto lazy = lookup_only_sections(man);
    auto bundle = std::make_shared<Bundle>(
        Bundle::open(name_or_path, std::move(man), options.verify, options.weights_memory, lazy));
    m->weights_memory_ = bundle->file()->memory();
    const Manifest& bm = bundle->manifest();
    m->from_bundle_ = true;
    m->identity_ = sha256_file_hex((std::filesystem::path(name_or_path) / "manifest.json").string());
    m->path_ = name_or_path;
    m->weights_.origin = name_or_path;
    for (const auto& [name, view] : bundle->weights()) m->weights_.put_view(name, view);
    m->weights_.keep_alive.push_back(bundle);
    // Bundles written before the Argmax op existed record programs without
    // it; they run as recorded (greedy decoding then scans the logits).
    bool argmax = false;
    for (const auto& prog : bm.programs) {
      const auto ops = prog.is_object() ? prog.find("ops") : prog.end();
      if (ops == prog.end() || !ops->is_array()) continue;
      for (const auto& op : *ops)
        argmax |= op.is_object() && op.value("op", std::string()) == op_kind_name(OpKind::Argmax);
    }
    m->finish_load(options, bm.chunks, bm.prefill_sizes, argmax);
    // Built with the bundle's own options, the programs must be the ones the
    // converter recorded: a mismatch means another Tessera version built them.
    if (options.chunks <= 0 && options.prefill_sizes.empty()) {
      nlohmann::ordered_json rebuilt = nlohmann::ordered_json::array();
      for (const Program& p : m->programs_.programs) rebuilt.push_back(program_to_json(p));
      if (nlohmann::json::parse(rebuilt.dump()) != nlohmann::json::parse(bm.programs.dump()))
        fail(name_or_path, "programs", "the manifest's programs differ from what this Tessera ({}) builds from its spec "
             "(bundle written by Tessera {}); convert the model again", TESSERA_VERSION, bm.tessera_version);
    }
    return m;
  }

  ModelSource src = open_model_source(name_or_path);
  m->path_ = src.path;
  m->spec_ = src.spec;
  {
    const std::string spec = model_spec_to_json(src.spec).dump();
    m->identity_ = sha256_hex_of({std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(spec.data()), spec.size()),
                                  std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(src.path.data()),
                                                           src.path.size())});
  }
  // Weights: only what the programs read, as f32.
  model::BuildOptions probe;
  probe.chunks = 1;
  const std::vector<std::string> names = weights_used(model::build_programs(m->spec_, probe));
  std::optional<Progress> bar;
  if (options.progress) bar.emplace("loading weights", names.size());
  m->weights_.origin = src.path;
  for (auto& [name, t] : load_f32_weights(src, names, [&](size_t done, size_t) {
         if (bar) bar->update(done);
       }))
    m->weights_.put(name, std::move(t));
  bar.reset();
  m->finish_load(options, 1, {});

  if (src.format == SourceFormat::Gguf) {
    m->tokenizer_.emplace(tok::Tokenizer::from_gguf(*src.gguf));
  } else if (fs::is_regular_file(fs::path(src.path) / "tokenizer.json", ec)) {
    m->tokenizer_.emplace(tok::Tokenizer::from_file(src.path));
  }
  m->chat_template_ = load_chat_template(src.path, m->spec_);
  m->stop_ids_ = tessera::stop_token_ids(src, m->tokenizer_ ? m->tokenizer_->eos_id() : std::nullopt);
  return m;
}

const tok::Tokenizer& Model::require_tokenizer() const {
  if (!tokenizer_) fail(path_, "tokenizer", "the model has no tokenizer (no tokenizer.json); pass token ids instead");
  return *tokenizer_;
}

}  // namespace tessera
