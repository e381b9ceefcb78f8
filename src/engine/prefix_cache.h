// A size-capped, least-recently-used store of session states (snapshots),
// each keyed by the token prefix it holds, so that a new conversation that
// starts like an earlier one (a shared system prompt) resumes from that
// state instead of prefilling the prefix again. In memory, for one model
// (the engine's), with an optional disk tier (disk_prefix_store.h) that
// every entry is also written to and that a lookup falls back on when it
// holds a longer prefix than memory does. Entries are exact: a state
// restored from the cache and continued computes the bits a fresh run would
// (state/sequence_state.h).
//
// The engine adds entries where prefixes are seen to be shared: when a
// prompt diverges from a slot's conversation (that common prefix), and at
// the end of a chat request's system messages.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <span>

#include "engine/disk_prefix_store.h"
#include "runtime/session.h"

namespace tessera::engine {

class PrefixCache {
 public:
  // capacity_bytes: the most the in-memory entries' states may take
  // together. `disk` (optional) with `empty_state`, a state of the sessions'
  // shape to read disk entries into.
  explicit PrefixCache(uint64_t capacity_bytes, std::unique_ptr<DiskPrefixStore> disk = nullptr,
                       std::function<SequenceState()> empty_state = {});

  struct Match {
    std::shared_ptr<const Session::Snapshot> snapshot;  // null: no match
    int64_t common = 0;  // tokens of the prompt the entry holds, capped at prompt.size() - 1
    bool from_disk = false;  // read from the disk tier by this lookup
  };
  // The entry sharing the longest prefix with `prompt` whose state can be cut
  // to that prefix (marked as used; a disk entry is brought into memory);
  // {nullptr, 0} if there is none.
  Match find(std::span<const int32_t> prompt);
  // True if an in-memory entry holds exactly these tokens or more of them.
  bool covers(std::span<const int32_t> prefix) const;
  // Adds the snapshot (its history is its key) unless covers() it, then
  // evicts least recently used entries until the total fits the capacity;
  // queues its write to the disk tier. False if it was not kept in memory
  // (covered, or larger than the whole capacity).
  bool insert(Session::Snapshot snapshot);
  // Forgets the in-memory entries (the disk tier keeps its files).
  void clear_memory();

  uint64_t bytes() const { return bytes_; }
  size_t size() const { return entries_.size(); }
  uint64_t capacity() const { return capacity_; }
  DiskPrefixStore* disk() { return disk_.get(); }

 private:
  struct Entry {
    std::shared_ptr<const Session::Snapshot> snapshot;
    uint64_t bytes = 0;
  };
  static uint64_t bytes_of(const Session::Snapshot& s);
  bool keep(std::shared_ptr<const Session::Snapshot> snapshot);
  // The longest usable disk entry sharing more than `more_than` tokens.
  Match find_on_disk(std::span<const int32_t> prompt, int64_t more_than);

  uint64_t capacity_;
  uint64_t bytes_ = 0;
  std::list<Entry> entries_;  // most recently used first
  std::unique_ptr<DiskPrefixStore> disk_;
  std::function<SequenceState()> empty_state_;
};

}  // namespace tessera::engine
