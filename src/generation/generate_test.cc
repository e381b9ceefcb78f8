#include "generation/generate.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace tessera {
namespace {

TEST(MakeGenerateOptions, CopiesEverySetting) {
  GenerationSettings s;
  s.max_tokens = 7;
  s.temperature = 0.5f;
  s.top_k = 3;
  s.top_p = 0.9f;
  s.min_p = 0.1f;
  s.repeat_penalty = 1.2f;
  s.repeat_last_n = -1;
  s.seed = 42;
  s.stop = {"\n\n"};
  s.ignore_eos = true;
  s.max_tokens_per_call = 8;
  const GenerateOptions o = make_generate_options(s);
  EXPECT_EQ(o.max_tokens, 7);
  EXPECT_EQ(o.sampling.temperature, 0.5f);
  EXPECT_EQ(o.sampling.top_k, 3);
  EXPECT_EQ(o.sampling.top_p, 0.9f);
  EXPECT_EQ(o.sampling.min_p, 0.1f);
  EXPECT_EQ(o.sampling.repeat_penalty, 1.2f);
  EXPECT_EQ(o.sampling.repeat_last_n, -1);
  EXPECT_EQ(o.sampling.seed, 42u);
  EXPECT_EQ(o.stop_strings, std::vector<std::string>{"\n\n"});
  EXPECT_TRUE(o.ignore_eos);
  EXPECT_EQ(o.max_tokens_per_call, 8);
}

std::string subject_of(const GenerationSettings& s) {
  try {
    make_generate_options(s);
  } catch (const Error& e) {
    return e.subject();
  }
  return "";
}

TEST(MakeGenerateOptions, NamesTheFirstBadSetting) {
  const auto with = [](auto change) {
    GenerationSettings s;
    change(s);
    return subject_of(s);
  };
  EXPECT_EQ(with([](auto&) {}), "");
  EXPECT_EQ(with([](auto& s) { s.max_tokens = 0; }), "max_tokens");
  EXPECT_EQ(with([](auto& s) { s.max_tokens_per_call = -1; }), "max_tokens_per_call");
  EXPECT_EQ(with([](auto& s) { s.stop = {"a", ""}; }), "stop");
  EXPECT_EQ(with([](auto& s) { s.temperature = -1; }), "temperature");
  EXPECT_EQ(with([](auto& s) { s.top_k = -1; }), "top_k");
  EXPECT_EQ(with([](auto& s) { s.top_p = 0; }), "top_p");
  EXPECT_EQ(with([](auto& s) { s.min_p = 2; }), "min_p");
  EXPECT_EQ(with([](auto& s) { s.repeat_penalty = 0; }), "repeat_penalty");
  EXPECT_EQ(with([](auto& s) { s.repeat_last_n = -2; }), "repeat_last_n");
}

}  // namespace
}  // namespace tessera
