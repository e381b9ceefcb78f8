#include "engine/disk_prefix_store.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "core/error.h"
#include "core/sha256.h"
#include "engine/slot_choice.h"
#include "state/session_file.h"

namespace tessera::engine {

namespace fs = std::filesystem;

namespace {

constexpr const char* kExtension = ".tsession";

int64_t file_ticks(fs::file_time_type t) { return t.time_since_epoch().count(); }

}  // namespace

std::string prefix_key(std::span<const int32_t> tokens) {
  return sha256_hex(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(tokens.data()), tokens.size_bytes()))
      .substr(0, 32);
}

DiskPrefixStore::DiskPrefixStore(std::string dir, uint64_t capacity_bytes, std::string model_identity,
                                 std::function<void(const std::string&)> warn)
    : dir_(std::move(dir)), capacity_(capacity_bytes), identity_(std::move(model_identity)), warn_(std::move(warn)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) fail(dir_, "prefix cache directory", "cannot be created: {}", ec.message());
  for (const fs::directory_entry& f : fs::directory_iterator(dir_, ec)) {
    const fs::path& p = f.path();
    if (p.extension() == ".tmp") {  // a write that a crash interrupted
      fs::remove(p, ec);
      continue;
    }
    if (p.extension() != kExtension || !f.is_regular_file(ec)) continue;
    const std::string key = p.stem().string();
    try {
      SessionFileHead head = read_session_file_head(p.string());
      if (head.model != identity_) {  // not ours to judge or delete
        if (warn_) warn_(fmt::format("prefix cache: ignoring {}: it belongs to another model", p.string()));
        continue;
      }
      Entry e{key, std::move(head.history), f.file_size(ec), file_ticks(f.last_write_time(ec))};
      if (prefix_key(e.history) != key) fail(p.string(), "session file", "holds a prefix that its name does not");
      bytes_ += e.bytes;
      entries_.push_back(std::move(e));
    } catch (const Error& e) {
      if (warn_) warn_(fmt::format("prefix cache: dropping {}: {}", p.string(), e.what()));
      fs::remove(p, ec);
    }
  }
  if (ec) fail(dir_, "prefix cache directory", "cannot be listed: {}", ec.message());
  {
    std::lock_guard lock(mutex_);
    evict_locked();
  }
  writer_ = std::thread([this] { writer_loop(); });
}

DiskPrefixStore::~DiskPrefixStore() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  writer_.join();
}

std::string DiskPrefixStore::path_of(const std::string& key) const {
  return (fs::path(dir_) / (key + kExtension)).string();
}

std::vector<DiskPrefixStore::Candidate> DiskPrefixStore::candidates(std::span<const int32_t> prompt,
                                                                    int64_t more_than) const {
  std::vector<Candidate> out;
  std::lock_guard lock(mutex_);
  for (const Entry& e : entries_) {
    const int64_t common = common_prefix_length(e.history, prompt);
    if (common > more_than) out.push_back({e.key, common});
  }
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) { return a.common > b.common; });
  return out;
}

std::optional<std::vector<int32_t>> DiskPrefixStore::load(const std::string& key, SequenceState& state) {
  const std::string path = path_of(key);
  try {
    std::vector<int32_t> history = read_session_file(path, identity_, state);
    if (prefix_key(history) != key) fail(path, "session file", "holds a prefix that its name does not");
    const auto now = fs::file_time_type::clock::now();
    std::error_code ec;
    fs::last_write_time(path, now, ec);  // recency survives a restart
    std::lock_guard lock(mutex_);
    for (Entry& e : entries_)
      if (e.key == key) e.last_used = file_ticks(now);
    return history;
  } catch (const Error& e) {
    std::lock_guard lock(mutex_);
    std::error_code ec;
    if (!fs::exists(path, ec)) {  // removed under us (another process evicted it): not damage
      drop_locked(key, "");
    } else {
      drop_locked(key, e.what());
    }
    return std::nullopt;
  }
}

void DiskPrefixStore::drop_locked(const std::string& key, const std::string& why) {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
  if (it != entries_.end()) {
    bytes_ -= it->bytes;
    entries_.erase(it);
  }
  std::error_code ec;
  fs::remove(path_of(key), ec);
  if (!why.empty() && warn_) warn_(fmt::format("prefix cache: dropping {}: {}", path_of(key), why));
}

void DiskPrefixStore::evict_locked() {
  while (bytes_ > capacity_ && !entries_.empty()) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const Entry& a, const Entry& b) { return a.last_used < b.last_used; });
    std::error_code ec;
    fs::remove(path_of(oldest->key), ec);
    bytes_ -= oldest->bytes;
    entries_.erase(oldest);
  }
}

void DiskPrefixStore::put(std::shared_ptr<const Session::Snapshot> snapshot) {
  if (!snapshot || snapshot->history.empty() || snapshot->state.bytes_allocated() > capacity_) return;
  {
    std::lock_guard lock(mutex_);
    const std::string key = prefix_key(snapshot->history);
    for (const Entry& e : entries_)
      if (e.key == key) return;
    for (const auto& p : pending_)
      if (p->history == snapshot->history) return;
    pending_.push_back(std::move(snapshot));
  }
  cv_.notify_all();
}

void DiskPrefixStore::flush() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return pending_.empty() && !writing_; });
}

size_t DiskPrefixStore::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

uint64_t DiskPrefixStore::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

void DiskPrefixStore::writer_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, and every write done
    std::shared_ptr<const Session::Snapshot> s = std::move(pending_.front());
    pending_.pop_front();
    writing_ = true;
    lock.unlock();
    const std::string key = prefix_key(s->history);
    const std::string path = path_of(key);
    std::optional<Entry> written;
    try {
      write_session_file(path, identity_, s->history, s->state);
      std::error_code ec;
      const uint64_t bytes = fs::file_size(path, ec);
      written = Entry{key, s->history, ec ? 0 : bytes, file_ticks(fs::file_time_type::clock::now())};
    } catch (const Error& e) {  // a full disk, a read-only home: the memory tier still works
      if (warn_) warn_(fmt::format("prefix cache: not kept on disk: {}", e.what()));
    }
    lock.lock();
    if (written) {
      bytes_ += written->bytes;
      entries_.push_back(std::move(*written));
      evict_locked();
    }
    writing_ = false;
    cv_.notify_all();
  }
}

}  // namespace tessera::engine
