#include "jinja/lexer.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace tessera::jinja {
namespace {

std::string data_of(const std::string& src) {
  std::string out;
  for (const Token& t : tokenize(src, "t")) {
    if (t.kind == TokenKind::Data) out += t.text;
    else if (t.kind == TokenKind::BlockBegin) out += "<%";
    else if (t.kind == TokenKind::VarBegin) out += "<{";
  }
  return out;
}

TEST(JinjaLexer, TrimAndLstripBlocksAsTransformersConfiguresThem) {
  // lstrip_blocks removes the indentation before {% %}, trim_blocks the newline after.
  EXPECT_EQ(data_of("  {% if x %}\n  a\n  {% endif %}\n  b"), "<%  a\n<%  b");
  // Not before {{ }}.
  EXPECT_EQ(data_of("  {{ x }}\n"), "  <{");
  // '+' keeps the indentation, '-' strips all whitespace including newlines.
  EXPECT_EQ(data_of("  {%+ if x %}"), "  <%");
  EXPECT_EQ(data_of("a \n {%- if x -%} \n b"), "a<%b");
  // Comments behave like blocks and vanish.
  EXPECT_EQ(data_of("A\n  {# c #}\nB"), "A\nB");
  // One trailing newline dropped; \r\n normalized.
  EXPECT_EQ(data_of("x\r\ny\n"), "x\ny");
  EXPECT_EQ(data_of("{% raw %}{{ x }}{% endraw %}"), "{{ x }}");
}

TEST(JinjaLexer, TokensCarryLineAndColumn) {
  const auto toks = tokenize("ab\n  {{ name | f('s\\n') }}", "t");
  ASSERT_GE(toks.size(), 7u);
  EXPECT_EQ(toks[1].kind, TokenKind::VarBegin);
  EXPECT_EQ(toks[1].line, 2);
  EXPECT_EQ(toks[1].col, 3);
  EXPECT_EQ(toks[2].text, "name");
  EXPECT_EQ(toks[2].col, 6);
  EXPECT_EQ(toks[6].kind, TokenKind::String);
  EXPECT_EQ(toks[6].text, "s\n");
}

TEST(JinjaLexer, MalformedInputIsAnErrorWithLocation) {
  try {
    tokenize("ok\n{{ 'open }}", "tpl.jinja");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "tpl.jinja");
    EXPECT_EQ(e.subject(), "line 2, column 4");
    EXPECT_NE(e.problem().find("unterminated string"), std::string::npos);
  }
  EXPECT_THROW(tokenize("{# never closed", "t"), Error);
  EXPECT_THROW(tokenize("{{ x ", "t"), Error);
  EXPECT_THROW(tokenize("{{ x ) }}", "t"), Error);
  EXPECT_THROW(tokenize("{{ x ? }}", "t"), Error);
}

}  // namespace
}  // namespace tessera::jinja
