#include "tokenizer/bpe.h"

#include <queue>

#include <fmt/format.h>

#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/byte_level.h"

namespace tessera::tok {
namespace {

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

struct Candidate {
  uint32_t rank;
  int32_t pos;
  int32_t new_id;
  // std::priority_queue is a max-heap: "less" means lower priority, i.e. a
  // higher rank, then a later position.
  bool operator<(const Candidate& o) const {
    if (rank != o.rank) return rank > o.rank;
    return pos > o.pos;
  }
};

}  // namespace

std::vector<Bpe::MergeIds> Bpe::merge_ids(const Vocab& vocab,
                                          const std::vector<std::pair<std::string, std::string>>& merges) {
  std::vector<MergeIds> out;
  out.reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const auto ia = vocab.find(a), ib = vocab.find(b);
    joined.assign(a).append(b);
    const auto ir = vocab.find(joined);
    if (!ia || !ib || !ir) {
      fail("tokenizer", fmt::format("merge {} ({:?} {:?})", rank, a, b),
           "{} is not in the vocabulary", !ia ? fmt::format("{:?}", a)
                                           : !ib ? fmt::format("{:?}", b)
                                                 : fmt::format("{:?}", a + b));
    }
    out.push_back({*ia, *ib, *ir});
  }
  return out;
}

Bpe::Bpe(std::shared_ptr<const Vocab> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
         BpeOptions options)
    : Bpe(vocab, merge_ids(*vocab, merges), std::move(options)) {}

Bpe::Bpe(std::shared_ptr<const Vocab> vocab, const std::vector<MergeIds>& merges, BpeOptions options)
    : vocab_(std::move(vocab)), opt_(std::move(options)) {
  if (opt_.unk_token) {
    unk_id_ = vocab_->find(*opt_.unk_token);
    if (!unk_id_) fail("tokenizer", "model.unk_token", "unknown token {:?} is not in the vocabulary", *opt_.unk_token);
  }
  size_t slots = 1024;
  while (2 * slots < 3 * merges.size()) slots *= 2;  // at most two thirds full
  merges_.assign(slots, Merge{});
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    // A later duplicate overwrites an earlier one, as in the reference.
    const uint64_t key = pair_key(merges[rank].left, merges[rank].right);
    Merge& m = merges_[merge_slot(key)];
    if (m.key == kNoMerge) ++num_merges_;
    m = {key, static_cast<uint32_t>(rank), merges[rank].merged};
  }
  const auto& table = byte_level_table();
  for (int b = 0; b < 256; ++b) {
    byte_char_id_[b] = vocab_->find(table.byte_to_utf8[b]).value_or(-1);
    byte_fallback_id_[b] = vocab_->find(fmt::format("<0x{:02X}>", b)).value_or(-1);
  }
}

size_t Bpe::merge_slot(uint64_t key) const {
  // splitmix64's finalizer spreads the two ids over the slots.
  uint64_t h = key;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  h ^= h >> 31;
  const size_t mask = merges_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask)
    if (merges_[i].key == key || merges_[i].key == kNoMerge) return i;
}

const Bpe::Merge* Bpe::find_merge(int32_t a, int32_t b) const {
  const Merge& m = merges_[merge_slot(pair_key(a, b))];
  return m.key == kNoMerge ? nullptr : &m;
}

std::optional<uint32_t> Bpe::merge_rank(int32_t a, int32_t b) const {
  const Merge* m = find_merge(a, b);
  if (!m) return std::nullopt;
  return m->rank;
}

void Bpe::merge_all(std::vector<Symbol>& s) const {
  std::vector<Candidate> storage;
  storage.reserve(s.size() * 2);
  std::priority_queue<Candidate> queue(std::less<Candidate>(), std::move(storage));
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (const Merge* m = find_merge(s[i].id, s[i + 1].id)) queue.push({m->rank, static_cast<int32_t>(i), m->id});
  }
  const int32_t n = static_cast<int32_t>(s.size());
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& cur = s[top.pos];
    if (cur.len == 0 || cur.next == -1) continue;
    const int32_t next_pos = cur.next;
    const Symbol right = s[next_pos];
    // Stale entry: the pair at this position is no longer the one queued
    // (the reference compares only the result id; so do we).
    const Merge* m = find_merge(cur.id, right.id);
    if (!m || m->id != top.new_id) continue;
    cur.id = top.new_id;
    cur.len += right.len;
    cur.next = right.next;
    s[next_pos].len = 0;
    if (right.next > -1 && right.next < n) s[right.next].prev = top.pos;
    if (cur.prev >= 0) {
      if (const Merge* p = find_merge(s[cur.prev].id, cur.id)) queue.push({p->rank, cur.prev, p->id});
    }
    if (cur.next >= 0 && cur.next < n) {
      if (const Merge* q = find_merge(cur.id, s[cur.next].id)) queue.push({q->rank, top.pos, q->id});
    }
  }
}

bool Bpe::cached(std::string_view key, std::vector<int32_t>& out) const {
  if (key.size() > kMaxCachedWordBytes) return false;
  std::lock_guard<std::mutex> lock(cache_mu_);
  auto it = cache_.find(std::string(key));
  if (it == cache_.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

void Bpe::finish(std::string_view key, std::vector<Symbol>& symbols, std::vector<int32_t>& out) const {
  merge_all(symbols);
  const size_t before = out.size();
  for (const Symbol& sym : symbols)
    if (sym.len != 0) out.push_back(sym.id);
  if (key.size() <= kMaxCachedWordBytes) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() < kCacheCapacity)
      cache_.emplace(std::string(key), std::vector<int32_t>(out.begin() + before, out.end()));
  }
}

void Bpe::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (opt_.ignore_merges) {
    if (auto id = vocab_->find(word)) {
      out.push_back(*id);
      return;
    }
  }
  if (cached(word, out)) return;
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  auto add = [&](int32_t id, uint32_t len) {
    const int32_t idx = static_cast<int32_t>(symbols.size());
    if (idx > 0) symbols.back().next = idx;
    symbols.push_back({id, idx - 1, -1, len});
  };
  // A pending unknown's bytes (0: none), flushed before the next known symbol.
  uint32_t unk_len = 0;
  for (size_t i = 0; i < word.size();) {
    size_t n = utf8_valid_len(word, i);
    if (n == 0) n = utf8_invalid_len(word, i);  // callers pass valid text; be safe anyway
    const std::string_view ch = word.substr(i, n);
    i += n;
    if (auto id = vocab_->find(ch)) {
      if (unk_len) {
        add(*unk_id_, unk_len);
        unk_len = 0;
      }
      add(*id, static_cast<uint32_t>(n));
      continue;
    }
    if (opt_.byte_fallback) {
      bool all = true;
      for (unsigned char c : ch) all = all && byte_fallback_id_[c] >= 0;
      if (all) {
        for (unsigned char c : ch) add(byte_fallback_id_[c], 1);
        continue;
      }
    }
    if (unk_id_) {
      if (unk_len && opt_.fuse_unk) {
        unk_len += static_cast<uint32_t>(n);
      } else {
        if (unk_len) add(*unk_id_, unk_len);
        unk_len = static_cast<uint32_t>(n);
      }
    }
  }
  if (unk_len) add(*unk_id_, unk_len);
  finish(word, symbols, out);
}

void Bpe::tokenize_bytes(std::string_view raw, std::vector<int32_t>& out) const {
  if (raw.empty()) return;
  bool simple = true;
  for (unsigned char c : raw) simple = simple && byte_char_id_[c] >= 0;
  if (!simple) {
    // Rare (a byte missing from the alphabet): spell it out.
    tokenize(byte_level_table().encode(raw), out);
    return;
  }
  // Cache keys of this path are raw bytes; prefix them so they never collide
  // with spelled words of tokenize().
  thread_local std::string key;
  key.assign(1, '\x01');
  key.append(raw);
  if (cached(key, out)) return;
  if (opt_.ignore_merges) {  // a word that is a token is that token (Llama 3)
    if (const auto id = vocab_->find(byte_level_table().encode(raw))) {
      out.push_back(*id);
      if (key.size() <= kMaxCachedWordBytes) {
        std::lock_guard<std::mutex> lock(cache_mu_);
        if (cache_.size() < kCacheCapacity) cache_.emplace(key, std::vector<int32_t>{*id});
      }
      return;
    }
  }
  std::vector<Symbol> symbols(raw.size());
  const int32_t n = static_cast<int32_t>(raw.size());
  for (int32_t i = 0; i < n; ++i)
    symbols[i] = {byte_char_id_[static_cast<unsigned char>(raw[i])], i - 1, i + 1 < n ? i + 1 : -1, 1};
  finish(key, symbols, out);
}

}  // namespace tessera::tok
