// A compiled PCRE2 pattern in 8-bit UTF mode with Unicode properties (UCP),
// JIT-compiled when the library supports it. Used for the pre-tokenizer
// split patterns of tokenizer.json (which Hugging Face runs with Oniguruma).
//
// Oniguruma's \s is Unicode White_Space; PCRE2's (with UCP) misses U+0085 and
// may differ in other versions, so \s and \S are rewritten to explicit
// White_Space classes before compiling.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::tok {

class Regex {
 public:
  // Throws tessera::Error("tokenizer", "regex", ...) when the pattern does not compile.
  explicit Regex(const std::string& pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  const std::string& pattern() const { return pattern_; }
  // Non-overlapping matches, left to right, as [begin, end) byte offsets.
  // `text` must be valid UTF-8. Empty matches are skipped.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;

 private:
  struct Impl;
  std::string pattern_;
  std::unique_ptr<Impl> impl_;
};

// The pattern with \s / \S replaced by explicit White_Space classes.
std::string rewrite_whitespace_classes(const std::string& pattern);

}  // namespace tessera::tok
