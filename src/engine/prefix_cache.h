// A size-capped, least-recently-used store of session states (snapshots),
// each keyed by the token prefix it holds, so that a new conversation that
// starts like an earlier one (a shared system prompt) resumes from that
// state instead of prefilling the prefix again. In memory, for one model
// (the engine's); entries are exact: a state restored from the cache and
// continued computes the bits a fresh run would (runtime/sequence_state.h).
//
// The engine adds entries where prefixes are seen to be shared: when a
// prompt diverges from a slot's conversation (that common prefix), and at
// the end of a chat request's system messages.
#pragma once

#include <cstdint>
#include <list>
#include <span>

#include "runtime/session.h"

namespace tessera::engine {

class PrefixCache {
 public:
  // capacity_bytes: the most the entries' states may take together.
  explicit PrefixCache(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  struct Match {
    const Session::Snapshot* snapshot = nullptr;  // valid until the next insert
    int64_t common = 0;  // tokens of the prompt the entry holds, capped at prompt.size() - 1
  };
  // The entry sharing the longest prefix with `prompt` whose state can be cut
  // to that prefix (marked as used); {nullptr, 0} if there is none.
  Match find(std::span<const int32_t> prompt);
  // True if an entry holds exactly these tokens or more of them.
  bool covers(std::span<const int32_t> prefix) const;
  // Adds the snapshot (its history is its key) unless covers() it, then
  // evicts least recently used entries until the total fits the capacity.
  // False if it was not kept (covered, or larger than the whole capacity).
  bool insert(Session::Snapshot snapshot);

  uint64_t bytes() const { return bytes_; }
  size_t size() const { return entries_.size(); }
  uint64_t capacity() const { return capacity_; }

 private:
  struct Entry {
    Session::Snapshot snapshot;
    uint64_t bytes = 0;
  };
  static uint64_t bytes_of(const Session::Snapshot& s);

  uint64_t capacity_;
  uint64_t bytes_ = 0;
  std::list<Entry> entries_;  // most recently used first
};

}  // namespace tessera::engine
