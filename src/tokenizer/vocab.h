// A tokenizer vocabulary: id <-> piece. Pieces are spelled as the model
// stores them (byte-level alphabet for GPT-2-style BPE, '▁' for SentencePiece
// spaces, "<0x41>" for byte-fallback tokens).
//
// Layout, for the 150-260k pieces of current vocabularies: every piece's
// bytes in one arena, an (offset, length) per id, and piece -> id through an
// open-addressing table of (id, 32-bit hash tag) slots (linear probing on the
// piece's hash; the arena is compared only where the tag matches, so a probe
// past other pieces touches nothing but the table). About 24 bytes per token
// plus its characters, against ~100 for a vector of strings beside a
// node-based hash map.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::tok {

class Vocab {
 public:
  // Ids run 0 .. size()-1; an id never set has the empty piece.
  size_t size() const { return spans_.size(); }
  std::string_view piece(int32_t id) const {
    const Span s = spans_[static_cast<size_t>(id)];
    return std::string_view(chars_).substr(s.offset, s.length);
  }
  std::optional<int32_t> find(std::string_view piece) const;
  // Adds `piece` as `id`. A piece set again under another id answers with the
  // later id (as a Python dict built in id order does); an id set again takes
  // the new piece, and its old piece is no longer found.
  void set(int32_t id, std::string_view piece);
  // Room for `pieces` pieces of `chars` bytes in all (loading goes faster).
  void reserve(size_t pieces, size_t chars);

 private:
  struct Span {
    uint32_t offset = 0, length = 0;
  };
  struct Slot {
    int32_t id = -1;   // -1: empty
    uint32_t tag = 0;  // the high half of the piece's hash
  };
  // The slot of `piece` (hash h), or the empty one where it would go.
  size_t slot_of(std::string_view piece, uint64_t h) const;
  void grow();

  std::string chars_;
  std::vector<Span> spans_;  // by id
  std::vector<Slot> slots_;  // size a power of two
  size_t used_ = 0;          // slots holding an id
};

}  // namespace tessera::tok
