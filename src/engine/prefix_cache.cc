#include "engine/prefix_cache.h"

#include <algorithm>

#include "engine/slot_choice.h"

namespace tessera::engine {

uint64_t PrefixCache::bytes_of(const Session::Snapshot& s) {
  return s.state.bytes_allocated() + s.history.size() * sizeof(int32_t);
}

PrefixCache::Match PrefixCache::find(std::span<const int32_t> prompt) {
  const int64_t cap = static_cast<int64_t>(prompt.size()) - 1;
  auto best = entries_.end();
  int64_t best_common = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const int64_t common = std::min(common_prefix_length(it->snapshot.history, prompt), cap);
    // An entry the prompt leaves before its end is usable only if its state
    // can be cut there (a sliding ring may no longer hold what that needs).
    const bool cuttable = common == static_cast<int64_t>(it->snapshot.history.size()) ||
                          it->snapshot.state.can_truncate(common);
    if (common > best_common && cuttable) {
      best_common = common;
      best = it;
    }
  }
  if (best == entries_.end()) return {};
  entries_.splice(entries_.begin(), entries_, best);  // most recently used
  return {&entries_.front().snapshot, best_common};
}

bool PrefixCache::covers(std::span<const int32_t> prefix) const {
  for (const Entry& e : entries_)
    if (common_prefix_length(e.snapshot.history, prefix) == static_cast<int64_t>(prefix.size())) return true;
  return false;
}

bool PrefixCache::insert(Session::Snapshot snapshot) {
  const uint64_t bytes = bytes_of(snapshot);
  if (bytes > capacity_ || covers(snapshot.history)) return false;
  entries_.push_front(Entry{std::move(snapshot), bytes});
  bytes_ += bytes;
  while (bytes_ > capacity_) {
    bytes_ -= entries_.back().bytes;
    entries_.pop_back();
  }
  return true;
}

}  // namespace tessera::engine
