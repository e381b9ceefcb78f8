// Text generation on a Session: prefill the new prompt tokens in batched
// calls, then decode one token per call, sampling each (sampler.h), until a
// stop token, a stop string, max_tokens or the end of the context.
#pragma once

#include <cstdint>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <tessera/generation_settings.hpp>

#include "generation/output_constraint.h"
#include "generation/sampler.h"
#include "runtime/session.h"
#include "tokenizer/detokenizer.h"
#include "generation/speculative.h"

namespace tessera {

struct GenerateOptions {
  int64_t max_tokens = 128;  // >= 1
  SamplingParams sampling;
  std::vector<std::string> stop_strings;  // generation ends before the first occurrence
  bool ignore_eos = false;                // keep going past stop tokens
  int64_t max_tokens_per_call = 0;        // prefill call size (0: largest variant)
  SpeculativeOptions speculative;          // speculative decoding (generation/speculative.h); off by default
  // Constrained decoding (generation/output_constraint.h): the constraint
  // as the settings state it, and, when the caller compiled it ahead (the
  // engine does, with its model's ConstraintCompiler), the result;
  // Generation compiles `constraint` itself when `compiled_constraint` is null.
  ConstraintSpec constraint;
  std::shared_ptr<const CompiledConstraint> compiled_constraint;
  // Spans of the prompt whose embeddings are given (an image's soft
  // tokens; runtime/session.h), `begin` counted from the prompt's first
  // token. Their values must outlive the generation. A draft model cannot
  // see them: speculation with one is refused.
  std::vector<EmbeddedSpan> media;
};

// A generation request as a user states it is a GenerationSettings
// (include/tessera/generation_settings.hpp: the one list of settings that
// every front door reads). make_generate_options turns it into
// GenerateOptions, checking every range with the same errors for all doors:
// it throws Error ("options", field name, problem) for the first value out of
// range: max_tokens < 1, max_tokens_per_call < 0, an empty stop string, a
// sampling parameter (SamplingParams::validate), an unknown speculative mode,
// draft_max outside 1..32, or more than one constraint (json_schema,
// grammar, regex, structural_tag).
GenerateOptions make_generate_options(const GenerationSettings& settings);

struct GenerateResult {
  std::vector<int32_t> ids;    // generated tokens (including a final stop token)
  std::string text;            // their text, cut before a stop string; no stop token text
  std::string finish_reason;   // "eos" | "stop" | "length" | "context" | "cancelled"
  int64_t prompt_tokens = 0;   // tokens prefilled by this call
  double prefill_seconds = 0, decode_seconds = 0;
  double ttft_ms = 0;          // start to first generated token
  int64_t decode_steps = 0;    // tokens decoded after the first (one forward call each without speculation)
  SpeculativeStats speculative;  // all zero without speculation

  double prefill_tok_s() const { return prefill_seconds > 0 ? prompt_tokens / prefill_seconds : 0; }
  double decode_tok_s() const { return decode_seconds > 0 ? decode_steps / decode_seconds : 0; }
};

// Appends `prompt` (the tokens not yet in the session, at least one) and
// generates; the generated tokens but the last are then in the session too. on_text receives text as it
// becomes final (text that might start a stop string is held back); returning
// false cancels. Throws Error for bad options or a prompt that does not fit.
// A generation that can be advanced one step at a time, so that a scheduler
// can run the decode steps of several at once (Session::decode_batch):
//
//   Generation g(session, prompt, options, on_text);   // checks, as generate()
//   g.start();                                        // prefill, first token
//   while (!g.finished())
//     if (g.wants_plain_step()) { run g.next_input() on the session, then g.after_plain_step(); }
//     else g.step();                                  // a speculative step runs itself
//   GenerateResult r = g.result();
//
// generate() below is exactly that loop with session.forward() as the step.
class Generation {
 public:
  // Throws Error for bad options or a prompt that does not fit (nothing run).
  Generation(Session& session, std::span<const int32_t> prompt, const GenerateOptions& options,
             std::function<bool(std::string_view)> on_text = {});
  ~Generation();
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  // Prefills the prompt and takes the first token.
  void start();
  bool finished() const { return finished_; }
  // The next step is one plain decode step of next_input() (no speculation):
  // the caller may run it, alone or batched with other sessions, and then
  // call after_plain_step().
  bool wants_plain_step() const;
  int32_t next_input() const { return r_.ids.back(); }
  // The session has just run next_input(): takes the next token from its logits.
  void after_plain_step();
  // Runs the next step itself (plain or speculative).
  void step();
  // Ends the generation now (finish_reason "cancelled").
  void cancel();
  Session& session() const { return session_; }
  const GenerateResult& result() const { return r_; }

 private:
  void pick();
  void hand_out();
  void end(const char* reason);

  using Clock = std::chrono::steady_clock;
  Session& session_;
  GenerateOptions options_;
  std::function<bool(std::string_view)> on_text_;
  std::vector<int32_t> prompt_;
  Sampler sampler_;
  std::optional<tok::StreamingDetokenizer> detok_;
  std::optional<SpeculativeDecoder> speculative_;
  std::optional<ConstraintMatcher> constraint_;
  std::vector<float> masked_;  // the logits with the constraint's mask applied
  GenerateResult r_;
  std::vector<int32_t> context_;  // history + prompt + generated
  std::deque<int32_t> decided_;   // chosen, not yet handed out (a verify call decides several)
  std::string pending_;           // decoded text held back (a stop string may start there)
  int64_t prompt_begin_ = 0;
  Clock::time_point start_, decode_start_;
  bool finished_ = false, cancelled_ = false;
};

GenerateResult generate(Session& session, std::span<const int32_t> prompt, const GenerateOptions& options,
                        const std::function<bool(std::string_view)>& on_text = {});

}  // namespace tessera
