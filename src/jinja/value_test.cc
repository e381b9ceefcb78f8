#include "jinja/value.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace tessera::jinja {
namespace {

TEST(JinjaValue, FloatReprMatchesPython) {
  EXPECT_EQ(py_float_repr(1.0), "1.0");
  EXPECT_EQ(py_float_repr(-2.5), "-2.5");
  EXPECT_EQ(py_float_repr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(py_float_repr(1e16), "1e+16");
  EXPECT_EQ(py_float_repr(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(py_float_repr(0.0001), "0.0001");
  EXPECT_EQ(py_float_repr(0.00001), "1e-05");
  EXPECT_EQ(py_float_repr(1.5e-5), "1.5e-05");
  EXPECT_EQ(py_float_repr(1.5e300), "1.5e+300");
  EXPECT_EQ(py_float_repr(-0.0), "-0.0");
  EXPECT_EQ(py_float_repr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(py_float_repr(std::nan("")), "nan");
}

TEST(JinjaValue, StrAndReprMatchPython) {
  EXPECT_EQ(py_str(Value()), "");
  EXPECT_EQ(py_str(Value::none()), "None");
  EXPECT_EQ(py_str(Value::boolean(true)), "True");
  EXPECT_EQ(py_str(Value::integer(-42)), "-42");
  EXPECT_EQ(py_string_repr("it's"), "\"it's\"");
  EXPECT_EQ(py_string_repr("a'\"b"), "'a\\'\"b'");
  EXPECT_EQ(py_string_repr("tab\there\n\x01 é"), "'tab\\there\\n\\x01 é'");
  const Value list = Value::list({Value::integer(1), Value::string("a"), Value::none(), Value::floating(2)});
  EXPECT_EQ(py_str(list), "[1, 'a', None, 2.0]");
  EXPECT_EQ(py_str(Value::list({Value::integer(1)}, true)), "(1,)");
  Dict d;
  d.set(Value::string("k"), list);
  EXPECT_EQ(py_str(Value::dict(d)), "{'k': [1, 'a', None, 2.0]}");
}

TEST(JinjaValue, EqualityAndTruthinessArePython) {
  EXPECT_TRUE(Value::integer(1).equals(Value::floating(1.0)));
  EXPECT_TRUE(Value::boolean(true).equals(Value::integer(1)));
  EXPECT_FALSE(Value::string("1").equals(Value::integer(1)));
  EXPECT_FALSE(Value::list({}).equals(Value::list({}, true)));
  EXPECT_TRUE(Value().equals(Value()));
  EXPECT_FALSE(Value().truthy());
  EXPECT_FALSE(Value::string("").truthy());
  EXPECT_FALSE(Value::floating(0.0).truthy());
  EXPECT_TRUE(Value::list({Value::none()}).truthy());
}

TEST(JinjaValue, JsonDumpsMatchesPython) {
  const auto j = nlohmann::ordered_json::parse(R"({"b": [1, 2.0, null, true], "a": "é\"\n\u0001<&>"})");
  const Value v = Value::from_json(j);
  JsonDumpOptions opt;
  EXPECT_EQ(*py_json_dumps(v, opt, nullptr), R"({"b": [1, 2.0, null, true], "a": "é\"\n\u0001<&>"})");
  opt.sort_keys = true;
  EXPECT_EQ(*py_json_dumps(v, opt, nullptr), R"({"a": "é\"\n\u0001<&>", "b": [1, 2.0, null, true]})");
  JsonDumpOptions indented;
  indented.indent = "  ";
  indented.item_separator = ",";
  EXPECT_EQ(*py_json_dumps(Value::from_json(nlohmann::ordered_json::parse(R"({"a": [1], "e": {}})")), indented, nullptr),
            "{\n  \"a\": [\n    1\n  ],\n  \"e\": {}\n}");
  JsonDumpOptions ascii;
  ascii.ensure_ascii = true;
  EXPECT_EQ(*py_json_dumps(Value::string("é🙂"), ascii, nullptr), R"("\u00e9\ud83d\ude42")");
  std::string bad;
  EXPECT_FALSE(py_json_dumps(Value(), opt, &bad).has_value());
  EXPECT_EQ(bad, "Undefined");
}

TEST(JinjaValue, Utf8CodePointsAndMalformedBytesRoundTrip) {
  EXPECT_EQ(utf8_length("héllo🙂"), 6u);
  const std::string bad = "a\xff\xc3";
  std::string back;
  for (uint32_t cp : utf8_code_points(bad)) utf8_append(back, cp);
  EXPECT_EQ(back, bad);
  EXPECT_TRUE(py_isspace(0x3000));
  EXPECT_FALSE(py_isspace('x'));
}

}  // namespace
}  // namespace tessera::jinja
