#include "cli/generation_flags.h"

#include <cstdio>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "core/error.h"
#include "load/model_loader.h"
#include "generation/speculative.h"

namespace tessera::cli {

namespace {

constexpr SettingFlag kSettingFlags[] = {
    {"max_tokens", "-n,--max-tokens"},
    {"temperature", "--temp"},
    {"top_p", "--top-p"},
    {"min_p", "--min-p"},
    {"repeat_penalty", "--repeat-penalty"},
    {"top_k", "--top-k"},
    {"repeat_last_n", "--repeat-last-n"},
    {"seed", "--seed"},
    {"stop", "--stop"},
    {"ignore_eos", "--ignore-eos"},
    {"max_tokens_per_call", "-b,--batch"},
    {"speculative", "--speculative"},
    {"draft_max", "--draft-max"},
    {"json_schema", "-j,--json-schema"},
    {"grammar", "--grammar"},
    {"regex", "--regex"},
    {"structural_tag", "--structural-tag"},
};

template <class T>
CLI::Option* add_setting(CLI::App& cmd, const char* flags, T& value, const char* help) {
  if constexpr (std::is_same_v<T, bool>)
    return cmd.add_flag(flags, value, help);
  else if constexpr (std::is_same_v<T, std::vector<std::string>>)
    return cmd.add_option(flags, value, help);  // repeatable
  else
    return cmd.add_option(flags, value, help)->capture_default_str();
}

}  // namespace

std::span<const SettingFlag> setting_flags() { return kSettingFlags; }

void GenerationFlags::add_to(CLI::App& cmd) {
  cmd.add_option("model", model, "GGUF path, HF checkpoint directory, or pulled model name")->required();
  for_each_generation_setting([&](const GenerationSettingInfo& info, auto member) {
    const SettingFlag* flag = nullptr;
    for (const SettingFlag& f : kSettingFlags)
      if (std::string_view(f.setting) == info.name) flag = &f;
    if (!flag) fail("tessera", info.name, "this generation setting has no flag (cli/generation_flags.cc)");
    CLI::Option* option = add_setting(cmd, flag->flags, settings.*member, info.doc);
    if (std::string_view(info.name) == "speculative")
      option->check(CLI::Validator(
          [](std::string& v) -> std::string {
            std::string draft_path;
            try {
              parse_speculative_mode(v, &draft_path);  // the runtime's own parser: one list of modes
              return "";
            } catch (const Error& e) {
              return e.what();
            }
          },
          "off|lookup|auto|draft:PATH|draft-all:PATH|lookup+draft:PATH"));
  });
  cmd.add_option("-c,--ctx", ctx, "Context length (0 = the model's)")->capture_default_str();
  cmd.add_option("--chunks", chunks, "Split the layers into this many programs (0 = the bundle's, else 1)")->capture_default_str();
  cmd.add_option("--system", system, "System prompt (chat template)");
  cmd.add_flag("--verify", verify, "Bundles: check every weight's sha256 before running");
  cmd.add_flag("--reference", reference, kReferenceHelp);
  kernels.add_to(cmd);
}

void KernelFlags::add_to(CLI::App& cmd) {
  cmd.add_option("-t,--threads", threads,
                 "Compute threads (default: this machine's physical cores); results are identical for any count")
      ->capture_default_str();
  cmd.add_option("--arithmetic", arithmetic,
                 "Integer linears: fast (one int8 activation pass: closer to an F32 copy of a GGUF than llama.cpp's "
                 "own arithmetic, docs/QUANTIZATION.md) or exact (two passes, the oracle's bits); both deterministic")
      ->check(CLI::IsMember({"exact", "fast"}))
      ->capture_default_str();
  cmd.add_option("--kv-type", kv_type,
                 "KV cache element type: f32 (exact) or f16 (half the KV memory and decode attention reads)")
      ->check(CLI::IsMember({"f32", "f16"}))
      ->capture_default_str();
  cmd.add_option("--weights-memory", weights_memory,
                 "how a bundle's weights are held: auto (read into transparent huge pages where the kernel grants "
                 "them, else mmap), mmap (map the file: lazy, shared between processes) or huge")
      ->check(CLI::IsMember({"auto", "mmap", "huge"}))
      ->capture_default_str();
}

void KernelFlags::apply(LoadOptions& o) const {
  if (threads < 1 || threads > 1024) fail("options", "--threads", "must be between 1 and 1024, got {}", threads);
  o.threads = threads;
  o.arithmetic = parse_arithmetic(arithmetic);
  o.kv_type = parse_kv_type(kv_type);
  o.weights_memory = parse_file_memory(weights_memory);
}

std::unique_ptr<Model> GenerationFlags::load_model() const {
  if (ctx < 0) fail("options", "--ctx", "must be >= 0, got {}", ctx);
  LoadOptions o;
  o.chunks = chunks;
  o.verify = verify;
  kernels.apply(o);
  return load_model_for_running(model, o, reference);
}

GenerateOptions GenerationFlags::options() const { return make_generate_options(settings); }

bool print_text(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return true;
}

void print_speed(const GenerateResult& r) {
  fmt::print(stderr, "\nspeed: prefill {} tok ({:.1f} tok/s) | decode {} tok ({:.1f} tok/s) | ttft {:.1f} ms | {}\n",
             r.prompt_tokens, r.prefill_tok_s(), r.decode_steps, r.decode_tok_s(), r.ttft_ms, r.finish_reason);
  const SpeculativeStats& s = r.speculative;
  if (s.verify_calls > 0)
    fmt::print(stderr, "speculative: {} verify calls | drafted {} | accepted {} ({:.1f}%) | refeeds {}\n",
               s.verify_calls, s.drafted, s.accepted, 100.0 * s.acceptance(), s.refeeds);
}

}  // namespace tessera::cli
