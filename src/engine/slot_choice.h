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

// Length of the longest common prefix of a and b.
int64_t common_prefix_length(std::span<const int32_t> a, std::span<const int32_t> b);

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
