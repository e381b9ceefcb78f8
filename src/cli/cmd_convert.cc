// tessera convert SRC -o BUNDLE [--weights lut4] [--embeddings int8] [--lm-head int8]
//                 [--group-size 32] [--keep REGEX=FORMAT ...] [--chunks N] [--prefill 8,32,512]
//                 [--seed S] [--threads N] [--force]
//                 [--calibration builtin|none|TEXT_FILE] [--calibration-tokens 512]
//
// SRC is a GGUF file, an HF checkpoint directory or a pulled model name. The
// bundle is written to a temporary directory and renamed into place when
// complete (convert/converter.h has the format rules). A quantized GGUF's
// block-quantized matrices keep their values (blk4 / blk8) unless a format
// is given with --weights, --embeddings or --lm-head, which then applies to
// every matrix of its kind (quantizing the source's values a second time).
#include <fmt/format.h>

#include "cli/commands.h"
#include "convert/converter.h"
#include "core/error.h"
#include "sources/model_source.h"

namespace tessera::cli {

namespace {

WeightFormat format_option(const std::string& flag, const std::string& value) {
  const auto f = weight_format_from_name(value);
  if (!f || is_blocked(*f)) fail("options", flag, "unknown format '{}' (f32, f16, bf16, int8, lut4, lut3, lut2, q4_0)", value);
  return *f;
}

}  // namespace

void register_convert(CLI::App& app) {
  auto* cmd = app.add_subcommand("convert", "Convert a GGUF / HF checkpoint into a Tessera bundle");
  // Unset flags take default_convert_options(source) (convert/converter.h),
  // the defaults the bundle cache converts with too; `d` only shows them.
  static std::string source, out, weights, embeddings, lm_head, calibration;
  static std::vector<std::string> keep;
  static std::vector<int64_t> prefill;
  static ConvertOptions o;
  static const ConvertOptions d;
  const auto shown = [](WeightFormat f) { return std::string(weight_format_name(f)); };
  cmd->add_option("source", source, "GGUF file, HF checkpoint directory or pulled model name")->required();
  cmd->add_option("-o,--output", out, "Bundle directory to create")->required();
  cmd->add_option("--weights", weights, "Format of the layer matrices: f32 f16 bf16 int8 lut4 lut3 lut2 q4_0 (llama.cpp blocks, for comparison)")->default_str(shown(d.weights));
  cmd->add_option("--embeddings", embeddings, "Format of the token embedding (also the head when tied)")->default_str(shown(d.embeddings));
  cmd->add_option("--lm-head", lm_head, "Format of an untied lm_head")->default_str(shown(d.lm_head));
  cmd->add_option("--group-size", o.group_size, "LUT formats: output rows sharing one palette")->capture_default_str();
  cmd->add_option("--keep", keep, "REGEX=FORMAT: tensors whose HF name matches get FORMAT (repeatable, first match wins)");
  cmd->add_option("--chunks", o.chunks, "Decode/prefill programs per step (contiguous layer ranges)")->capture_default_str();
  cmd->add_option("--prefill", prefill, "Prefill program sizes T (tokens per call)")->delimiter(',')->default_str("8,32,512");
  cmd->add_option("--seed", o.seed, "k-means seed")->capture_default_str();
  cmd->add_option("--kmeans-iterations", o.kmeans_iterations, "Lloyd iterations per palette")->capture_default_str();
  cmd->add_option("-t,--threads", o.threads, "Threads for k-means (output is identical for any count)")->capture_default_str();
  cmd->add_option("--calibration", calibration,
                  "LUT formats: activation-aware palettes from the f32 model run over a text: 'builtin' (a text "
                  "shipped in the binary), a UTF-8 text file, or 'none' (plain k-means)")
      ->default_str(d.calibration);
  cmd->add_option("--calibration-tokens", o.calibration_tokens, "Tokens of the calibration text used")
      ->capture_default_str();
  cmd->add_flag("--force", o.force, "Replace an existing bundle");
  cmd->footer("Options not given take the source's defaults (default_convert_options in src/convert/converter.h), "
              "what `tessera run` converts a source to on first use.");
  cmd->callback([cmd] {
    const auto given = [&](const char* flag) { return cmd->count(flag) > 0; };
    ConvertOptions c = default_convert_options(resolve_model_path(source), o.threads);
    // A format asked for re-quantizes: a quantized GGUF's blocks are then not kept.
    if (given("--weights") || given("--embeddings") || given("--lm-head")) c.keep_source_quant = false;
    if (given("--weights")) c.weights = format_option("--weights", weights);
    if (given("--embeddings")) c.embeddings = format_option("--embeddings", embeddings);
    if (given("--lm-head")) c.lm_head = format_option("--lm-head", lm_head);
    if (given("--group-size")) c.group_size = o.group_size;
    if (given("--chunks")) c.chunks = o.chunks;
    if (given("--prefill")) c.prefill_sizes = prefill;
    if (given("--seed")) c.seed = o.seed;
    if (given("--kmeans-iterations")) c.kmeans_iterations = o.kmeans_iterations;
    if (given("--calibration")) c.calibration = calibration;
    if (given("--calibration-tokens")) c.calibration_tokens = o.calibration_tokens;
    if (given("--keep")) {
      c.keep.clear();
      for (const std::string& rule : keep) c.keep.push_back(parse_keep_rule(rule));
    }
    c.threads = o.threads;
    c.force = o.force;
    convert_model(source, out, c);
    fmt::print("{}\n", out);
  });
}

}  // namespace tessera::cli
