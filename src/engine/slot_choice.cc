#include "engine/slot_choice.h"

#include <algorithm>

namespace tessera::engine {

namespace {

// Whether a cut before entry i of `keys` falls inside a media span: entries
// i - 1 and i both media (negative).
bool inside_media(std::span<const int32_t> keys, size_t i) {
  return i > 0 && i < keys.size() && keys[i - 1] < 0 && keys[i] < 0;
}

}  // namespace

int64_t common_prefix_length(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  while (inside_media(a, i) || inside_media(b, i)) --i;
  return static_cast<int64_t>(i);
}

int64_t reusable_prefix_length(std::span<const int32_t> history, std::span<const int32_t> prompt) {
  size_t n = static_cast<size_t>(common_prefix_length(history, prompt));
  if (!prompt.empty()) n = std::min(n, prompt.size() - 1);
  while (inside_media(prompt, n)) --n;
  return static_cast<int64_t>(n);
}

SlotChoice choose_slot(std::span<const SlotView> slots, std::span<const int32_t> prompt) {
  SlotChoice best;
  int64_t best_common = -1;
  for (size_t i = 0; i < slots.size(); ++i) {
    const int64_t common = reusable_prefix_length(slots[i].history, prompt);
    // Longer shared prefix wins; on a tie the least recently used slot, so
    // that a fresh conversation does not evict the one just served.
    if (common > best_common || (common == best_common && slots[i].last_used < slots[best.slot].last_used)) {
      best_common = common;
      best.slot = i;
    }
  }
  best.reusable = std::max<int64_t>(best_common, 0);
  return best;
}

}  // namespace tessera::engine
