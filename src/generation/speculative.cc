#include "generation/speculative.h"

#include <algorithm>

#include "core/clock.h"
#include "core/error.h"
#include "generation/lookup_drafter.h"
#include "generation/lookup_then_model_drafter.h"
#include "generation/model_drafter.h"

namespace tessera {

const char* speculative_mode_name(SpeculativeMode mode) {
  switch (mode) {
    case SpeculativeMode::Off: return "off";
    case SpeculativeMode::Lookup: return "lookup";
    case SpeculativeMode::Auto: return "auto";
    case SpeculativeMode::Draft: return "draft";
    case SpeculativeMode::DraftAll: return "draft-all";
    case SpeculativeMode::LookupDraft: return "lookup+draft";
  }
  return "?";
}

bool uses_draft_model(SpeculativeMode mode) {
  return mode == SpeculativeMode::Draft || mode == SpeculativeMode::DraftAll || mode == SpeculativeMode::LookupDraft;
}

SpeculativeMode parse_speculative_mode(const std::string& name, std::string* draft_path) {
  if (name == "off") return SpeculativeMode::Off;
  if (name == "lookup") return SpeculativeMode::Lookup;
  if (name == "auto") return SpeculativeMode::Auto;
  for (const auto& [prefix, mode] : {std::pair{"draft:", SpeculativeMode::Draft}, {"draft-all:", SpeculativeMode::DraftAll},
                                     {"lookup+draft:", SpeculativeMode::LookupDraft}}) {
    const std::string p = prefix;
    if (name.starts_with(p) && name.size() > p.size() && draft_path) {
      *draft_path = name.substr(p.size());
      return mode;
    }
  }
  fail("options", "speculative",
       "unknown mode '{}' (expected off, lookup, auto, draft:PATH, draft-all:PATH or lookup+draft:PATH)", name);
}

int64_t accepted_prefix(std::span<const int32_t> draft, std::span<const int32_t> target) {
  if (target.size() != draft.size() + 1)
    fail("speculative", "verify", "{} target tokens for {} drafts (expected one more)", target.size(), draft.size());
  int64_t a = 0;
  while (a < static_cast<int64_t>(draft.size()) && draft[a] == target[a]) ++a;
  return a;
}

SpeculativeChoice speculative_sample(const std::vector<std::pair<int32_t, double>>& p, int32_t draft,
                                     double u_accept, double u_draw) {
  if (p.empty()) fail("speculative", "sample", "empty distribution");
  double p_draft = 0;
  for (const auto& [id, prob] : p)
    if (id == draft) p_draft = prob;
  // min(1, p(d) / q(d)) with q(d) = 1.
  if (u_accept < p_draft) return {true, draft};
  // norm(max(0, p − q)): p with the draft's mass removed. Its total is
  // 1 − p(d), summed here over the remaining entries so that rounding
  // cannot leave u past the last one.
  double rest = 0;
  for (const auto& [id, prob] : p)
    if (id != draft) rest += prob;
  const double u = u_draw * rest;
  double acc = 0;
  int32_t last = draft;
  for (const auto& [id, prob] : p) {
    if (id == draft || prob <= 0) continue;
    acc += prob;
    last = id;
    if (u < acc) return {false, id};
  }
  // Only reached through rounding at the top end (or when p is the draft
  // alone, which u_accept < 1 = p(d) has already accepted).
  return {false, last};
}

namespace {

// A shadow draft's length: its first tokens are what α is about (the
// acceptance of each draft given the ones before it), and a short one
// settles within a few tokens, so α follows the text closely.
constexpr int64_t kShadowTokens = 3;

DraftControlOptions control_options(const SpeculativeOptions& o) {
  DraftControlOptions c;
  c.max_draft = o.max_draft;
  c.probes = o.mode != SpeculativeMode::Auto;  // auto: shadow drafts instead (lookup proposes every step)
  c.probe_first = o.mode == SpeculativeMode::Draft || o.mode == SpeculativeMode::LookupDraft;
  return c;
}

}  // namespace

SpeculativeDecoder::SpeculativeDecoder(Session& session, Sampler& sampler, const SpeculativeOptions& options,
                                       int64_t prompt_begin, int64_t prompt_length, int64_t max_tokens_per_call)
    : session_(session),
      sampler_(sampler),
      options_(options),
      prompt_begin_(prompt_begin),
      prompt_length_(prompt_length),
      max_tokens_per_call_(max_tokens_per_call),
      controller_(control_options(options)) {
  if (options.max_draft < 1 || options.max_draft > 32)
    fail("options", "draft_max", "must be in 1..32, got {}", options.max_draft);
  if (uses_draft_model(options.mode)) {
    if (!options.draft_model)
      fail("options", "speculative", "draft:{}: the draft model was not loaded before the generation "
                                     "(load/draft_models.h: load_draft_model)", options.draft_path);
    std::shared_ptr<const Model> draft = options.draft_model;
    const double size_ratio =
        static_cast<double>(draft->weight_bytes()) / static_cast<double>(std::max<uint64_t>(1, session.model().weight_bytes()));
    auto model = std::make_unique<ModelDrafter>(std::move(draft), session.context_length(), size_ratio);
    if (options.mode == SpeculativeMode::LookupDraft) drafter_ = std::make_unique<LookupThenModelDrafter>(std::move(model));
    else drafter_ = std::move(model);
  } else {
    drafter_ = std::make_unique<LookupDrafter>();
  }
  // Verify calls of every size then find their buffers grown: none is
  // cold, none pays first-use costs inside the decode loop.
  session_.prepare_as_decode(options.max_draft + 1);
}

int32_t SpeculativeDecoder::decode(std::span<const int32_t> context) {
  const std::vector<float>& logits = session_.forward(context.last(1));
  return !constraint_ && sampler_.picks_argmax(context)
             ? session_.greedy_ids().back()
             : sampler_.sample(constrained(logits.data()), session_.model().spec().vocab_size, context);
}

const float* SpeculativeDecoder::constrained(const float* row) {
  if (!constraint_) return row;
  const int64_t vocab = session_.model().spec().vocab_size;
  masked_.assign(row, row + vocab);
  if (constraint_->mask(masked_.data()) == 0) fail("request", "constraint", "the constraint allows no next token");
  return masked_.data();
}

void SpeculativeDecoder::step(std::span<const int32_t> context, int64_t max_draft, std::vector<int32_t>& decided) {
  const auto start = Clock::now();
  max_draft = std::min(max_draft, options_.max_draft);
  draft_.clear();
  int64_t k = 0;
  double drafting_s = 0;
  if (options_.mode == SpeculativeMode::Draft) {
    // Drafting costs a draft-model step per token (and its catch-up on the
    // context): ask the controller first how many it wants, given that cost.
    const int64_t want =
        max_draft > 0 ? controller_.draft_length(max_draft, drafter_->predicted_cost(context, controller_.decode_seconds()))
                      : 0;
    if (want > 0) {
      const auto drafting_start = Clock::now();
      drafter_->propose(context, want, draft_);
      drafting_s = seconds_since(drafting_start);
    }
    k = static_cast<int64_t>(draft_.size());
  } else if (options_.mode == SpeculativeMode::LookupDraft) {
    // Prompt lookup's proposal, when it has one, as in Auto (it costs
    // nothing to make: the controller picks how much of it to verify);
    // otherwise the draft model's, as in Draft: when the controller
    // affords its drafting.
    auto& both = static_cast<LookupThenModelDrafter&>(*drafter_);
    if (max_draft > 0 && both.propose_lookup(context, max_draft, draft_)) {
      draft_.resize(static_cast<size_t>(controller_.draft_length(static_cast<int64_t>(draft_.size()))));
    } else {
      const int64_t want =
          max_draft > 0 ? controller_.draft_length(max_draft, both.predicted_cost(context, controller_.decode_seconds()))
                        : 0;
      if (want > 0) {
        const auto drafting_start = Clock::now();
        both.propose_model(context, want, draft_);
        drafting_s = seconds_since(drafting_start);
      }
    }
    k = static_cast<int64_t>(draft_.size());
  } else {  // Lookup and DraftAll verify every proposal; Auto asks the controller
    if (max_draft > 0) drafter_->propose(context, max_draft, draft_);
    k = options_.mode == SpeculativeMode::Auto ? controller_.draft_length(static_cast<int64_t>(draft_.size()))
                                               : static_cast<int64_t>(draft_.size());
  }
  if (constraint_ && k > 0) {  // never verify a draft past its first token the constraint refuses
    int64_t allowed = 0;
    while (allowed < k && constraint_->accept(draft_[static_cast<size_t>(allowed)])) ++allowed;
    constraint_->rollback(allowed);
    k = allowed;
  }
  if (k == 0) {
    // Auto: the proposal not verified now is a shadow draft, checked
    // against the tokens plain decoding produces next.
    if (options_.mode == SpeculativeMode::Auto && shadow_.empty())
      shadow_.assign(draft_.begin(), draft_.begin() + std::min<ptrdiff_t>(kShadowTokens, std::ssize(draft_)));
    decided.push_back(decode(context));
    controller_.record_decode(seconds_since(start));
    observe_shadow(decided.back());
    return;
  }
  draft_.resize(static_cast<size_t>(k));

  // 1. One call: the pending token and the drafts, every row's logits with
  //    decode numerics.
  const int64_t base = session_.length();  // the pending token's position
  extended_.assign(context.begin(), context.end());
  extended_.insert(extended_.end(), draft_.begin(), draft_.end());
  const std::span<const int32_t> ext(extended_);
  //    Plain greedy needs only each row's argmax, which the programs compute:
  //    the logits rows are then not copied out.
  const SamplingParams& sp = sampler_.params();
  const bool ids_only = sp.temperature == 0.0f && sp.repeat_penalty == 1.0f && !constraint_;
  const bool cold = !session_.warm_for_as_decode(k + 1);
  const std::vector<float>& logits = session_.forward_as_decode(ext.subspan(base, static_cast<size_t>(k + 1)),
                                                                max_tokens_per_call_, !ids_only);
  const int64_t vocab = session_.model().spec().vocab_size;

  // 2. Acceptance, row by row: row i is the target after the pending token
  //    and draft[0, i); its sampling context is the context and those drafts.
  int64_t a = 0;
  int32_t next = 0;
  for (;; ++a) {
    // Under a constraint the matcher follows the accepted drafts (rolled back below).
    if (constraint_ && a > 0) constraint_->accept(draft_[static_cast<size_t>(a - 1)]);
    const std::span<const int32_t> row_context = ext.first(context.size() + static_cast<size_t>(a));
    const float* row = ids_only ? nullptr : constrained(logits.data() + a * vocab);  // ids_only: greedy_ids() alone
    if (sp.temperature == 0.0f) {
      // Greedy: the choice plain decode would make; accepted if it is the draft.
      next = !constraint_ && sampler_.picks_argmax(row_context) ? session_.greedy_ids()[static_cast<size_t>(a)]
                                                                : sampler_.sample(row, vocab, row_context);
      if (a == k || next != draft_[static_cast<size_t>(a)]) break;
    } else if (a == k) {
      next = sampler_.sample(row, vocab, row_context);  // all accepted: one more token from p_k
      break;
    } else {
      const double u_accept = sampler_.uniform(), u_draw = sampler_.uniform();
      const SpeculativeChoice c =
          speculative_sample(sampler_.distribution(row, vocab, row_context), draft_[static_cast<size_t>(a)], u_accept,
                             u_draw);
      if (!c.accepted) {
        next = c.token;
        break;
      }
    }
  }

  if (constraint_) constraint_->rollback(a);  // the generation accepts the decided tokens as it hands them out

  // 3. Keep the pending token and the accepted drafts.
  truncate(ext, base + 1 + a);
  decided.insert(decided.end(), draft_.begin(), draft_.begin() + a);
  decided.push_back(next);
  for (auto it = decided.end() - (a + 1); it != decided.end(); ++it) observe_shadow(*it);
  ++stats_.verify_calls;
  stats_.drafted += k;
  stats_.accepted += a;
  controller_.record_verify(k, a, seconds_since(start) - drafting_s, drafting_s, cold);
}

void SpeculativeDecoder::observe_shadow(int32_t token) {
  if (shadow_.empty()) return;
  const auto drafted = static_cast<int64_t>(shadow_.size());
  if (token == shadow_[static_cast<size_t>(shadow_matched_)] && ++shadow_matched_ < drafted) return;
  controller_.record_shadow(drafted, shadow_matched_);
  shadow_.clear();
  shadow_matched_ = 0;
}

void SpeculativeDecoder::truncate(std::span<const int32_t> tokens, int64_t n) {
  if (n >= session_.length()) return;
  if (session_.truncate(n)) return;
  ++stats_.refeeds;
  refeed(tokens, n);
}

void SpeculativeDecoder::refeed(std::span<const int32_t> tokens, int64_t n) {
  // As generate() ran them: what preceded the prompt, the prompt in one
  // forward() with the request's call size, then the generated tokens, each
  // with the numerics of a decode step (in calls of up to 32 rows; only the
  // KV is wanted).
  const int64_t prompt_end = prompt_begin_ + prompt_length_;
  if (prompt_begin_ > 0) session_.forward(tokens.first(static_cast<size_t>(prompt_begin_)));
  session_.forward(tokens.subspan(static_cast<size_t>(prompt_begin_), static_cast<size_t>(prompt_length_)),
                   LogitsWanted::Last, max_tokens_per_call_);
  for (int64_t at = prompt_end; at < n; at += 32)
    session_.forward_as_decode(tokens.subspan(static_cast<size_t>(at), static_cast<size_t>(std::min<int64_t>(32, n - at))),
                               0, false);
}

}  // namespace tessera
