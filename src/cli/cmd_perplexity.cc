// tessera perplexity MODEL -f TEXT [-c 512] [--chunks N] [--kl-divergence-base PATH [--kl-divergence]] [-t N] [--reference] [--json]
//
// llama.cpp's llama-perplexity, same protocol and same base-logits file
// (eval/perplexity.h, eval/kld_base_file.h):
//   * without --kl-divergence: the perplexity of the model over TEXT; with
//     --kl-divergence-base PATH it also writes PATH, a base-logits file
//     `llama-perplexity --kl-divergence` can read;
//   * with --kl-divergence --kl-divergence-base PATH: the model against the
//     base file (written by llama-perplexity or by this command), over the
//     file's own tokens, with llama.cpp's statistics (PPL, KLD, Δp, same top p).
// Progress goes to stderr; the final figures to stdout (--json: one object).
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "core/error.h"
#include "eval/kld_base_file.h"
#include "eval/perplexity.h"
#include "load/model_loader.h"
#include "tokenizer/tokenizer.h"

namespace tessera::cli {

namespace {

// The text as llama-perplexity's -f reads it: the whole file, less one trailing newline.
std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "text", "cannot open the text file");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// The final summary, with llama-perplexity's labels.
void print_kld_summary(const PerplexityReport& r) {
  const auto pct = [](double v) { return 100.0 * v; };
  fmt::print("====== Perplexity statistics ======\n");
  fmt::print("Mean PPL(Q)                   : {:10.6f} ± {:10.6f}\n", r.ppl.value, r.ppl.err);
  fmt::print("Mean PPL(base)                : {:10.6f} ± {:10.6f}\n", r.base_ppl.value, r.base_ppl.err);
  fmt::print("Cor(ln(PPL(Q)), ln(PPL(base))): {:6.2f}%\n", pct(r.ln_ppl_correlation));
  fmt::print("Mean ln(PPL(Q)/PPL(base))     : {:10.6f} ± {:10.6f}\n", r.ln_ppl_ratio.value, r.ln_ppl_ratio.err);
  fmt::print("Mean PPL(Q)/PPL(base)         : {:10.6f} ± {:10.6f}\n", r.ppl_ratio.value, r.ppl_ratio.err);
  fmt::print("Mean PPL(Q)-PPL(base)         : {:10.6f} ± {:10.6f}\n", r.ppl_diff.value, r.ppl_diff.err);
  fmt::print("\n====== KL divergence statistics ======\n");
  fmt::print("Mean    KLD: {:10.6f} ± {:10.6f}\n", r.kld.value, r.kld.err);
  const Percentiles& k = r.kld_percentiles;
  fmt::print("Maximum KLD: {:10.6f}\n99.9%   KLD: {:10.6f}\n99.0%   KLD: {:10.6f}\n95.0%   KLD: {:10.6f}\n"
             "90.0%   KLD: {:10.6f}\nMedian  KLD: {:10.6f}\n10.0%   KLD: {:10.6f}\n 5.0%   KLD: {:10.6f}\n"
             " 1.0%   KLD: {:10.6f}\n 0.1%   KLD: {:10.6f}\nMinimum KLD: {:10.6f}\n",
             k.max, k.p99_9, k.p99, k.p95, k.p90, k.median, k.p10, k.p5, k.p1, k.p0_1, k.min);
  fmt::print("\n====== Token probability statistics ======\n");
  fmt::print("Mean    Δp: {:6.3f} ± {:5.3f} %\n", pct(r.delta_p.value), pct(r.delta_p.err));
  const Percentiles& d = r.delta_p_percentiles;
  fmt::print("Maximum Δp: {:6.3f}%\n99.9%   Δp: {:6.3f}%\n99.0%   Δp: {:6.3f}%\n95.0%   Δp: {:6.3f}%\n"
             "90.0%   Δp: {:6.3f}%\n75.0%   Δp: {:6.3f}%\nMedian  Δp: {:6.3f}%\n25.0%   Δp: {:6.3f}%\n"
             "10.0%   Δp: {:6.3f}%\n 5.0%   Δp: {:6.3f}%\n 1.0%   Δp: {:6.3f}%\n 0.1%   Δp: {:6.3f}%\n"
             "Minimum Δp: {:6.3f}%\n",
             pct(d.max), pct(d.p99_9), pct(d.p99), pct(d.p95), pct(d.p90), pct(d.p75), pct(d.median), pct(d.p25),
             pct(d.p10), pct(d.p5), pct(d.p1), pct(d.p0_1), pct(d.min));
  fmt::print("RMS Δp    : {:6.3f} ± {:5.3f} %\n", pct(r.delta_p_rms.value), pct(r.delta_p_rms.err));
  fmt::print("Same top p: {:6.3f} ± {:5.3f} %\n", pct(r.same_top_p.value), pct(r.same_top_p.err));
}

}  // namespace

void register_perplexity(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "perplexity", "Perplexity and KL divergence against a base-logits file, as llama.cpp's llama-perplexity");
  static std::string model, text, base;
  static int64_t n_ctx = 512, chunks = -1;
  static bool kl_divergence = false, reference = false, verify = false, json = false;
  static KernelFlags kernels;
  cmd->add_option("model", model, "Bundle, GGUF, HF directory or pulled name")->required();
  cmd->add_option("-f,--file", text, "UTF-8 text to score (not read with --kl-divergence: the tokens are the base file's)");
  auto* ctx_opt = cmd->add_option("-c,--ctx-size", n_ctx, "Tokens per chunk (each a fresh context; the second half is scored)")
      ->capture_default_str();
  cmd->add_option("--chunks", chunks, "Score at most this many chunks (negative: all)")->capture_default_str();
  cmd->add_option("--kl-divergence-base", base,
                  "Base-logits file: written (without --kl-divergence) or read (with it), llama-perplexity's format");
  cmd->add_flag("--kl-divergence", kl_divergence, "Compare with the base-logits file of --kl-divergence-base");
  cmd->add_flag("--reference", reference, kReferenceHelp);
  cmd->add_flag("--verify", verify, "Bundles: check every weight's sha256 before running");
  kernels.add_to(*cmd);
  cmd->add_flag("--json", json, "Print the final figures as one JSON object");
  cmd->callback([ctx_opt] {
    // Everything that can be checked before the (possibly slow) load.
    if (kl_divergence && base.empty())
      fail("options", "--kl-divergence", "needs --kl-divergence-base PATH (the base-logits file to compare with)");
    std::string content;
    std::optional<KldBaseReader> file;  // the base file's header and tokens, read once
    if (kl_divergence) {
      file.emplace(base);  // refuses a missing, truncated or foreign file now
      if (ctx_opt->count() > 0 && file->header().n_ctx != n_ctx)
        fmt::print(stderr, "perplexity: -c {} ignored: {} was written with n_ctx {}\n", n_ctx, base,
                   file->header().n_ctx);
    } else {
      if (text.empty()) fail("options", "--file", "the text to score is required (-f FILE)");
      if (n_ctx < 8) fail("options", "--ctx-size", "must be at least 8, got {}", n_ctx);
      content = read_text(text);
    }
    LoadOptions lo;
    lo.verify = verify;
    kernels.apply(lo);
    auto m = load_model_for_running(model, lo, reference);

    PerplexityOptions o;
    o.n_ctx = n_ctx;
    o.max_chunks = chunks;
    PerplexityReport r;
    if (kl_divergence) {
      o.on_chunk = [](int64_t c, int64_t n, const PerplexityReport& p) {
        if (c == 1)
          fmt::print(stderr, "chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence"
                             "              Δp RMS            Same top p\n");
        fmt::print(stderr, "{:4}    {:9.4f} ± {:9.4f}    {:10.5f} ± {:10.5f}    {:10.5f} ± {:10.5f}    {:6.3f} ± {:6.3f} %"
                           "    {:6.3f} ± {:6.3f} %\n",
                   c, p.ppl.value, p.ppl.err, p.ln_ppl_ratio.value, p.ln_ppl_ratio.err, p.kld.value, p.kld.err,
                   100.0 * p.delta_p_rms.value, 100.0 * p.delta_p_rms.err, 100.0 * p.same_top_p.value,
                   100.0 * p.same_top_p.err);
      };
      const KldBaseHeader& h = file->header();
      // The file's first token is BOS exactly when its writer's tokenizer adds
      // BOS; another answer here changes every chunk's first token.
      const std::optional<int32_t> bos = chunk_bos(*m);
      const tok::Tokenizer* t = m->tokenizer();
      const int32_t first_token = file->tokens().front();
      if (bos && first_token != *bos)
        fmt::print(stderr, "perplexity: warning: this model's tokenizer adds BOS (id {}) but {} starts with id {}: "
                           "was it written with another tokenizer?\n", *bos, base, first_token);
      else if (!bos && t != nullptr && t->bos_id() && first_token == *t->bos_id())
        fmt::print(stderr, "perplexity: warning: {} starts with BOS (id {}) but this model's tokenizer adds none: "
                           "chunks after the first will not start with BOS as in the writer's run\n", base,
                   first_token);
      fmt::print(stderr, "perplexity: comparing with {}: {} chunks of n_ctx={}, n_vocab={}\n", base,
                 chunks < 0 ? h.n_chunk : std::min(chunks, h.n_chunk), h.n_ctx, h.n_vocab);
      r = compare_with_base(*m, base, o);
    } else {
      const std::vector<int32_t> tokens = m->require_tokenizer().encode(content, true);
      o.write_base = base;
      o.on_chunk = [](int64_t c, int64_t n, const PerplexityReport& p) {
        fmt::print(stderr, "[{}]{:.4f},", c, p.ppl.value);
        if (c == n) fmt::print(stderr, "\n");
      };
      const int64_t n_chunk = std::min(chunks < 0 ? INT64_MAX : chunks,
                                       static_cast<int64_t>(tokens.size()) / std::max<int64_t>(n_ctx, 1));
      if (static_cast<int64_t>(tokens.size()) >= 2 * n_ctx)  // else compute_perplexity says what is wrong
        fmt::print(stderr, "perplexity: {} tokens, {} chunks of n_ctx={}{}\n", tokens.size(), n_chunk, n_ctx,
                   base.empty() ? "" : fmt::format(", writing base logits to {}", base));
      r = compute_perplexity(*m, tokens, o);
    }
    if (r.bos) fmt::print(stderr, "perplexity: BOS (id {}) put at the start of every chunk\n", *r.bos);
    if (r.compared && r.count < 100)
      fmt::print(stderr, "perplexity: only {} positions scored (llama-perplexity prints no summary under 100)\n",
                 r.count);

    if (json) {
      nlohmann::ordered_json j;
      j["model"] = model;
      if (!kl_divergence) j["text"] = text;
      if (!base.empty()) j["kl_divergence_base"] = base;
      const nlohmann::ordered_json body = r.to_json();  // named: items() must not outlive it
      for (const auto& [k, v] : body.items()) j[k] = v;
      fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      return;
    }
    if (!r.compared) {
      fmt::print("Final estimate: PPL = {:.4f} +/- {:.5f}\n", r.ppl.value, r.ppl.err);
      return;
    }
    print_kld_summary(r);
  });
}

}  // namespace tessera::cli
