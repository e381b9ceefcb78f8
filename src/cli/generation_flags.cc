#include "cli/generation_flags.h"

#include <cstdio>

#include <fmt/format.h>

#include "convert/bundle_cache.h"
#include "core/error.h"
#include "runtime/speculative.h"

namespace tessera::cli {

void GenerationFlags::add_to(CLI::App& cmd) {
  cmd.add_option("model", model, "GGUF path, HF checkpoint directory, or pulled model name")->required();
  cmd.add_option("-n,--max-tokens", settings.max_tokens, "Tokens to generate at most (>= 1)")->capture_default_str();
  cmd.add_option("--temp", settings.temperature, "Sampling temperature; 0 = greedy")->capture_default_str();
  cmd.add_option("--top-k", settings.top_k, "Keep the k most likely tokens (0 = off)")->capture_default_str();
  cmd.add_option("--top-p", settings.top_p, "Nucleus sampling mass (1 = off)")->capture_default_str();
  cmd.add_option("--min-p", settings.min_p, "Drop tokens below min_p x the top probability (0 = off)")->capture_default_str();
  cmd.add_option("--repeat-penalty", settings.repeat_penalty, "Repetition penalty (1 = off)")->capture_default_str();
  cmd.add_option("--repeat-last-n", settings.repeat_last_n, "Tokens the penalty looks back over (-1 = all)")->capture_default_str();
  cmd.add_option("--seed", settings.seed, "Sampling seed (same seed and settings, same output)")->capture_default_str();
  cmd.add_option("--stop", settings.stop, "Stop before this string (repeatable)");
  cmd.add_flag("--ignore-eos", settings.ignore_eos, "Do not stop at end-of-sequence tokens");
  cmd.add_option("-c,--ctx", ctx, "Context length (0 = the model's)")->capture_default_str();
  cmd.add_option("-b,--batch", settings.max_tokens_per_call, "Prompt tokens per prefill call (0 = largest program variant)")->capture_default_str();
  cmd.add_option("--chunks", chunks, "Split the layers into this many programs (0 = the bundle's, else 1)")->capture_default_str();
  cmd.add_option("--speculative", settings.speculative,
                 "Speculative decoding: off, lookup (verify every prompt-lookup draft), auto (prompt lookup, "
                 "draft length and on/off adapted to the measured acceptance and verify cost) or draft:PATH "
                 "(a draft model sharing the tokenizer, adapted as auto; draft-all:PATH verifies its every "
                 "proposal, to measure a drafter); greedy output is identical to plain decoding")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            std::string draft_path;
            try {
              parse_speculative_mode(v, &draft_path);  // the runtime's own parser: one list of modes
              return "";
            } catch (const Error& e) {
              return e.what();
            }
          },
          "off|lookup|auto|draft:PATH|draft-all:PATH"))
      ->capture_default_str();
  cmd.add_option("--draft-max", settings.draft_max, "Speculative decoding: drafted tokens per verify call at most (1-32)")
      ->capture_default_str();
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
