#include "runtime/model.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/progress.h"
#include "sources/hf_config.h"
#include "sources/gguf.h"
#include "sources/model_source.h"
#include "tokenizer/builtin_chat_templates.h"

namespace tessera {

namespace fs = std::filesystem;

std::unique_ptr<Model> Model::load(const std::string& name_or_path, const LoadOptions& options) {
  auto m = std::unique_ptr<Model>(new Model());
  ModelSource src = open_model_source(name_or_path);
  m->path_ = src.path;
  m->spec_ = src.spec;
  m->programs_ = model::build_programs(m->spec_, options.build);
  m->pool_ = std::make_unique<ThreadPool>(options.threads);

  // Weights: only what the programs read, as f32.
  const std::vector<std::string> names = weights_used(m->programs_);
  std::optional<Progress> bar;
  if (options.progress) bar.emplace("loading weights", names.size());
  m->weights_ = load_f32_weights(src, names, [&](size_t done, size_t) {
    if (bar) bar->update(done);
  });
  bar.reset();
  m->bound_.reserve(m->programs_.programs.size());
  for (const Program& p : m->programs_.programs) m->bound_.emplace_back(p, m->weights_);

  // RoPE tables of the global and (Gemma 3) local layers.
  const ModelSpec& s = m->spec_;
  int64_t global_layer = -1, local_layer = -1;
  for (int64_t l = 0; l < s.num_layers; ++l) {
    const bool local = s.layer_types[l] == LayerKind::SlidingAttention && s.rope_local;
    (local ? local_layer : global_layer) = l;
  }
  if (global_layer >= 0) m->rope_.emplace(s.rope, model::rotary_dim(s, global_layer), s.context_length);
  if (local_layer >= 0) m->rope_local_.emplace(*s.rope_local, model::rotary_dim(s, local_layer), s.context_length);
  if (!m->rope_) m->rope_ = m->rope_local_;

  // Tokenizer and chat template.
  std::error_code ec;
  if (src.format == SourceFormat::Gguf) {
    m->tokenizer_.emplace(tok::Tokenizer::from_gguf(*src.gguf));
  } else if (fs::is_regular_file(fs::path(src.path) / "tokenizer.json", ec)) {
    m->tokenizer_.emplace(tok::Tokenizer::from_file(src.path));
  }
  if (std::optional<std::string> tpl = find_chat_template(src.path)) {
    m->chat_template_.emplace(ChatTemplate::parse(*tpl, src.path + ": chat template"));
  } else if (std::optional<std::string> builtin = builtin_chat_template(s.arch)) {
    m->chat_template_.emplace(ChatTemplate::parse(*builtin, std::string("built-in ") + architecture_name(s.arch) +
                                                                " chat template"));
  }

  // Stop tokens: generation_config.json's eos when present (what transformers'
  // generate() stops on), else the spec's, plus the tokenizer's eos.
  std::vector<int64_t> stop = s.eos_token_ids;
  if (src.format == SourceFormat::HfDirectory)
    if (auto gen = hf_generation_eos_token_ids(src.path)) stop = *gen;
  if (m->tokenizer_ && m->tokenizer_->eos_id()) stop.push_back(*m->tokenizer_->eos_id());
  for (int64_t id : stop)
    if (id >= 0 && id < s.vocab_size &&
        std::find(m->stop_ids_.begin(), m->stop_ids_.end(), static_cast<int32_t>(id)) == m->stop_ids_.end())
      m->stop_ids_.push_back(static_cast<int32_t>(id));
  return m;
}

const tok::Tokenizer& Model::require_tokenizer() const {
  if (!tokenizer_) fail(path_, "tokenizer", "the model has no tokenizer (no tokenizer.json); pass token ids instead");
  return *tokenizer_;
}

}  // namespace tessera
