#include "generation/generate.h"

#include <algorithm>
#include <deque>
#include <utility>
#include <optional>

#include "core/clock.h"
#include "core/error.h"
#include "tokenizer/detokenizer.h"

namespace tessera {

namespace {

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
  o.speculative.mode = parse_speculative_mode(s.speculative, &o.speculative.draft_path);
  if (s.draft_max < 1 || s.draft_max > 32) fail("options", "draft_max", "must be in 1..32, got {}", s.draft_max);
  o.speculative.max_draft = s.draft_max;
  const std::pair<ConstraintKind, const std::string*> constraints[] = {
      {ConstraintKind::JsonSchema, &s.json_schema}, {ConstraintKind::Grammar, &s.grammar}, {ConstraintKind::Regex, &s.regex},
      {ConstraintKind::StructuralTag, &s.structural_tag}};
  for (const auto& [kind, text] : constraints) {
    if (text->empty()) continue;
    if (!o.constraint.empty())
      fail("options", ConstraintSpec{kind, ""}.setting(), "a request takes at most one constraint and {} is set too",
           o.constraint.setting());
    o.constraint = ConstraintSpec{kind, *text};
  }
  return o;
}

Generation::Generation(Session& session, std::span<const int32_t> prompt, const GenerateOptions& options,
                       std::function<bool(std::string_view)> on_text)
    : session_(session),
      options_(options),
      on_text_(std::move(on_text)),
      prompt_(prompt.begin(), prompt.end()),
      sampler_(options.sampling) {
  const Model& model = session.model();
  if (options.max_tokens < 1) fail("request", "max_tokens", "must be at least 1, got {}", options.max_tokens);
  options.sampling.validate();
  for (const std::string& s : options.stop_strings)
    if (s.empty()) fail("request", "stop", "stop strings must not be empty");
  if (prompt.empty()) fail("request", "prompt", "no new prompt tokens to run");
  const bool with_media = !options.media.empty() || std::any_of(session.history().begin(), session.history().end(),
                                                                 [](int32_t id) { return id < 0; });
  if (with_media && options.speculative.mode != SpeculativeMode::Off &&
      options.speculative.mode != SpeculativeMode::Lookup && options.speculative.mode != SpeculativeMode::Auto)
    fail("request", "speculative", "a draft model cannot see the context's images or audio: use prompt lookup or none");
  const tok::Tokenizer* tok = model.tokenizer();
  if (!tok && !options.stop_strings.empty())
    fail(model.path(), "stop", "stop strings need a tokenizer and the model has none");
  if (static_cast<int64_t>(prompt.size()) + session.length() >= session.context_length())
    fail("request", "prompt", "{} prompt tokens (+{} in context) leave no room to generate within the context length {}",
         prompt.size(), session.length(), session.context_length());
  if (tok) detok_.emplace(*tok);
  if (!options.constraint.empty()) {
    std::shared_ptr<const CompiledConstraint> compiled = options.compiled_constraint;
    if (!compiled) compiled = ConstraintCompiler::for_model(model, options.constraint)->compile(options.constraint);
    constraint_.emplace(std::move(compiled));
  }
}

Generation::~Generation() = default;

void Generation::start() {
  r_.prompt_tokens = static_cast<int64_t>(prompt_.size());
  context_ = session_.history();
  context_.insert(context_.end(), prompt_.begin(), prompt_.end());
  prompt_begin_ = session_.length();
  start_ = Clock::now();
  session_.forward(prompt_, LogitsWanted::Last, options_.max_tokens_per_call, options_.media);
  r_.prefill_seconds = seconds_since(start_);
  if (options_.speculative.mode != SpeculativeMode::Off) {
    speculative_.emplace(session_, sampler_, options_.speculative, prompt_begin_, r_.prompt_tokens,
                         options_.max_tokens_per_call);
    if (constraint_) speculative_->constrain(&*constraint_);
    speculative_->prepare(context_);  // a draft model's prefill: part of the time to the first token
  }
  decode_start_ = Clock::now();
  pick();
  hand_out();
}

void Generation::pick() {
  const int64_t vocab = session_.model().spec().vocab_size;
  if (constraint_) {
    // The last row of logits with every token the constraint forbids at -inf.
    const std::vector<float>& logits = session_.logits();
    masked_.assign(logits.end() - vocab, logits.end());
    if (constraint_->mask(masked_.data()) == 0)
      fail("request", options_.constraint.setting(), "the constraint allows no token after {} generated tokens",
           r_.ids.size());
    decided_.push_back(sampler_.sample(masked_.data(), vocab, context_));
    return;
  }
  decided_.push_back(sampler_.picks_argmax(context_) ? session_.greedy_ids().back()
                                                     : sampler_.sample(session_.logits().data(), vocab, context_));
}

// Hands out the decided tokens in order (text, stop checks) until none is
// left or the generation ends.
void Generation::hand_out() {
  const std::vector<int32_t>& stop_ids = session_.model().stop_token_ids();
  auto emit = [&](std::string_view text) {
    r_.text.append(text);
    if (on_text_ && !text.empty() && !on_text_(text)) cancelled_ = true;
  };
  while (!decided_.empty() && !finished_) {
    const int32_t id = decided_.front();
    decided_.pop_front();
    if (r_.ids.empty()) r_.ttft_ms = seconds_since(start_) * 1000.0;
    else ++r_.decode_steps;
    r_.ids.push_back(id);
    context_.push_back(id);
    if (constraint_ && !constraint_->accept(id))
      fail("request", options_.constraint.setting(), "token {} does not continue the constraint's match", id);
    // A completed constraint ends the generation at its stop token even
    // with ignore_eos: nothing may follow it.
    const bool ends = !options_.ignore_eos || (constraint_ && constraint_->terminated());
    if (ends && std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end()) {
      end("eos");
      break;
    }
    if (detok_) {
      pending_ += detok_->push(id);
      size_t cut = std::string::npos;
      for (const std::string& s : options_.stop_strings) cut = std::min(cut, pending_.find(s));
      if (cut != std::string::npos) {
        emit(std::string_view(pending_).substr(0, cut));
        pending_.clear();
        end("stop");
        break;
      }
      const size_t hold = held_back(pending_, options_.stop_strings);
      emit(std::string_view(pending_).substr(0, pending_.size() - hold));
      pending_.erase(0, pending_.size() - hold);
    }
    if (cancelled_) {
      end("cancelled");
      break;
    }
    if (static_cast<int64_t>(r_.ids.size()) >= options_.max_tokens) {
      end("length");
      break;
    }
  }
  if (!finished_ && decided_.empty() && session_.length() + 1 > session_.context_length()) end("context");
}

void Generation::end(const char* reason) {
  finished_ = true;
  r_.finish_reason = reason;
  if (speculative_) {
    // A stop may come before the last accepted draft: the session keeps
    // the generated tokens but the last, as without speculation.
    speculative_->truncate(context_, prompt_begin_ + r_.prompt_tokens + static_cast<int64_t>(r_.ids.size()) - 1);
    r_.speculative = speculative_->stats();
  }
  r_.decode_seconds = seconds_since(decode_start_);
  if (detok_ && r_.finish_reason != "stop") {
    const std::string rest = pending_ + detok_->finish();
    r_.text.append(rest);
    if (on_text_ && !rest.empty()) on_text_(rest);
  }
}

bool Generation::wants_plain_step() const { return !finished_ && !speculative_; }

void Generation::after_plain_step() {
  pick();
  hand_out();
}

void Generation::step() {
  if (finished_) return;
  if (speculative_) {
    // Drafts may fill what max_tokens and the context leave after the pending token.
    const int64_t room = std::min(options_.max_tokens - static_cast<int64_t>(r_.ids.size()),
                                  session_.context_length() - session_.length()) - 1;
    std::vector<int32_t> step_tokens;
    speculative_->step(context_, room, step_tokens);
    decided_.insert(decided_.end(), step_tokens.begin(), step_tokens.end());
    hand_out();
    return;
  }
  session_.forward(std::span<const int32_t>(&r_.ids.back(), 1));
  after_plain_step();
}

void Generation::cancel() {
  if (!finished_) end("cancelled");
}

GenerateResult generate(Session& session, std::span<const int32_t> prompt, const GenerateOptions& options,
                        const std::function<bool(std::string_view)>& on_text) {
  Generation g(session, prompt, options, on_text);
  g.start();
  while (!g.finished()) g.step();
  return g.result();
}

}  // namespace tessera
