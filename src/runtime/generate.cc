#include "runtime/generate.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>

#include "core/error.h"
#include "tokenizer/detokenizer.h"

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Length of the longest suffix of `text` that is a proper prefix of a stop string.
size_t held_back(std::string_view text, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const std::string& s : stops)
    for (size_t n = std::min(text.size(), s.size() - 1); n > hold; --n)
      if (text.substr(text.size() - n) == std::string_view(s).substr(0, n)) {
        hold = n;
        break;
      }
  return hold;
}

}  // namespace

GenerateOptions make_generate_options(const GenerationSettings& s) {
  if (s.max_tokens < 1) fail("options", "max_tokens", "must be at least 1, got {}", s.max_tokens);
  if (s.max_tokens_per_call < 0)
    fail("options", "max_tokens_per_call", "must be >= 0 (0: the largest prefill variant), got {}",
         s.max_tokens_per_call);
  for (const std::string& stop : s.stop)
    if (stop.empty()) fail("options", "stop", "stop strings must not be empty");
  GenerateOptions o;
  o.max_tokens = s.max_tokens;
  o.sampling.temperature = s.temperature;
  o.sampling.top_k = s.top_k;
  o.sampling.top_p = s.top_p;
  o.sampling.min_p = s.min_p;
  o.sampling.repeat_penalty = s.repeat_penalty;
  o.sampling.repeat_last_n = s.repeat_last_n;
  o.sampling.seed = s.seed;
  o.sampling.validate();
  o.stop_strings = s.stop;
  o.ignore_eos = s.ignore_eos;
  o.max_tokens_per_call = s.max_tokens_per_call;
  o.speculative.mode = parse_speculative_mode(s.speculative);
  if (s.draft_max < 1 || s.draft_max > 32) fail("options", "draft_max", "must be in 1..32, got {}", s.draft_max);
  o.speculative.max_draft = s.draft_max;
  return o;
}

GenerateResult generate(Session& session, std::span<const int32_t> prompt, const GenerateOptions& options,
                        const std::function<bool(std::string_view)>& on_text) {
  const Model& model = session.model();
  if (options.max_tokens < 1) fail("request", "max_tokens", "must be at least 1, got {}", options.max_tokens);
  options.sampling.validate();
  for (const std::string& s : options.stop_strings)
    if (s.empty()) fail("request", "stop", "stop strings must not be empty");
  if (prompt.empty()) fail("request", "prompt", "no new prompt tokens to run");
  const tok::Tokenizer* tok = model.tokenizer();
  if (!tok && !options.stop_strings.empty())
    fail(model.path(), "stop", "stop strings need a tokenizer and the model has none");
  if (static_cast<int64_t>(prompt.size()) + session.length() >= session.context_length())
    fail("request", "prompt", "{} prompt tokens (+{} in context) leave no room to generate within the context length {}",
         prompt.size(), session.length(), session.context_length());

  GenerateResult r;
  r.prompt_tokens = static_cast<int64_t>(prompt.size());
  Sampler sampler(options.sampling);
  std::optional<tok::StreamingDetokenizer> detok;
  if (tok) detok.emplace(*tok);
  const int64_t vocab = model.spec().vocab_size;
  const std::vector<int32_t>& stop_ids = model.stop_token_ids();
  std::vector<int32_t> context = session.history();
  context.insert(context.end(), prompt.begin(), prompt.end());
  std::string pending;  // decoded text not yet handed out

  const int64_t prompt_begin = session.length();
  const auto start = Clock::now();
  const std::vector<float>* logits = &session.forward(prompt, LogitsWanted::Last, options.max_tokens_per_call);
  r.prefill_seconds = seconds_since(start);

  std::optional<SpeculativeDecoder> speculative;
  if (options.speculative.mode != SpeculativeMode::Off)
    speculative.emplace(session, sampler, options.speculative, prompt_begin, r.prompt_tokens,
                        options.max_tokens_per_call);
  // Tokens chosen but not yet handed out, in order. Without speculation at
  // most one; a verify call decides the accepted drafts and the next token
  // at once (those but the last already in the session).
  std::deque<int32_t> decided;
  std::vector<int32_t> step_tokens;

  bool cancelled = false;
  auto emit = [&](std::string_view text) {
    r.text.append(text);
    if (on_text && !text.empty() && !on_text(text)) cancelled = true;
  };
  const auto decode_start = Clock::now();
  decided.push_back(sampler.picks_argmax(context) ? session.greedy_ids().back()
                                                  : sampler.sample(logits->data(), vocab, context));
  for (;;) {
    const int32_t id = decided.front();
    decided.pop_front();
    if (r.ids.empty()) r.ttft_ms = seconds_since(start) * 1000.0;
    else ++r.decode_steps;
    r.ids.push_back(id);
    context.push_back(id);
    const bool is_stop = !options.ignore_eos && std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end();
    if (is_stop) {
      r.finish_reason = "eos";
      break;
    }
    if (detok) {
      pending += detok->push(id);
      size_t cut = std::string::npos;
      for (const std::string& s : options.stop_strings) cut = std::min(cut, pending.find(s));
      if (cut != std::string::npos) {
        emit(std::string_view(pending).substr(0, cut));
        pending.clear();
        r.finish_reason = "stop";
        break;
      }
      const size_t hold = held_back(pending, options.stop_strings);
      emit(std::string_view(pending).substr(0, pending.size() - hold));
      pending.erase(0, pending.size() - hold);
    }
    if (cancelled) {
      r.finish_reason = "cancelled";
      break;
    }
    if (static_cast<int64_t>(r.ids.size()) >= options.max_tokens) {
      r.finish_reason = "length";
      break;
    }
    if (!decided.empty()) continue;  // already run: a verify call accepted it
    if (session.length() + 1 > session.context_length()) {
      r.finish_reason = "context";
      break;
    }
    if (speculative) {
      // Drafts may fill what max_tokens and the context leave after the pending token.
      const int64_t room = std::min(options.max_tokens - static_cast<int64_t>(r.ids.size()),
                                    session.context_length() - session.length()) - 1;
      step_tokens.clear();
      speculative->step(context, room, step_tokens);
      decided.insert(decided.end(), step_tokens.begin(), step_tokens.end());
    } else {
      logits = &session.forward(std::span<const int32_t>(&r.ids.back(), 1));
      decided.push_back(sampler.picks_argmax(context) ? session.greedy_ids().back()
                                                      : sampler.sample(logits->data(), vocab, context));
    }
  }
  if (speculative) {
    // A stop may come before the last accepted draft: the session keeps
    // the generated tokens but the last, as without speculation.
    speculative->truncate(context, prompt_begin + r.prompt_tokens + static_cast<int64_t>(r.ids.size()) - 1);
    r.speculative = speculative->stats();
  }
  r.decode_seconds = seconds_since(decode_start);
  if (detok && r.finish_reason != "stop") emit(pending + detok->finish());
  return r;
}

}  // namespace tessera
