// Small text helpers the readers of a chat reply share
// (generation/reasoning.h, generation/tool_calls.h, generation/tool_call_readers.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace tessera::reply_text {

// JSON's whitespace, which the reply formats allow between their parts.
inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

inline std::string_view trim_end(std::string_view s) {
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return trim_end(s);
}

// Length of the longest suffix of `text` that is a proper prefix of
// `marker`: what a stream holds back, as it may be the marker's start.
inline size_t partial_marker(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

}  // namespace tessera::reply_text
