// The BPE merge engine, exactly as Hugging Face tokenizers' models::bpe runs
// it (no dropout):
//   1. A word is split into characters; each becomes its vocabulary id. A
//      character not in the vocabulary becomes its "<0xXX>" byte tokens when
//      byte_fallback is on and they all exist, else the unknown token
//      (consecutive unknowns fused into one when fuse_unk), else it is dropped.
//   2. Merges: every adjacent pair (a, b) listed in the merge table has a rank
//      (its position in the merges list) and a result id. A min-heap holds the
//      candidate pairs ordered by (rank, position); the best is popped, checked
//      against the current symbols (entries made stale by an earlier merge are
//      skipped), applied by linking the right symbol out of a doubly linked
//      list, and the two new pairs it forms with its neighbours are pushed.
//      Every symbol takes part in at most one merge and each merge pushes at
//      most two entries, so a word of n symbols costs O(n log n).
//   3. ignore_merges: a word that is itself in the vocabulary is one token.
// Results are cached per word (bounded), as the reference does.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/vocab.h"

namespace tessera::tok {

struct BpeOptions {
  bool byte_fallback = false;
  std::optional<std::string> unk_token;
  bool fuse_unk = false;
  bool ignore_merges = false;
};

class Bpe {
 public:
  // A merge as vocabulary ids: left + right -> merged.
  struct MergeIds {
    int32_t left, right, merged;
  };
  // Merges in rank order, as pieces (a tokenizer.json / GGUF list; a piece
  // missing from the vocabulary is an Error naming the merge) or as ids.
  Bpe(std::shared_ptr<const Vocab> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
      BpeOptions options);
  Bpe(std::shared_ptr<const Vocab> vocab, const std::vector<MergeIds>& merges, BpeOptions options);
  static std::vector<MergeIds> merge_ids(const Vocab& vocab,
                                         const std::vector<std::pair<std::string, std::string>>& merges);

  // Appends the ids of one pre-tokenized word (valid UTF-8, already spelled in
  // the vocabulary's alphabet).
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;

  // Byte-level fast path: `raw` is the word's raw bytes; each byte is spelled
  // through the GPT-2 table without building the spelled string.
  void tokenize_bytes(std::string_view raw, std::vector<int32_t>& out) const;

  const Vocab& vocab() const { return *vocab_; }
  size_t num_merges() const { return num_merges_; }
  // The rank of merging (a, b), if it is a merge.
  std::optional<uint32_t> merge_rank(int32_t a, int32_t b) const;

 private:
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    uint32_t len;  // bytes of the word covered; 0 once merged away
  };
  void merge_all(std::vector<Symbol>& symbols) const;
  void finish(std::string_view key, std::vector<Symbol>& symbols, std::vector<int32_t>& out) const;
  bool cached(std::string_view key, std::vector<int32_t>& out) const;

  std::shared_ptr<const Vocab> vocab_;
  BpeOptions opt_;
  std::optional<int32_t> unk_id_;
  // (a << 32 | b) -> (rank, result id), open addressing with linear probing,
  // at most two thirds full: 16 bytes a slot, against ~48 per node-based entry.
  struct Merge {
    uint64_t key = kNoMerge;
    uint32_t rank = 0;
    int32_t id = 0;
  };
  static constexpr uint64_t kNoMerge = ~uint64_t{0};  // (-1, -1): never a pair of ids
  const Merge* find_merge(int32_t a, int32_t b) const;  // null if (a, b) is not a merge
  size_t merge_slot(uint64_t key) const;                // its slot, or the empty one where it would go
  std::vector<Merge> merges_;
  size_t num_merges_ = 0;
  std::array<int32_t, 256> byte_char_id_{};  // id of each byte's byte-level character, or -1
  std::array<int32_t, 256> byte_fallback_id_{};  // id of "<0xXX>", or -1

  static constexpr size_t kCacheCapacity = 10000;  // same as the reference
  static constexpr size_t kMaxCachedWordBytes = 256;
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace tessera::tok
