// Which session slot a request runs on. The engine keeps a few Sessions
// ("slots"), each holding the KV state of the last conversation it ran. A new
// prompt goes to the slot whose history shares the longest common token
// prefix with it, so that only the rest has to be prefilled; with no shared
// prefix anywhere it goes to an empty slot, else to the least recently used
// one (its state is the one least likely to be asked for again).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::engine {

// Length of the longest common prefix of a and b, histories or prompts of
// token ids and media entries (negative: runtime/session.h
// media_history_key), never ending inside a media span: a span's rows attend
// to each other, so a state cannot be cut or resumed in the middle of one.
int64_t common_prefix_length(std::span<const int32_t> a, std::span<const int32_t> b);

// The prompt tokens whose state a session holding `history` can give: their
// common prefix, less the prompt's last token (it always runs: its logits
// choose the first generated token), never ending inside a media span.
int64_t reusable_prefix_length(std::span<const int32_t> history, std::span<const int32_t> prompt);

struct SlotView {
  std::span<const int32_t> history;  // tokens whose KV the slot holds
  uint64_t last_used = 0;            // a logical clock; 0: never used
};

struct SlotChoice {
  size_t slot = 0;
  // Tokens of the prompt whose KV the slot already holds, capped at
  // prompt.size() - 1: the last prompt token always runs, since its logits
  // choose the first generated token.
  int64_t reusable = 0;
};

// `slots` must not be empty; `prompt` must not be empty.
SlotChoice choose_slot(std::span<const SlotView> slots, std::span<const int32_t> prompt);

}  // namespace tessera::engine
