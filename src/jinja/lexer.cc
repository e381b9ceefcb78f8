#include "jinja/lexer.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"
#include "jinja/value.h"

namespace tessera::jinja {

std::string location(int line, int col) { return fmt::format("line {}, column {}", line, col); }

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Python str.rstrip(): strips trailing whitespace code points.
size_t py_rstrip_end(const std::string& s, size_t begin, size_t end) {
  while (end > begin) {
    // Find the start of the last code point.
    size_t k = end - 1;
    while (k > begin && (static_cast<unsigned char>(s[k]) & 0xc0) == 0x80 && end - k < 4) --k;
    size_t i = k;
    const uint32_t cp = utf8_decode_escaped(std::string_view(s).substr(0, end), i);
    if (i != end || !py_isspace(cp)) break;
    end = k;
  }
  return end;
}

// Length of the Python \s* match at s[pos].
size_t py_space_run(const std::string& s, size_t pos) {
  size_t i = pos;
  while (i < s.size()) {
    size_t j = i;
    const uint32_t cp = utf8_decode_escaped(s, j);
    if (!py_isspace(cp)) break;
    i = j;
  }
  return i - pos;
}

class Lexer {
 public:
  Lexer(std::string source, const std::string& origin) : src_(std::move(source)), origin_(origin) {
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      // Next tag opener.
      size_t open = std::string::npos;
      for (size_t i = pos_; i + 1 < src_.size(); ++i) {
        if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
          open = i;
          break;
        }
      }
      if (open == std::string::npos) {
        emit_data(pos_, src_.size(), pos_);
        pos_ = src_.size();
        break;
      }
      const char type = src_[open + 1];
      const char sign = open + 2 < src_.size() ? src_[open + 2] : '\0';
      size_t data_end = open;
      if (sign == '-') {
        data_end = py_rstrip_end(src_, pos_, open);
      } else if (sign != '+' && type != '{') {
        // lstrip_blocks: whitespace between the last newline and the tag.
        size_t l_pos = pos_;
        for (size_t i = open; i > pos_; --i) {
          if (src_[i - 1] == '\n') {
            l_pos = i;
            break;
          }
        }
        if (l_pos > pos_ || line_starting) {
          bool only_space = l_pos < open;
          for (size_t i = l_pos; i < open && only_space; ++i)
            if (!is_space(src_[i]) || src_[i] == '\n') only_space = false;
          if (only_space) data_end = l_pos;
        }
      }
      emit_data(pos_, data_end, pos_);
      const size_t after_open = open + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (type == '#') {
        line_starting = lex_comment(open, after_open);
      } else if (type == '%' && is_raw_begin(after_open)) {
        line_starting = lex_raw(open, after_open);
      } else {
        push(type == '{' ? TokenKind::VarBegin : TokenKind::BlockBegin, type == '{' ? "{{" : "{%", open);
        pos_ = after_open;
        line_starting = lex_tag(type == '{', open);
      }
    }
    push(TokenKind::Eof, "", src_.size());
    return std::move(tokens_);
  }

 private:
  std::pair<int, int> line_col(size_t pos) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
    const size_t line_start = it == line_starts_.begin() ? 0 : *(it - 1);
    return {static_cast<int>(it - line_starts_.begin()) + 1, static_cast<int>(pos - line_start) + 1};
  }

  template <typename... Args>
  [[noreturn]] void error(size_t pos, fmt::format_string<Args...> f, Args&&... args) const {
    const auto [l, c] = line_col(pos);
    fail(origin_, location(l, c), f, std::forward<Args>(args)...);
  }

  void push(TokenKind kind, std::string text, size_t pos) {
    const auto [l, c] = line_col(pos);
    tokens_.push_back(Token{kind, std::move(text), l, c});
  }

  void emit_data(size_t begin, size_t end, size_t at) {
    if (end > begin) push(TokenKind::Data, src_.substr(begin, end - begin), at);
  }

  // After a block/comment end marker at `pos` (pointing at '%' or '#' of the
  // closing pair, with `sign` the char before it): consumes trim rules and
  // returns whether the match ended with a newline.
  bool finish_block_end(size_t close_pos, char sign) {
    size_t p = close_pos + 2;
    if (sign == '-') {
      p += py_space_run(src_, p);
    } else if (sign != '+' && p < src_.size() && src_[p] == '\n') {
      ++p;  // trim_blocks
    }
    pos_ = p;
    return p > 0 && src_[p - 1] == '\n';
  }

  bool lex_comment(size_t open, size_t after_open) {
    const size_t close = src_.find("#}", after_open);
    if (close == std::string::npos) error(open, "missing end of comment tag");
    const char sign = close > after_open ? src_[close - 1] : '\0';
    return finish_block_end(close, sign == '-' || sign == '+' ? sign : '\0');
  }

  // `{% raw %}` (with optional whitespace control) at after_open?
  bool is_raw_begin(size_t p) const {
    while (p < src_.size() && is_space(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < src_.size() && is_space(src_[p])) ++p;
    return src_.compare(p, 2, "%}") == 0 || src_.compare(p, 3, "-%}") == 0;
  }

  bool lex_raw(size_t open, size_t after_open) {
    size_t p = src_.find('}', after_open);  // end of `{% raw %}`
    const char sign = src_[p - 2];
    // Jinja's raw_begin is `{% raw %}` or `{% raw -%}\s*` (no trim_blocks here).
    p += 1;
    if (sign == '-') p += py_space_run(src_, p);
    const size_t body = p;
    // Find `{%[-+]? endraw [-+]?%}`.
    for (size_t i = body; i + 1 < src_.size(); ++i) {
      if (src_[i] != '{' || src_[i + 1] != '%') continue;
      size_t q = i + 2;
      const char open_sign = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q++] : '\0';
      while (q < src_.size() && is_space(src_[q])) ++q;
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q += 6;
      while (q < src_.size() && is_space(src_[q])) ++q;
      char close_sign = '\0';
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) close_sign = src_[q++];
      if (src_.compare(q, 2, "%}") != 0) continue;
      size_t body_end = i;
      if (open_sign == '-') body_end = py_rstrip_end(src_, body, i);
      emit_data(body, body_end, body);
      return finish_block_end(q, close_sign);
    }
    error(open, "missing end of raw directive");
  }

  // Tokens inside {{ }} or {% %}; returns line_starting after the end.
  bool lex_tag(bool variable, size_t open) {
    std::vector<char> balance;
    while (true) {
      if (pos_ >= src_.size()) error(open, "unexpected end of template: tag opened here was never closed");
      const char c = src_[pos_];
      if (balance.empty()) {
        if (variable) {
          if (src_.compare(pos_, 3, "-}}") == 0) {
            push(TokenKind::VarEnd, "}}", pos_);
            pos_ += 3;
            pos_ += py_space_run(src_, pos_);
            return src_[pos_ - 1] == '\n';
          }
          if (src_.compare(pos_, 2, "}}") == 0) {
            push(TokenKind::VarEnd, "}}", pos_);
            pos_ += 2;
            return false;
          }
        } else {
          if ((c == '-' || c == '+') && src_.compare(pos_ + 1, 2, "%}") == 0) {
            push(TokenKind::BlockEnd, "%}", pos_);
            return finish_block_end(pos_ + 1, c);
          }
          if (src_.compare(pos_, 2, "%}") == 0) {
            push(TokenKind::BlockEnd, "%}", pos_);
            return finish_block_end(pos_, '\0');
          }
        }
      }
      if (is_space(c)) {
        ++pos_;
        continue;
      }
      const size_t start = pos_;
      if (is_digit(c)) {
        lex_number();
        continue;
      }
      if (is_name_start(c)) {
        while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
        push(TokenKind::Name, src_.substr(start, pos_ - start), start);
        continue;
      }
      if (c == '\'' || c == '"') {
        lex_string();
        continue;
      }
      static const char* const kOps2[] = {"//", "**", "==", "!=", "<=", ">="};
      bool matched = false;
      for (const char* op : kOps2) {
        if (src_.compare(pos_, 2, op) == 0) {
          push(TokenKind::Operator, op, pos_);
          pos_ += 2;
          matched = true;
          break;
        }
      }
      if (matched) continue;
      if (std::strchr("+-*/%~<>=.:|,()[]{};", c) != nullptr && c != '\0') {
        if (c == '(' || c == '[' || c == '{') {
          balance.push_back(c);
        } else if (c == ')' || c == ']' || c == '}') {
          const char want = c == ')' ? '(' : c == ']' ? '[' : '{';
          if (balance.empty()) error(pos_, "unexpected '{}'", c);
          if (balance.back() != want) error(pos_, "unexpected '{}', expected the closing bracket of '{}'", c, balance.back());
          balance.pop_back();
        }
        push(TokenKind::Operator, std::string(1, c), pos_);
        ++pos_;
        continue;
      }
      error(pos_, "unexpected character '{}'", c == '\n' ? std::string("\\n") : std::string(1, c));
    }
  }

  void lex_number() {
    const size_t start = pos_;
    const auto digits = [&] {
      while (pos_ < src_.size() && (is_digit(src_[pos_]) || (src_[pos_] == '_' && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1]))))
        ++pos_;
    };
    digits();
    bool is_float = false;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
      ++pos_;
      digits();
      is_float = true;
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t q = pos_ + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && is_digit(src_[q])) {
        pos_ = q;
        digits();
        is_float = true;
      }
    }
    std::string text;
    for (size_t i = start; i < pos_; ++i)
      if (src_[i] != '_') text += src_[i];
    // Jinja's integers: no leading zeros (0, 00 are fine; 01 is a syntax error).
    if (!is_float && text.size() > 1 && text[0] == '0' && text.find_first_not_of('0') != std::string::npos)
      error(start, "leading zeros in integer literal '{}'", text);
    push(is_float ? TokenKind::Float : TokenKind::Integer, text, start);
  }

  // Python's unicode-escape decoding, as Jinja applies it to string literals.
  void lex_string() {
    const size_t start = pos_;
    const char quote = src_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= src_.size()) error(start, "unterminated string literal");
      const char c = src_[pos_];
      if (c == quote) {
        ++pos_;
        break;
      }
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      if (pos_ + 1 >= src_.size()) error(start, "unterminated string literal");
      const char e = src_[pos_ + 1];
      pos_ += 2;
      const auto hex = [&](int n) -> uint32_t {
        uint32_t v = 0;
        for (int k = 0; k < n; ++k) {
          if (pos_ >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[pos_])))
            error(start, "malformed \\{} escape in string literal", e);
          const char h = src_[pos_++];
          v = v * 16 + static_cast<uint32_t>(is_digit(h) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        return v;
      };
      switch (e) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x': utf8_append(out, hex(2)); break;
        case 'u': utf8_append(out, hex(4)); break;
        case 'U': {
          const uint32_t cp = hex(8);
          if (cp > 0x10ffff) error(start, "\\U escape out of range in string literal");
          utf8_append(out, cp);
          break;
        }
        case 'N': error(start, "unsupported \\N{{...}} escape in string literal");
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; ++k)
              v = v * 8 + static_cast<uint32_t>(src_[pos_++] - '0');
            utf8_append(out, v);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    push(TokenKind::String, std::move(out), start);
  }

  std::string src_;
  const std::string& origin_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source, const std::string& origin) {
  // Newlines normalized to \n everywhere, one trailing newline dropped (Jinja's
  // keep_trailing_newline=False).
  std::string src;
  src.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      src += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      src += source[i];
    }
  }
  if (!src.empty() && src.back() == '\n') src.pop_back();
  return Lexer(std::move(src), origin).run();
}

}  // namespace tessera::jinja
