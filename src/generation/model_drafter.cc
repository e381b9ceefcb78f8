#include "generation/model_drafter.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "core/clock.h"
#include "core/error.h"

namespace tessera {

ModelDrafter::ModelDrafter(std::shared_ptr<const Model> draft, int64_t context_length, double size_ratio)
    : model_(std::move(draft)), session_(*model_, context_length), size_ratio_(size_ratio) {}

namespace {

// A running mean over the last few samples (0: none yet).
void follow(double& mean, double sample) { mean = mean == 0 ? sample : 0.75 * mean + 0.25 * sample; }

}  // namespace

int64_t ModelDrafter::common_prefix(std::span<const int32_t> context, int64_t limit) const {
  const std::vector<int32_t>& held = session_.history();
  int64_t common = 0;
  limit = std::min<int64_t>(limit, static_cast<int64_t>(held.size()));
  while (common < limit && held[static_cast<size_t>(common)] == context[static_cast<size_t>(common)]) ++common;
  return common;
}

int64_t ModelDrafter::common_prefix(std::span<const int32_t> context) const {
  // Minus one token: the last token of the context must run to give the
  // first guess's logits.
  return common_prefix(context, static_cast<int64_t>(context.size()) - 1);
}

void ModelDrafter::prepare(std::span<const int32_t> context) {
  if (context.empty() || static_cast<int64_t>(context.size()) >= session_.context_length()) return;
  // As propose() keeps the session's common prefix, but all of the context:
  // the first proposal then runs only the token that follows it.
  int64_t common = common_prefix(context, static_cast<int64_t>(context.size()));
  if (!session_.truncate(common)) common = 0;
  if (common == static_cast<int64_t>(context.size())) return;
  const auto start = Clock::now();
  session_.forward(context.subspan(static_cast<size_t>(common)));
  const int64_t ran = static_cast<int64_t>(context.size()) - common;
  if (ran > 1) follow(catch_up_s_per_position_, seconds_since(start) / static_cast<double>(ran));
  positions_run_ += ran;
}

void ModelDrafter::propose(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& draft) {
  draft.clear();
  if (context.empty() || max_tokens < 1) return;
  const int64_t room = session_.context_length() - static_cast<int64_t>(context.size());
  max_tokens = std::min(max_tokens, room);
  if (max_tokens < 1) return;
  int64_t common = common_prefix(context);
  if (!session_.truncate(common)) common = 0;  // truncate() reset it: refill from the start
  auto start = Clock::now();
  session_.forward(context.subspan(static_cast<size_t>(common)));
  const int64_t caught_up = static_cast<int64_t>(context.size()) - common;
  follow(catch_up_s_per_position_, seconds_since(start) / static_cast<double>(caught_up));
  positions_run_ += caught_up;
  draft.push_back(session_.greedy_ids().back());
  while (static_cast<int64_t>(draft.size()) < max_tokens) {
    start = Clock::now();
    session_.forward(std::span<const int32_t>(&draft.back(), 1));
    follow(step_s_, seconds_since(start));
    ++positions_run_;
    draft.push_back(session_.greedy_ids().back());
  }
}

DraftingCost ModelDrafter::predicted_cost(std::span<const int32_t> context, double target_decode_s) const {
  if (context.empty()) return {};
  const double assumed = size_ratio_ * target_decode_s;
  const double step = step_s_ > 0 ? step_s_ : assumed;
  const auto catch_up = static_cast<double>(static_cast<int64_t>(context.size()) - common_prefix(context));
  // One position is a step; a longer catch-up runs as one call, whose
  // cost per position is measured (the prompt's prefill first; a lone
  // step's until then), and which costs at least a step (it reads every
  // weight once, however few its positions).
  const double per_position = catch_up > 1 && catch_up_s_per_position_ > 0 ? catch_up_s_per_position_ : step;
  return {std::max(step, catch_up * per_position), step};
}

}  // namespace tessera
