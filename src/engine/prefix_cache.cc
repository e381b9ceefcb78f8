#include "engine/prefix_cache.h"

#include <algorithm>

#include "engine/slot_choice.h"

namespace tessera::engine {

namespace {

// Whether a state holding `history` can serve a prompt sharing `common` of
// its tokens: cut there, unless the prompt runs through all of it (a sliding
// ring may no longer hold what an earlier position needs).
bool cuttable(const Session::Snapshot& s, int64_t common) {
  return common == static_cast<int64_t>(s.history.size()) || s.state.can_truncate(common);
}

}  // namespace

PrefixCache::PrefixCache(uint64_t capacity_bytes, std::unique_ptr<DiskPrefixStore> disk,
                         std::function<SequenceState()> empty_state)
    : capacity_(capacity_bytes), disk_(std::move(disk)), empty_state_(std::move(empty_state)) {}

uint64_t PrefixCache::bytes_of(const Session::Snapshot& s) {
  return s.state.bytes_allocated() + s.history.size() * sizeof(int32_t);
}

PrefixCache::Match PrefixCache::find(std::span<const int32_t> prompt) {
  auto best = entries_.end();
  int64_t best_common = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const int64_t common = reusable_prefix_length(it->snapshot->history, prompt);
    if (common > best_common && cuttable(*it->snapshot, common)) {
      best_common = common;
      best = it;
    }
  }
  if (disk_)
    if (Match m = find_on_disk(prompt, best_common); m.snapshot) return m;
  if (best == entries_.end()) return {};
  entries_.splice(entries_.begin(), entries_, best);  // most recently used
  return {entries_.front().snapshot, best_common};
}

PrefixCache::Match PrefixCache::find_on_disk(std::span<const int32_t> prompt, int64_t more_than) {
  for (const DiskPrefixStore::Candidate& c : disk_->candidates(prompt, more_than)) {
    SequenceState state = empty_state_();
    std::optional<std::vector<int32_t>> history = disk_->load(c.key, state);
    if (!history) continue;  // gone or damaged (dropped with a warning)
    const int64_t common = reusable_prefix_length(*history, prompt);
    if (common <= more_than) continue;
    auto s = std::make_shared<const Session::Snapshot>(Session::Snapshot{std::move(state), std::move(*history)});
    if (!cuttable(*s, common)) continue;
    keep(s);
    return {std::move(s), common, true};
  }
  return {};
}

bool PrefixCache::covers(std::span<const int32_t> prefix) const {
  for (const Entry& e : entries_)
    if (common_prefix_length(e.snapshot->history, prefix) == static_cast<int64_t>(prefix.size())) return true;
  return false;
}

bool PrefixCache::keep(std::shared_ptr<const Session::Snapshot> snapshot) {
  const uint64_t bytes = bytes_of(*snapshot);
  if (bytes > capacity_ || covers(snapshot->history)) return false;
  entries_.push_front(Entry{std::move(snapshot), bytes});
  bytes_ += bytes;
  while (bytes_ > capacity_) {
    bytes_ -= entries_.back().bytes;
    entries_.pop_back();
  }
  return true;
}

bool PrefixCache::insert(Session::Snapshot snapshot) {
  auto s = std::make_shared<const Session::Snapshot>(std::move(snapshot));
  const bool kept = keep(s);
  if (kept && disk_) disk_->put(std::move(s));
  return kept;
}

void PrefixCache::clear_memory() {
  entries_.clear();
  bytes_ = 0;
}

}  // namespace tessera::engine
