#include "tokenizer/pretokenizer.h"

#include <algorithm>

#include <utf8proc.h>

#include "core/utf8.h"
#include "tokenizer/byte_level.h"

namespace tessera::tok {
namespace {

struct Seg {
  size_t b, e;
  bool is_match;
};

const Regex& gpt2_regex() {
  static const Regex re(kGpt2Pattern);
  return re;
}

// Rust's char::is_numeric: general categories Nd, Nl, No.
bool is_numeric(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  const auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

// Hugging Face's Punctuation pre-tokenizer: is_ascii_punctuation or a Unicode P* category.
bool is_punctuation(uint32_t cp) {
  if (cp < 0x80) return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
                        (cp >= 0x7B && cp <= 0x7E);
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS: case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF: case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

// Each character of `text` (valid UTF-8) for which pred holds, as a match.
template <class Pred>
void char_matches(std::string_view text, Pred pred, std::vector<std::pair<size_t, size_t>>& out) {
  out.clear();
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8_valid_len(text, i);
    if (n == 0) n = 1;
    if (pred(utf8_decode(text, i, n))) out.emplace_back(i, i + n);
    i += n;
  }
}

}  // namespace

std::vector<std::string_view> split_by_matches(std::string_view text,
                                               const std::vector<std::pair<size_t, size_t>>& matches,
                                               SplitBehavior behavior, bool invert) {
  // 1. Cover the text with alternating (gap, match) segments.
  std::vector<Seg> segs;
  size_t prev = 0;
  for (auto [b, e] : matches) {
    if (b != prev) segs.push_back({prev, b, invert});
    segs.push_back({b, e, !invert});
    prev = e;
  }
  if (prev != text.size()) segs.push_back({prev, text.size(), invert});
  if (text.empty()) segs.push_back({0, 0, invert});

  // 2. Decide which segments are kept and how they glue together
  //    (`removed` marks dropped delimiter segments).
  struct Out {
    size_t b, e;
    bool removed;
  };
  std::vector<Out> outs;
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (const auto& s : segs) outs.push_back({s.b, s.e, false});
      break;
    case SplitBehavior::Removed:
      for (const auto& s : segs) outs.push_back({s.b, s.e, s.is_match});
      break;
    case SplitBehavior::Contiguous: {
      bool previous_match = false;
      for (const auto& s : segs) {
        if (s.is_match == previous_match && !outs.empty()) outs.back().e = s.e;
        else outs.push_back({s.b, s.e, false});
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::MergedWithPrevious: {
      bool previous_match = false;
      for (const auto& s : segs) {
        if (s.is_match && !previous_match && !outs.empty()) outs.back().e = s.e;
        else outs.push_back({s.b, s.e, false});
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      bool previous_match = false;
      for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
        if (it->is_match && !previous_match && !outs.empty()) outs.back().b = it->b;
        else outs.push_back({it->b, it->e, false});
        previous_match = it->is_match;
      }
      std::reverse(outs.begin(), outs.end());
      break;
    }
  }
  std::vector<std::string_view> pieces;
  for (const auto& o : outs)
    if (!o.removed && o.e > o.b) pieces.push_back(text.substr(o.b, o.e - o.b));
  return pieces;
}

void PreTokenizer::apply(Piece in, std::vector<Piece>& out) const {
  std::vector<Piece> cur;
  cur.push_back(std::move(in));
  std::vector<Piece> next;
  std::vector<std::pair<size_t, size_t>> matches;
  for (const auto& st : steps) {
    next.clear();
    for (auto& p : cur) {
      auto emit_split = [&](SplitBehavior beh, bool inv, bool byte_level) {
        const auto parts = split_by_matches(p.text, matches, beh, inv);
        for (size_t k = 0; k < parts.size(); ++k) {
          const bool first = parts[k].data() == p.text.data();
          next.push_back({std::string(parts[k]), p.at_start && first, byte_level});
        }
      };
      switch (st.kind) {
        case PreTokenizerStep::Kind::Split: {
          matches.clear();
          if (st.regex) {
            st.regex->find_all(p.text, matches);
          } else if (!st.literal.empty()) {
            for (size_t pos = 0, hit; (hit = p.text.find(st.literal, pos)) != std::string::npos;
                 pos = hit + st.literal.size())
              matches.emplace_back(hit, hit + st.literal.size());
          }
          emit_split(st.behavior, st.invert, p.byte_level);
          break;
        }
        case PreTokenizerStep::Kind::Digits: {
          char_matches(p.text, is_numeric, matches);
          emit_split(st.individual_digits ? SplitBehavior::Isolated : SplitBehavior::Contiguous, false,
                     p.byte_level);
          break;
        }
        case PreTokenizerStep::Kind::Punctuation: {
          char_matches(p.text, is_punctuation, matches);
          emit_split(st.behavior, false, p.byte_level);
          break;
        }
        case PreTokenizerStep::Kind::ByteLevel: {
          if (st.add_prefix_space && (p.text.empty() || p.text[0] != ' ')) p.text.insert(p.text.begin(), ' ');
          // Not the last step: later steps see (and BPE gets) the spelled text.
          const bool spell = &st != &steps.back();
          const size_t first = next.size();
          if (st.use_regex) {
            gpt2_regex().find_all(p.text, matches);
            emit_split(SplitBehavior::Isolated, false, !spell);
          } else {
            p.byte_level = !spell;
            if (!p.text.empty()) next.push_back(std::move(p));
          }
          if (spell)
            for (size_t k = first; k < next.size(); ++k) next[k].text = byte_level_table().encode(next[k].text);
          break;
        }
        case PreTokenizerStep::Kind::Metaspace: {
          std::string t;
          t.reserve(p.text.size() + 8);
          for (char c : p.text) {
            if (c == ' ') t += st.replacement;
            else t += c;
          }
          const bool starts = t.compare(0, st.replacement.size(), st.replacement) == 0;
          if (!starts && (st.prepend_scheme == PrependScheme::Always ||
                          (st.prepend_scheme == PrependScheme::First && p.at_start)))
            t.insert(0, st.replacement);
          p.text = std::move(t);
          if (st.split) {
            matches.clear();
            for (size_t pos = 0, hit; (hit = p.text.find(st.replacement, pos)) != std::string::npos;
                 pos = hit + st.replacement.size())
              matches.emplace_back(hit, hit + st.replacement.size());
            emit_split(SplitBehavior::MergedWithNext, false, p.byte_level);
          } else if (!p.text.empty()) {
            next.push_back(std::move(p));
          }
          break;
        }
      }
    }
    cur.swap(next);
  }
  for (auto& p : cur)
    if (!p.text.empty()) out.push_back(std::move(p));
}

}  // namespace tessera::tok
