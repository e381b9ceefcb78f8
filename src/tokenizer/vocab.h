// A tokenizer vocabulary: id <-> piece, with the per-token score and type a
// GGUF file stores (tokenizer.ggml.scores / token_type). Pieces are spelled as
// the model stores them (byte-level alphabet for GPT-2-style BPE, '▁' for
// SentencePiece spaces, "<0x41>" for byte-fallback tokens).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tessera::tok {

// llama.cpp's token types (tokenizer.ggml.token_type).
enum class TokenType : int32_t {
  Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6,
};

// Hash that also accepts string_view, so lookups need no temporary string.
struct PieceHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Vocab {
  std::vector<std::string> pieces;  // id -> piece ("" for ids with no piece)
  std::unordered_map<std::string, int32_t, PieceHash, std::equal_to<>> ids;  // piece -> id

  size_t size() const { return pieces.size(); }
  std::optional<int32_t> find(std::string_view piece) const {
    auto it = ids.find(piece);
    if (it == ids.end()) return std::nullopt;
    return it->second;
  }
  // Adds or re-points `piece`; later duplicates win the piece -> id direction
  // (as a Python dict built in id order does).
  void set(int32_t id, std::string piece) {
    if (static_cast<size_t>(id) >= pieces.size()) pieces.resize(id + 1);
    ids[piece] = id;
    pieces[id] = std::move(piece);
  }
};

}  // namespace tessera::tok
