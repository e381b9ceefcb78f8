// Normalizers of tokenizer.json: Replace (a literal string, e.g. " " -> "▁"
// for Gemma), Prepend (e.g. "▁" for legacy Llama; only on non-empty input),
// CollapseSpaces (SentencePiece's remove_extra_whitespaces: no leading or
// trailing spaces, runs of spaces inside become one), the Unicode normal forms NFC / NFD / NFKC / NFKD (Qwen2 / Qwen3 use NFC;
// computed with utf8proc, whose Unicode tables may be a version apart from
// the Rust crate HF uses: only characters assigned in between can differ) and
// Sequence (flattened into steps). Others are rejected at load time rather
// than tokenized differently.
#pragma once

#include <string>
#include <vector>

namespace tessera::tok {

struct NormalizerStep {
  enum class Kind { Replace, Prepend, NFC, NFD, NFKC, NFKD, CollapseSpaces } kind;
  std::string pattern;  // Replace: the literal to find
  std::string content;  // Replace: replacement; Prepend: the prefix
};

struct Normalizer {
  std::vector<NormalizerStep> steps;
  bool empty() const { return steps.empty(); }
  std::string apply(std::string s) const;
};

}  // namespace tessera::tok
