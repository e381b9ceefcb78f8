// tessera quality BUNDLE --ref SRC --text FILE [--max-tokens 512] [--window 0] [--threads N] [--arithmetic exact|fast] [--kv-type f32|f16] [--json]
//
// Compares a model (typically a converted bundle) with a reference (the GGUF
// or HF checkpoint it came from) on a text, both teacher-forced over the same
// token ids (eval/quality.h): per-layer residual cosine, next-token top-1
// agreement, KL(ref || test), perplexity of each and the final-logits cosine.
// The text is tokenized with the tested model's tokenizer.
#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "bundle/bundle.h"
#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "core/error.h"
#include "eval/quality.h"
#include "model/open_model_source.h"

namespace tessera::cli {

namespace {

// The layer count, read from the bundle manifest or the source's metadata
// without loading weights.
int64_t num_layers_of(const std::string& name_or_path) {
  if (Bundle::is_bundle(name_or_path)) return Bundle::read_manifest(name_or_path).spec.num_layers;
  return open_model_source(name_or_path).spec.num_layers;
}

}  // namespace

void register_quality(CLI::App& app) {
  auto* cmd = app.add_subcommand("quality", "Measure a model's quality against a reference on a text");
  static std::string model, ref, text;
  static int64_t max_tokens = 512, window = 0;
  static KernelFlags kernels;
  static bool json = false;
  cmd->add_option("model", model, "Model to test: bundle, GGUF, HF directory or pulled name")->required();
  cmd->add_option("--ref", ref, "Reference model: bundle, GGUF, HF directory or pulled name")->required();
  cmd->add_option("--text", text, "UTF-8 text file to run (tokenized by the tested model)")->required();
  cmd->add_option("--max-tokens", max_tokens, "Keep the first N tokens of the text")->capture_default_str();
  cmd->add_option("--window", window, "Tokens per window, each a fresh context (0 = --max-tokens)")
      ->capture_default_str();
  kernels.add_to(*cmd);
  cmd->add_flag("--json", json, "Print one JSON object");
  cmd->callback([] {
    if (max_tokens < 2) fail("options", "--max-tokens", "must be at least 2, got {}", max_tokens);
    if (window < 0 || window == 1) fail("options", "--window", "must be 0 or at least 2, got {}", window);
    std::ifstream in(text, std::ios::binary);
    if (!in) fail(text, "", "cannot open the text file");
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string content = ss.str();

    // Both with one chunk per layer, so that every layer's residual is seen.
    LoadOptions o;
    auto load = [&o](const std::string& path, const KernelFlags& k) {
      LoadOptions each = o;
      each.chunks = num_layers_of(path);
      k.apply(each);
      return Model::load(path, each);
    };
    // --arithmetic and --kv-type are the tested model's; the reference keeps the defaults (and --threads).
    auto test = load(model, kernels);
    std::vector<int32_t> ids = test->require_tokenizer().encode(content, true);
    if (static_cast<int64_t>(ids.size()) > max_tokens) ids.resize(static_cast<size_t>(max_tokens));
    if (ids.size() < 2) fail(text, "tokens", "the text gives {} tokens; at least 2 are needed", ids.size());
    KernelFlags reference_flags;
    reference_flags.threads = kernels.threads;
    auto reference = load(ref, reference_flags);
    if (test->spec().vocab_size != reference->spec().vocab_size)
      fail(model, "vocab size", "{} differs from the reference's {} ({})", test->spec().vocab_size,
           reference->spec().vocab_size, ref);
    const QualityReport r =
        measure_quality(*test, *reference, ids, window > 0 ? window : static_cast<int64_t>(ids.size()));

    if (json) {
      nlohmann::ordered_json j;
      j["model"] = model;
      j["ref"] = ref;
      j["text"] = text;
      const nlohmann::ordered_json body = r.to_json();
      for (const auto& [k, v] : body.items()) j[k] = v;
      fmt::print("{}\n", j.dump());
      return;
    }
    fmt::print("quality of {}\n  against {}\n", model, ref);
    fmt::print("tokens              {} ({} window{} of up to {}), {} next-token predictions\n", r.tokens, r.windows,
               r.windows == 1 ? "" : "s", r.window, r.predictions);
    fmt::print("top-1 agreement     {:.4f}\n", r.top1_agreement);
    fmt::print("KL(ref || test)     mean {:.6g} nats, max {:.6g}\n", r.kl_mean, r.kl_max);
    fmt::print("perplexity          test {:.4f}, ref {:.4f} ({:+.2f}%)\n", r.ppl_test, r.ppl_ref,
               100.0 * (r.ppl_test / r.ppl_ref - 1.0));
    fmt::print("next-token accuracy test {:.4f}, ref {:.4f}\n", r.test_top1_accuracy, r.ref_top1_accuracy);
    fmt::print("logits cosine       mean {:.6f}, min {:.6f}\n", r.logits_cosine_mean, r.logits_cosine_min);
    if (!r.layers.empty()) {
      std::vector<LayerCosine> sorted = r.layers;
      std::sort(sorted.begin(), sorted.end(),
                [](const LayerCosine& a, const LayerCosine& b) { return a.mean_cosine < b.mean_cosine; });
      double sum = 0.0;
      for (const LayerCosine& l : r.layers) sum += l.mean_cosine;
      fmt::print("layer cosine        min {:.6f} (layer {}), mean {:.6f} over {} layer outputs\n",
                 sorted.front().mean_cosine, sorted.front().layer, sum / static_cast<double>(r.layers.size()),
                 r.layers.size());
      std::string worst;
      for (size_t i = 0; i < std::min<size_t>(3, sorted.size()); ++i)
        worst += fmt::format("{}layer {}: {:.6f}", i ? ", " : "", sorted[i].layer, sorted[i].mean_cosine);
      fmt::print("worst layers        {}\n", worst);
    }
  });
}

}  // namespace tessera::cli
