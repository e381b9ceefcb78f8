// Pre-tokenizers of tokenizer.json: they cut normalized text into the words
// BPE runs on. Supported (with the reference's exact split semantics):
//   Split      {pattern: String|Regex, behavior, invert}; Regex via PCRE2
//   ByteLevel  {add_prefix_space, use_regex}: GPT-2 regex split, then the
//              piece is marked byte-level (BPE spells its bytes via the GPT-2
//              table); must be the last step
//   Metaspace  {replacement, prepend_scheme always|first|never, split}
//   Digits     {individual_digits}: numeric characters as Rust's
//              char::is_numeric sees them (categories Nd, Nl, No: "½", "²")
//   Punctuation {behavior}: ASCII punctuation and Unicode P* characters
//   Sequence   flattened into steps
// A ByteLevel step followed by further steps (Falcon: Punctuation, ByteLevel,
// Digits, Split) hands them the text spelled in the GPT-2 byte alphabet, as
// the reference does: "½" is then the two characters "Â½", and the second is
// numeric.
// Split behaviours (which side a delimiter match goes to):
//   Isolated: delimiters are pieces of their own; Removed: dropped;
//   MergedWithPrevious / MergedWithNext: glued to the neighbouring piece;
//   Contiguous: runs of adjacent delimiters become one piece.
// `invert` swaps the roles of matches and the text between them.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex.h"

namespace tessera::tok {

enum class SplitBehavior { Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous };
enum class PrependScheme { Always, First, Never };

// The GPT-2 pattern the ByteLevel pre-tokenizer uses when use_regex is set.
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Qwen2 / Qwen2.5 / Qwen3 (Qwen2Tokenizer) and Qwen3.5 split patterns.
inline constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr const char* kQwen35Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct PreTokenizerStep {
  enum class Kind { Split, ByteLevel, Metaspace, Digits, Punctuation } kind;
  // Split
  std::shared_ptr<const Regex> regex;  // Regex pattern, or
  std::string literal;                 // String pattern
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool invert = false;
  // ByteLevel
  bool add_prefix_space = false;
  bool use_regex = true;
  // Metaspace
  std::string replacement = "\xE2\x96\x81";  // ▁
  PrependScheme prepend_scheme = PrependScheme::Always;
  bool split = true;
  // Digits
  bool individual_digits = false;
  // Punctuation: `behavior` above (the reference's default is Isolated)
};

// A piece of text on its way to the model.
struct Piece {
  std::string text;
  bool at_start = false;    // begins at offset 0 of the original input (Metaspace "first")
  bool byte_level = false;  // raw bytes the model must spell with the GPT-2 table
};

struct PreTokenizer {
  std::vector<PreTokenizerStep> steps;
  // Splits `in` (one normalized segment) and appends the words to `out`.
  void apply(Piece in, std::vector<Piece>& out) const;
};

// Applies a split behaviour to `text` given its delimiter matches (sorted,
// non-overlapping byte ranges). Exposed for tests.
std::vector<std::string_view> split_by_matches(std::string_view text,
                                               const std::vector<std::pair<size_t, size_t>>& matches,
                                               SplitBehavior behavior, bool invert);

}  // namespace tessera::tok
