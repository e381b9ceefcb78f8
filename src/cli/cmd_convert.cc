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
  static std::string source, out, weights = "lut4", embeddings = "int8", lm_head = "int8", calibration = "builtin";
  static std::vector<std::string> keep;
  static std::vector<int64_t> prefill = {8, 32, 512};
  static ConvertOptions o;
  cmd->add_option("source", source, "GGUF file, HF checkpoint directory or pulled model name")->required();
  cmd->add_option("-o,--output", out, "Bundle directory to create")->required();
  cmd->add_option("--weights", weights, "Format of the layer matrices: f32 f16 bf16 int8 lut4 lut3 lut2 q4_0 (llama.cpp blocks, for comparison)")->capture_default_str();
  cmd->add_option("--embeddings", embeddings, "Format of the token embedding (also the head when tied)")->capture_default_str();
  cmd->add_option("--lm-head", lm_head, "Format of an untied lm_head")->capture_default_str();
  cmd->add_option("--group-size", o.group_size, "LUT formats: output rows sharing one palette")->capture_default_str();
  cmd->add_option("--keep", keep, "REGEX=FORMAT: tensors whose HF name matches get FORMAT (repeatable, first match wins)");
  cmd->add_option("--chunks", o.chunks, "Decode/prefill programs per step (contiguous layer ranges)")->capture_default_str();
  cmd->add_option("--prefill", prefill, "Prefill program sizes T (tokens per call)")->delimiter(',')->capture_default_str();
  cmd->add_option("--seed", o.seed, "k-means seed")->capture_default_str();
  cmd->add_option("--kmeans-iterations", o.kmeans_iterations, "Lloyd iterations per palette")->capture_default_str();
  cmd->add_option("-t,--threads", o.threads, "Threads for k-means (output is identical for any count)")->capture_default_str();
  cmd->add_option("--calibration", calibration,
                  "LUT formats: activation-aware palettes from the f32 model run over a text: 'builtin' (a text "
                  "shipped in the binary), a UTF-8 text file, or 'none' (plain k-means)")
      ->capture_default_str();
  cmd->add_option("--calibration-tokens", o.calibration_tokens, "Tokens of the calibration text used")
      ->capture_default_str();
  cmd->add_flag("--force", o.force, "Replace an existing bundle");
  cmd->callback([cmd] {
    o.keep_source_quant = default_convert_options(source).keep_source_quant && cmd->count("--weights") == 0 &&
                          cmd->count("--embeddings") == 0 && cmd->count("--lm-head") == 0;
    o.weights = format_option("--weights", weights);
    o.embeddings = format_option("--embeddings", embeddings);
    o.lm_head = format_option("--lm-head", lm_head);
    o.prefill_sizes = prefill;
    o.calibration = calibration;
    o.keep.clear();
    for (const std::string& rule : keep) o.keep.push_back(parse_keep_rule(rule));
    convert_model(source, out, o);
    fmt::print("{}\n", out);
  });
}

}  // namespace tessera::cli
