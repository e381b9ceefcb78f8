#include "jinja/parser.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "jinja/eval.h"

namespace tessera::jinja {
namespace {

void expect_error(const std::string& src, const std::string& subject, const std::string& problem) {
  try {
    Template t = parse_template(src, "tpl");
    validate(t);
    ADD_FAILURE() << "no error for " << src;
  } catch (const Error& e) {
    EXPECT_EQ(e.subject(), subject) << e.what();
    EXPECT_NE(e.problem().find(problem), std::string::npos) << e.what();
  }
}

TEST(JinjaParser, UnsupportedFeaturesAreNamedWithTheirLocation) {
  expect_error("x\n  {% call f() %}{% endcall %}", "line 2, column 6", "unsupported Jinja feature: '{% call %}' tag");
  expect_error("{% include 'a' %}", "line 1, column 4", "'{% include %}' tag");
  expect_error("{{ x | nosuch }}", "line 1, column 8", "unsupported Jinja feature: filter 'nosuch'");
  expect_error("{{ x is nosuch }}", "line 1, column 6", "unsupported Jinja feature: test 'nosuch'");
  expect_error("{% for x in y recursive %}{% endfor %}", "line 1, column 15", "recursive loops");
  expect_error("{% macro f(*a) %}{% endmacro %}", "line 1, column 12", "*args");
  expect_error("{% do x %}", "line 1, column 4", "unknown tag 'do'");
}

TEST(JinjaParser, SyntaxErrors) {
  expect_error("{% if x %}", "line 1, column 11", "unexpected end of template, expected 'elif' or 'else' or 'endif'");
  expect_error("{% endfor %}", "line 1, column 4", "unexpected 'endfor' tag");
  expect_error("{% break %}", "line 1, column 4", "'break' outside of a loop");
  expect_error("{{ }}", "line 1, column 4", "expected an expression");
  expect_error("{{ a b }}", "line 1, column 6", "expected end of print statement");
}

TEST(JinjaParser, PrecedenceFollowsJinja) {
  // Filters bind tighter than unary minus's operand only: -x|abs is abs(-x);
  // `not` binds looser than `is`; `~` tighter than `+`.
  Template t = parse_template("{{ not a is defined }}", "tpl");
  ASSERT_EQ(t.body.size(), 1u);
  EXPECT_EQ(t.body[0]->expr->kind, Expr::Kind::Not);
  EXPECT_EQ(t.body[0]->expr->args[0]->kind, Expr::Kind::Test);
  t = parse_template("{{ a + b ~ c }}", "tpl");
  EXPECT_EQ(t.body[0]->expr->kind, Expr::Kind::Binary);
  EXPECT_EQ(t.body[0]->expr->args[1]->kind, Expr::Kind::Concat);
  t = parse_template("{{ -x | abs }}", "tpl");
  EXPECT_EQ(t.body[0]->expr->kind, Expr::Kind::Filter);
}

TEST(JinjaParser, DeepNestingIsAnErrorNotAStackOverflow) {
  std::string deep = "{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}";
  expect_error(deep, "line 1, column 104", "nests deeper than");
  std::string ifs;
  for (int i = 0; i < 100000; ++i) ifs += "{% if x %}";
  EXPECT_THROW(parse_template(ifs, "tpl"), Error);
  std::string nots = "{{ " ;
  for (int i = 0; i < 100000; ++i) nots += "not ";
  EXPECT_THROW(parse_template(nots + "x }}", "tpl"), Error);
}

}  // namespace
}  // namespace tessera::jinja
