// The prefix cache's disk tier: session states of shared prompt prefixes
// kept as session files (state/session_file.h) in one directory per model,
// so that a restarted server (or another process of the same model) starts
// a conversation with a known system prompt without prefilling it again.
//
// Each file holds one prefix; its name is a hash of the prefix's tokens.
// The index (every file's token history, read from the files' heads when
// the store opens) finds the entry sharing the longest prefix with a prompt.
// The files together are capped at a size: beyond it the least recently used
// (by use in this process, else by the file's modification time) are deleted.
// Writes run on a background thread (the state is shared, not copied), go to
// a temporary file and are renamed into place. A file that cannot be read or
// fails its checksum is deleted with a warning and never used; a file of
// another model is left alone (with a warning).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "runtime/session.h"

namespace tessera::engine {

class DiskPrefixStore {
 public:
  // `dir` is created if missing. `warn` receives one line per dropped entry.
  DiskPrefixStore(std::string dir, uint64_t capacity_bytes, std::string model_identity,
                  std::function<void(const std::string&)> warn);
  ~DiskPrefixStore();  // finishes the queued writes
  DiskPrefixStore(const DiskPrefixStore&) = delete;
  DiskPrefixStore& operator=(const DiskPrefixStore&) = delete;

  struct Candidate {
    std::string key;
    int64_t common = 0;  // tokens shared with the prompt
  };
  // The entries sharing more than `more_than` tokens with `prompt`, longest first.
  std::vector<Candidate> candidates(std::span<const int32_t> prompt, int64_t more_than) const;
  // Reads entry `key` into `state` (which gives the shape) and returns its
  // history, marking it used; nullopt, `state` unchanged, if the file is gone
  // or damaged (then it is deleted, with a warning).
  std::optional<std::vector<int32_t>> load(const std::string& key, SequenceState& state);
  // Queues the snapshot's write, unless an entry holds the same tokens or it
  // alone exceeds the capacity.
  void put(std::shared_ptr<const Session::Snapshot> snapshot);
  // Waits until every queued write is on disk (tests, shutdown).
  void flush();

  size_t size() const;
  uint64_t bytes() const;
  const std::string& dir() const { return dir_; }

 private:
  struct Entry {
    std::string key;
    std::vector<int32_t> history;
    uint64_t bytes = 0;
    int64_t last_used = 0;  // larger: more recent (file times at open, then a counter above them)
  };
  std::string path_of(const std::string& key) const;
  void writer_loop();
  void evict_locked();
  void drop_locked(const std::string& key, const std::string& why);

  const std::string dir_;
  const uint64_t capacity_;
  const std::string identity_;
  const std::function<void(const std::string&)> warn_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Entry> entries_;
  uint64_t bytes_ = 0;
  int64_t clock_ = 0;
  std::deque<std::shared_ptr<const Session::Snapshot>> pending_;
  bool writing_ = false, stopping_ = false;
  std::thread writer_;
};

// The store's key of a token prefix: sha256 (hex) of its ids' bytes, 32 characters.
std::string prefix_key(std::span<const int32_t> tokens);

}  // namespace tessera::engine
