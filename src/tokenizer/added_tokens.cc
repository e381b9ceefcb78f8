#include "tokenizer/added_tokens.h"

#include <algorithm>

#include "core/utf8.h"
#include "tokenizer/char_class.h"

namespace tessera::tok {
namespace {

// Last / first character of s (valid UTF-8), or nullopt-like 0xFFFFFFFF.
uint32_t last_char(std::string_view s) {
  if (s.empty()) return 0xFFFFFFFF;
  size_t i = s.size() - 1;
  while (i > 0 && (static_cast<uint8_t>(s[i]) & 0xC0) == 0x80) --i;
  const size_t n = utf8_valid_len(s, i);
  return n ? utf8_decode(s, i, n) : 0xFFFD;
}

uint32_t first_char(std::string_view s) {
  if (s.empty()) return 0xFFFFFFFF;
  const size_t n = utf8_valid_len(s, 0);
  return n ? utf8_decode(s, 0, n) : 0xFFFD;
}

bool is_word_char(uint32_t c) { return c != 0xFFFFFFFF && (c == '_' || is_unicode_alphanumeric(c)); }

}  // namespace

int32_t AddedTokenMatcher::child(int32_t node, uint8_t b) const {
  const auto& nx = nodes_[node].next;
  auto it = std::lower_bound(nx.begin(), nx.end(), std::make_pair(b, INT32_MIN));
  return it != nx.end() && it->first == b ? it->second : -1;
}

void AddedTokenMatcher::build(const std::vector<std::pair<std::string, const AddedToken*>>& tokens) {
  nodes_.assign(1, Node{});
  first_byte_.fill(false);
  patterns_ = 0;
  for (const auto& [pat, tok] : tokens) {
    if (pat.empty()) continue;
    int32_t node = 0;
    for (unsigned char c : pat) {
      int32_t nx = child(node, c);
      if (nx < 0) {
        nx = static_cast<int32_t>(nodes_.size());
        nodes_.push_back(Node{});
        auto& v = nodes_[node].next;
        v.insert(std::lower_bound(v.begin(), v.end(), std::make_pair(c, INT32_MIN)), {c, nx});
      }
      node = nx;
    }
    // The same pattern twice: the first one added keeps it (the automaton
    // reports the lowest pattern index).
    if (nodes_[node].token == nullptr) {
      nodes_[node].token = tok;
      ++patterns_;
    }
    first_byte_[static_cast<unsigned char>(pat[0])] = true;
  }
}

std::vector<AddedTokenMatcher::Segment> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<Segment> out;
  size_t start_offset = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (!first_byte_[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    // Longest pattern starting at i.
    const AddedToken* best = nullptr;
    size_t best_end = 0;
    int32_t node = 0;
    for (size_t j = i; j < text.size(); ++j) {
      node = child(node, static_cast<unsigned char>(text[j]));
      if (node < 0) break;
      if (nodes_[node].token) {
        best = nodes_[node].token;
        best_end = j + 1;
      }
    }
    if (!best) {
      ++i;
      continue;
    }
    size_t b = i, e = best_end;
    i = best_end;  // the automaton resumes after the match, kept or not
    if (best->single_word) {
      const bool start_space = b == 0 || !is_word_char(last_char(text.substr(0, b)));
      const bool stop_space = e == text.size() || !is_word_char(first_char(text.substr(e)));
      if (!start_space || !stop_space) continue;
    }
    if (best->lstrip) {
      // Leftmost start of the whitespace run ending at b.
      size_t nb = b;
      while (nb > 0) {
        size_t k = nb - 1;
        while (k > 0 && (static_cast<uint8_t>(text[k]) & 0xC0) == 0x80) --k;
        const size_t n = utf8_valid_len(text, k);
        if (n == 0 || !is_unicode_whitespace(utf8_decode(text, k, n))) break;
        nb = k;
      }
      b = std::max(nb, start_offset);
    }
    if (best->rstrip) {
      while (e < text.size()) {
        const size_t n = utf8_valid_len(text, e);
        if (n == 0 || !is_unicode_whitespace(utf8_decode(text, e, n))) break;
        e += n;
      }
    }
    if (b > start_offset) out.push_back({start_offset, b, -1});
    out.push_back({b, e, best->id});
    start_offset = e;
  }
  if (start_offset != text.size()) out.push_back({start_offset, text.size(), -1});
  return out;
}

}  // namespace tessera::tok
