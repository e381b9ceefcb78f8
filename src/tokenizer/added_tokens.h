// Added tokens (special or not) are found in the text before anything else
// runs, exactly as Hugging Face's AddedVocabulary does:
//   * Tokens with normalized=false are matched on the raw text; the pieces in
//     between are normalized, and tokens with normalized=true are then matched
//     on those normalized pieces (their patterns are themselves normalized).
//   * Matching is leftmost-longest (Aho-Corasick LeftmostLongest): scanning
//     left to right, the first position where any token matches wins, and the
//     longest token matching there; the scan resumes after it.
//   * single_word: the match is dropped unless it is not glued to a word
//     character (alphanumeric or '_') on either side.
//   * lstrip / rstrip: the match swallows the whitespace to its left / right
//     (which therefore never reaches the model).
// A byte trie indexes the patterns; per position the walk is bounded by the
// longest token, and a first-byte filter skips positions no token starts at.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::tok {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = true;
};

class AddedTokenMatcher {
 public:
  // `tokens` are (pattern, token) pairs: the pattern is what is searched for
  // (the content, or its normalized form).
  void build(const std::vector<std::pair<std::string, const AddedToken*>>& tokens);
  bool empty() const { return patterns_ == 0; }

  struct Segment {
    size_t b, e;
    int32_t id;  // -1 for text between tokens
  };
  // Cuts `text` into text segments and token segments (in order, covering it
  // except for stripped whitespace).
  std::vector<Segment> split(std::string_view text) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // sorted by byte
    const AddedToken* token = nullptr;              // a pattern ends here
  };
  int32_t child(int32_t node, uint8_t b) const;
  std::vector<Node> nodes_;
  std::array<bool, 256> first_byte_{};
  size_t patterns_ = 0;
};

}  // namespace tessera::tok
