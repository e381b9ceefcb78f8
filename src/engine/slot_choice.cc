#include "engine/slot_choice.h"

#include <algorithm>

namespace tessera::engine {

int64_t common_prefix_length(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int64_t>(i);
}

SlotChoice choose_slot(std::span<const SlotView> slots, std::span<const int32_t> prompt) {
  const int64_t cap = static_cast<int64_t>(prompt.size()) - 1;
  SlotChoice best;
  int64_t best_common = -1;
  for (size_t i = 0; i < slots.size(); ++i) {
    const int64_t common = std::min(common_prefix_length(slots[i].history, prompt), cap);
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
