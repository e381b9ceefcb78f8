// Normalizers of tokenizer.json that SentencePiece-style vocabularies use:
// Replace (a literal string, e.g. " " -> "▁" for Gemma), Prepend (e.g. "▁" for
// legacy Llama; only on non-empty input) and Sequence (flattened into steps).
// Unicode normal forms (NFC/NFKC) are not implemented: a tokenizer.json that
// asks for them is rejected at load time rather than tokenized differently.
#pragma once

#include <string>
#include <vector>

namespace tessera::tok {

struct NormalizerStep {
  enum class Kind { Replace, Prepend } kind;
  std::string pattern;  // Replace: the literal to find
  std::string content;  // Replace: replacement; Prepend: the prefix
};

struct Normalizer {
  std::vector<NormalizerStep> steps;
  bool empty() const { return steps.empty(); }
  std::string apply(std::string s) const;
};

}  // namespace tessera::tok
