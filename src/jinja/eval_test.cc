#include "jinja/eval.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace tessera::jinja {
namespace {

// Expected outputs are what transformers' Jinja environment renders.
std::string render_text(const std::string& src, const RenderLimits& limits = {}) {
  Template t = parse_template(src, "tpl");
  validate(t);
  Dict ctx;
  ctx.set(Value::string("msgs"), Value::from_json(nlohmann::ordered_json::parse(
                                     R"([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                                         {"role": "user", "content": "c"}])")));
  ctx.set(Value::string("d"), Value::from_json(nlohmann::ordered_json::parse(R"({"b": 1, "a": 2})")));
  return render(t, ctx, limits);
}

TEST(JinjaEval, WhitespaceControl) {
  EXPECT_EQ(render_text("  {% if true %}\n  x\n  {% endif %}\n  y\n"), "  x\n  y");
  EXPECT_EQ(render_text("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(render_text("{# c #}\nA {#- t -#}   B"), "AB");
}

TEST(JinjaEval, PythonValueFormatting) {
  EXPECT_EQ(render_text("{{ 1.0 }} {{ 1e16 }} {{ 1.5e-5 }} {{ 0.1 + 0.2 }} {{ 10 / 4 }} {{ -7 // 2 }} {{ -7 % 3 }}"),
            "1.0 1e+16 1.5e-05 0.30000000000000004 2.5 -4 2");
  EXPECT_EQ(render_text("{{ [1, 'a', none, true] }} {{ {'k': \"it's\"} }} {{ (1,) }}"),
            "[1, 'a', None, True] {'k': \"it's\"} (1,)");
  EXPECT_EQ(render_text("{{ {'a': 'é\"\\n', 'b': [1, 2.0, none]} | tojson }}|{{ {'a': [1]} | tojson(indent=2) }}"),
            "{\"a\": \"é\\\"\\n\", \"b\": [1, 2.0, null]}|{\n  \"a\": [\n    1\n  ]\n}");
}

TEST(JinjaEval, ScopingNamespacesAndMacros) {
  EXPECT_EQ(render_text("{% set ns = namespace(n=0) %}{% for i in range(4) if i != 1 %}{% set ns.n = ns.n + i %}"
                        "{{ loop.index }}{% endfor %}={{ ns.n }}"),
            "123=5");
  // A loop body's set stays in the loop; an if-block's does not.
  EXPECT_EQ(render_text("{% set x = 1 %}{% for i in range(2) %}{% set x = 5 %}{% endfor %}{{ x }}"
                        "{% if true %}{% set x = 7 %}{% endif %}{{ x }}"),
            "17");
  EXPECT_EQ(render_text("{% macro m(a, b='B') %}[{{ a }}{{ b }}]{% endmacro %}{{ m(1) }}{{ m(2, b=3) }}"), "[1B][23]");
}

TEST(JinjaEval, FiltersTestsAndMethods) {
  EXPECT_EQ(render_text("{{ 'a,b'.split(',') }} {{ '  x '.strip() }} {{ 'abc'[::-1] }} {{ [1,2,3][1:] }} "
                        "{{ 'hi' | upper }} {{ 'Ab' is lower }}"),
            "['a', 'b'] x cba [2, 3] HI False");
  EXPECT_EQ(render_text("{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }} "
                        "{{ msgs | length }} {{ msgs[-1].content }}"),
            "a,c 3 c");
  EXPECT_EQ(render_text("{{ d | dictsort }} {{ d.get('zz', 3) }} {% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %} "
                        "{{ 'b' in d }}"),
            "[('a', 2), ('b', 1)] 3 b1a2 True");
}

TEST(JinjaEval, RaiseExceptionCarriesTheTemplatesMessage) {
  try {
    render_text("line1\n{{ raise_exception('Roles must alternate ' ~ 2) }}");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "tpl");
    EXPECT_EQ(e.subject(), "line 2, column 4");
    EXPECT_EQ(e.problem(), "Roles must alternate 2");
  }
}

TEST(JinjaEval, UndefinedAndTypeErrors) {
  EXPECT_EQ(render_text("{{ nope }}{{ nope | length }}{{ nope is defined }}"), "0False");
  EXPECT_THROW(render_text("{{ nope.attr }}"), Error);
  EXPECT_THROW(render_text("{{ nope + 1 }}"), Error);
  EXPECT_THROW(render_text("{{ 1 + 'a' }}"), Error);
  EXPECT_THROW(render_text("{{ 1 < 'a' }}"), Error);
  EXPECT_THROW(render_text("{{ 9223372036854775807 + 1 }}"), Error);
  EXPECT_THROW(render_text("{{ 1 // 0 }}"), Error);
  EXPECT_THROW(render_text("{{ none | tojson }}{{ nope | tojson }}"), Error);
}

TEST(JinjaEval, HostileTemplatesHitLimits) {
  RenderLimits small;
  small.max_iterations = 10000;
  small.max_output_bytes = 1 << 16;
  EXPECT_THROW(render_text("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", small), Error);
  EXPECT_THROW(render_text("{% for i in range(1000000) %}{% endfor %}", small), Error);
  EXPECT_THROW(render_text("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", small), Error);
  EXPECT_THROW(render_text("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                           small),
               Error);
  EXPECT_THROW(render_text("{{ 'x' * 100000000000 }}", small), Error);
  EXPECT_THROW(render_text("{% for i in range(100) %}{{ 'y' * 1000 }}{% endfor %}", small), Error);
  try {
    render_text("{% for i in range(100000) %}{% endfor %}{% for i in range(100000) %}{% endfor %}", small);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.problem().find("10000 loop iterations"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::jinja

// What the llama.cpp template collection needs (tests/python/test_llamacpp_template_suite.py
// checks them against transformers on the real templates).
TEST(JinjaEval, FilterBlocksStrFormatMarkupAndDeferredUnknownFilters) {
  auto render = [](const std::string& src) { return tessera::jinja::render_text(src); };
  EXPECT_EQ(render("{% filter upper | trim %}  ab{{ 'c' }}  {% endfilter %}|"), "ABC|");
  EXPECT_EQ(render("{{ '<{}:{x}>{{}}'.format(1, x='y') }}{{ '{0}{0}{1!r}'.format('a', 'b') }}"), "<1:y>{}aa'b'");
  EXPECT_THROW(render("{{ '{:>4}'.format(1) }}"), tessera::Error);
  EXPECT_THROW(render("{{ '{}{0}'.format(1) }}"), tessera::Error);
  // Markup + str escapes the str; ~ does not.
  EXPECT_EQ(render("{{ 'a'|safe + '<b>' + '\"'|e }}|{{ 'a'|safe ~ '<b>' }}"), "a&lt;b&gt;&#34;|a<b>");
  // An unknown filter inside an if runs only when reached (Jinja's soft frames).
  EXPECT_EQ(render("{% if false %}{{ x | from_json }}{% endif %}ok"), "ok");
  try {
    render("{% if true %}\n{{ '1' | from_json }}{% endif %}");
    FAIL() << "no error";
  } catch (const tessera::Error& e) {
    EXPECT_EQ(e.subject(), "line 2, column 10");
    EXPECT_NE(e.problem().find("No filter named 'from_json' found."), std::string::npos);
  }
  EXPECT_THROW(render("{% for i in [] %}{{ x | from_json }}{% endfor %}"), tessera::Error);  // not soft
  // select / map over none are empty (Jinja's `if value:` guard).
  EXPECT_EQ(render("{{ none | selectattr('a') | list }}{{ none | map(attribute='a') | list }}"), "[][]");
  EXPECT_THROW(render("{% set l = [] %}{{ l.append(1) }}"), tessera::Error);
}
