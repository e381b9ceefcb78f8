// Constrained decoding against a tiny byte-level vocabulary: masks allow
// exactly the tokens that continue a match, random walks through the masks
// always end in text the constraint accepts, and bad constraints fail with
// the setting's name.
#include "generation/output_constraint.h"

#include <cmath>
#include <random>
#include <regex>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/byte_level_tokenizer_for_tests.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace tessera {
namespace {

constexpr int32_t kImStart = 263, kImEnd = 264;  // special; <|im_end|> is the stop token
constexpr int64_t kVocab = 272;                  // the logits are wider than the tokenizer (265 ids)

struct Fixture {
  tok::Tokenizer tokenizer = tok::Tokenizer::from_json(tok::byte_level_json(), nullptr, "test");
  std::vector<int32_t> stops{kImEnd};
  ConstraintCompiler compiler{tokenizer, stops, kVocab};
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

std::vector<int32_t> allowed(ConstraintMatcher& m) {
  std::vector<float> logits(kVocab, 0.0f);
  const int64_t n = m.mask(logits.data());
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < kVocab; ++id)
    if (!std::isinf(logits[id])) ids.push_back(id);
  EXPECT_EQ(n, static_cast<int64_t>(ids.size()));
  return ids;
}

// Random logits, masked, argmax, until the stop token: the text generated,
// through the streaming detokenizer as a user sees it. ascii: bytes >= 0x80
// never drawn. Over all bytes a uniform walk would reach UTF-16 surrogates
// (ED A0..BF xx), which XGrammar 0.2.9's string rule accepts as code points;
// the matcher's SurrogateGuard keeps them out (RandomWalksOverEveryByteGiveJson).
std::string random_walk(ConstraintMatcher& m, uint64_t seed, bool ascii = true, int max_steps = 400) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  tok::StreamingDetokenizer detok(fixture().tokenizer);
  std::string text;
  for (int step = 0; step < max_steps; ++step) {
    std::vector<float> logits(kVocab);
    for (float& l : logits) l = u(rng);
    if (ascii) std::fill(logits.begin() + 0x80, logits.begin() + 0x100, -100.0f);
    EXPECT_GT(m.mask(logits.data()), 0);
    const auto id = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    EXPECT_TRUE(m.accept(id));
    if (id == kImEnd) {
      EXPECT_TRUE(m.terminated());
      return text + detok.finish();
    }
    text += detok.push(id);
  }
  ADD_FAILURE() << "no stop token after " << max_steps << " steps: " << text;
  return text;
}

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

ConstraintMatcher matcher(ConstraintKind kind, const std::string& text) {
  return ConstraintMatcher(fixture().compiler.compile({kind, text}));
}

TEST(OutputConstraint, GrammarAllowsExactlyThePrefixTokens) {
  ConstraintMatcher m = matcher(ConstraintKind::Grammar, R"(root ::= "yes" | "no" | "hello")");
  // 'y', 'n', 'h' and the merged "he", "hell", "hello"; never a special token.
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{'h', 'n', 'y', 256, 258, 259}));
  ASSERT_TRUE(m.accept(258));  // "hell"
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{'o'}));
  EXPECT_FALSE(m.accept('x'));  // refused, nothing changes
  ASSERT_TRUE(m.accept('o'));
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{kImEnd}));  // complete: only the stop token
  EXPECT_FALSE(m.terminated());
  ASSERT_TRUE(m.accept(kImEnd));
  EXPECT_TRUE(m.terminated());
}

// XGrammar 0.2.9's string rule with maxLength let raw control bytes
// through; cmake/xgrammar_patch.cmake fixes it.
TEST(OutputConstraint, JsonStringsNeverTakeRawControlBytes) {
  for (const char* schema : {R"({"type": "string"})", R"({"type": "string", "maxLength": 6})"}) {
    ConstraintMatcher m = matcher(ConstraintKind::JsonSchema, schema);
    ASSERT_TRUE(m.accept('"'));
    for (int32_t id : allowed(m)) EXPECT_GE(id, 0x20) << schema;
  }
  ConstraintMatcher m = matcher(ConstraintKind::Regex, "a\nb");  // other constraints keep them
  ASSERT_TRUE(m.accept('a'));
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{'\n'}));
}

TEST(OutputConstraint, RollbackRestoresTheMask) {
  ConstraintMatcher m = matcher(ConstraintKind::Regex, "[a-c]+x?");
  const std::vector<int32_t> first = allowed(m);
  ASSERT_TRUE(m.accept('a'));
  const std::vector<int32_t> second = allowed(m);
  ASSERT_TRUE(m.accept('b'));
  ASSERT_TRUE(m.accept('x'));
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{kImEnd}));
  m.rollback(2);
  EXPECT_EQ(allowed(m), second);
  m.rollback(1);
  EXPECT_EQ(allowed(m), first);
}

TEST(OutputConstraint, RandomWalksGiveJsonThatMatchesTheSchema) {
  const std::string schema = R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 6},
      "n": {"type": "integer", "minimum": 0, "maximum": 99},
      "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3},
      "ok": {"type": "boolean"}},
    "required": ["name", "n", "tags", "ok"]})";
  for (uint64_t seed = 0; seed < 20; ++seed) {
    ConstraintMatcher m = matcher(ConstraintKind::JsonSchema, schema);
    const std::string text = random_walk(m, seed);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const std::exception& e) {
      std::string hex;
      for (unsigned char c : text) hex += fmt::format("{:02x} ", c);
      ADD_FAILURE() << "seed " << seed << ": not JSON (" << e.what() << "): " << hex;
      continue;
    }
    ASSERT_TRUE(j.is_object()) << text;
    EXPECT_EQ(j.size(), 4u) << text;  // strict: no other properties
    EXPECT_TRUE(j["name"].is_string() && code_points(j["name"].get<std::string>()) <= 6) << text;
    EXPECT_TRUE(j["n"].is_number_integer() && j["n"].get<int>() >= 0 && j["n"].get<int>() <= 99) << text;
    EXPECT_TRUE(j["tags"].is_array() && j["tags"].size() <= 3) << text;
    for (const auto& t : j["tags"]) EXPECT_TRUE(t == "a" || t == "b") << text;
    EXPECT_TRUE(j["ok"].is_boolean()) << text;
  }
}

TEST(OutputConstraint, RandomWalksOverEveryByteGiveJson) {
  for (uint64_t seed = 0; seed < 60; ++seed) {
    ConstraintMatcher m = matcher(ConstraintKind::JsonSchema,
                                  R"({"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 4})");
    const std::string text = random_walk(m, seed, /*ascii=*/false);
    EXPECT_NO_THROW(EXPECT_TRUE(nlohmann::json::parse(text).is_array())) << text;
    // No surrogate (SurrogateGuard): every string is characters, at most 8.
    EXPECT_EQ(text.find("\xEF\xBF\xBD"), std::string::npos) << text;
    for (const auto& item : nlohmann::json::parse(text)) {
      const std::string str = item.get<std::string>();
      EXPECT_LE(std::count_if(str.begin(), str.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }), 8)
          << str;
    }
  }
}

TEST(OutputConstraint, IntegersAreBoundedToTheSafeRange) {
  // Unbounded, digits may go on forever; bounded to 2^53 - 1 at most 16
  // digits fit, with or without a sign.
  for (const char* schema : {R"({"type": "integer"})", R"({"type": ["integer", "null"], "minimum": 0})"}) {
    ConstraintMatcher m = matcher(ConstraintKind::JsonSchema, schema);
    int digits = 0;
    while (m.accept('9')) ++digits;
    EXPECT_EQ(digits, 15) << schema;  // 9 x 16 > 2^53 - 1
  }
  ConstraintMatcher m = matcher(ConstraintKind::JsonSchema, R"({"type": "integer", "maximum": 12})");
  ASSERT_TRUE(m.accept('-'));
  int digits = 0;
  while (m.accept('9')) ++digits;
  EXPECT_EQ(digits, 15);
}

TEST(OutputConstraint, PropertiesComeInTheSchemasOrder) {
  ConstraintMatcher m = matcher(ConstraintKind::JsonSchema, R"({"type": "object", "properties": {
      "zeta": {"type": "boolean"}, "alpha": {"type": "boolean"}}, "required": ["zeta", "alpha"]})");
  for (char c : std::string(R"({"zeta": true, "alpha": false})")) ASSERT_TRUE(m.accept(c)) << c;
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{kImEnd}));
}

TEST(OutputConstraint, RandomWalksMatchTheRegex) {
  const std::regex re("(ab|c)+[0-9]{2}");
  for (uint64_t seed = 0; seed < 20; ++seed) {
    ConstraintMatcher m = matcher(ConstraintKind::Regex, "(ab|c)+[0-9]{2}");
    const std::string text = random_walk(m, seed);
    EXPECT_TRUE(std::regex_match(text, re)) << text;
  }
}

TEST(OutputConstraint, CompiledConstraintsAreShared) {
  auto a = fixture().compiler.compile({ConstraintKind::Regex, "[0-9]+"});
  auto b = fixture().compiler.compile({ConstraintKind::Regex, "[0-9]+"});
  EXPECT_EQ(a.get(), b.get());
  EXPECT_NE(a.get(), fixture().compiler.compile({ConstraintKind::Grammar, "root ::= [0-9]+"}).get());
}

void expect_fails(ConstraintKind kind, const std::string& text, const std::string& subject, const std::string& words) {
  try {
    fixture().compiler.compile({kind, text});
    ADD_FAILURE() << "compiled: " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.subject(), subject) << e.what();
    EXPECT_EQ(std::string(e.problem()).find(".cc:"), std::string::npos) << e.what();  // no source location
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(OutputConstraint, BadConstraintsFailNamingTheSetting) {
  expect_fails(ConstraintKind::JsonSchema, R"({"type": "object", )", "json_schema", "");
  expect_fails(ConstraintKind::JsonSchema, R"({"type": "no-such-type"})", "json_schema", "");
  expect_fails(ConstraintKind::Grammar, R"(root ::= "a)", "grammar", "");
  expect_fails(ConstraintKind::Grammar, R"(start ::= "a")", "grammar", "");  // no root rule
  expect_fails(ConstraintKind::Regex, "(ab", "regex", "");
}

TEST(OutputConstraint, UnsatisfiableSchemasFail) {
  expect_fails(ConstraintKind::JsonSchema, R"({"enum": []})", "json_schema", "enum");
  expect_fails(ConstraintKind::JsonSchema, R"({"type": "integer", "minimum": 5, "maximum": 3})", "json_schema", "");
  expect_fails(ConstraintKind::Regex, "a[]", "regex", "");
}

// A special token that is a reply marker (here <think>, as Qwen's
// vocabulary has it) is chosen as its text; other special tokens never.
TEST(OutputConstraint, ReplyMarkerTokensCountAsTheirText) {
  nlohmann::json j = tok::byte_level_json();
  j["model"]["vocab"]["<think>"] = 265;
  j["added_tokens"].push_back({{"id", 265}, {"content", "<think>"}, {"special", true}, {"normalized", false}});
  const tok::Tokenizer tokenizer = tok::Tokenizer::from_json(j, nullptr, "test");
  const std::vector<int32_t> stops{kImEnd};
  ConstraintCompiler compiler(tokenizer, stops, kVocab);
  ConstraintMatcher m(compiler.compile({ConstraintKind::Grammar, R"(root ::= "<think>" [a-z]+ "</think>")"}));
  const std::vector<int32_t> first = allowed(m);
  EXPECT_NE(std::find(first.begin(), first.end(), 265), first.end());
  EXPECT_EQ(std::find(first.begin(), first.end(), kImStart), first.end());
  ASSERT_TRUE(m.accept(265));
  for (int32_t id : tokenizer.encode("ok</think>", false)) ASSERT_TRUE(m.accept(id));
  ASSERT_TRUE(m.accept(kImEnd));
  EXPECT_TRUE(m.terminated());
}

}  // namespace
}  // namespace tessera
