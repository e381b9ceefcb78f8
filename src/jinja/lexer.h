// Lexer of the Jinja subset used by chat templates, reproducing Jinja2 3.1's
// lexer as transformers configures it (ImmutableSandboxedEnvironment with
// trim_blocks=True, lstrip_blocks=True, default delimiters,
// keep_trailing_newline=False):
//   - `{%- ` / `{{-` / `{#-` strip all whitespace before the tag, `-%}` / `-}}`
//     / `-#}` all whitespace after it;
//   - trim_blocks: the first newline after a block or comment tag is removed
//     (`+%}` keeps it);
//   - lstrip_blocks: spaces and tabs from the start of a line up to a block or
//     comment tag are removed (`{%+` keeps them); not for `{{`;
//   - one trailing newline of the source is dropped; \r\n and \r in template
//     text become \n;
//   - `{% raw %}...{% endraw %}` is template text.
// Comments are dropped here. Every token carries its 1-based line and column.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::jinja {

enum class TokenKind {
  Data,        // template text (already whitespace-controlled)
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,        // identifier or keyword
  String,      // string literal, unescaped
  Integer,
  Float,
  Operator,    // + - * / // % ** ~ == != < > <= >= = . : | , ( ) [ ] { }
  Eof,
};

struct Token {
  TokenKind kind;
  std::string text;  // Data/Name/String/Operator text; the literal for numbers
  int line = 1;
  int col = 1;
};

// Throws Error(origin, "line L, column C", problem) for malformed input
// (unterminated tag, string or comment, unexpected character).
std::vector<Token> tokenize(const std::string& source, const std::string& origin);

// "line 3, column 7": the subject of every template error.
std::string location(int line, int col);

}  // namespace tessera::jinja
