// The one list of generation settings (include/tessera/generation_settings.hpp)
// and two of its doors: the C++ API's Request and the C API's
// tessera_generation_settings. The server's and the CLI's doors are checked
// in src/server/completion_request_test.cc and src/cli/generation_flags_test.cc,
// Python's in tests/python/test_generation_settings.py; each sets every
// setting off its default (generation_settings_for_tests.h) and checks that
// it arrives.
#include <tessera/generation_settings.hpp>

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <tessera/tessera.h>
#include <tessera/tessera.hpp>

#include "api/c_settings.h"
#include "api/generation_settings_for_tests.h"

namespace tessera {
namespace {

std::vector<std::string> listed_names() {
  std::vector<std::string> names;
  for_each_generation_setting([&](const GenerationSettingInfo& info, auto) { names.push_back(info.name); });
  return names;
}

TEST(GenerationSettingsList, NamesAreUniqueAndDocumented) {
  std::set<std::string> seen;
  for_each_generation_setting([&](const GenerationSettingInfo& info, auto) {
    EXPECT_TRUE(seen.insert(info.name).second) << info.name << " is listed twice";
    EXPECT_NE(std::string(info.doc), "") << info.name << " has no doc line";
  });
  EXPECT_EQ(static_cast<int>(seen.size()), kGenerationSettingCount);
}

// The door tests deliver off_default_settings(): a setting left at its
// default there would pass them without reaching any door.
TEST(GenerationSettingsList, TheDoorTestsSetEverySetting) {
  EXPECT_EQ(testing::differing_settings(testing::off_default_settings(), GenerationSettings{}), listed_names());
}

// The C++ door: a Request is a GenerationSettings, so it has every setting
// (speculation included) under the list's names.
TEST(GenerationSettingsDoors, CppRequestHasEverySetting) {
  static_assert(std::is_base_of_v<GenerationSettings, Request>);
  Request r;
  static_cast<GenerationSettings&>(r) = testing::off_default_settings();
  EXPECT_EQ(r.speculative, "lookup");
  EXPECT_EQ(r.draft_max, 4);
  EXPECT_TRUE(testing::differing_settings(r, testing::off_default_settings()).empty());
}

TEST(GenerationSettingsDoors, CDefaultsAreTheLists) {
  tessera_generation_settings c;
  tessera_generation_settings_init(&c);
  EXPECT_EQ(testing::differing_settings(api::settings_from_c(c), GenerationSettings{}), std::vector<std::string>{});
  EXPECT_STREQ(c.speculative, "off");
  EXPECT_EQ(c.stop.count, 0u);
}

// Every field of the C struct, set by hand: a setting added to the list and
// to the struct but not read into the request fails here by name (the build
// already fails when the struct lacks it).
TEST(GenerationSettingsDoors, CEverySettingArrives) {
  const GenerationSettings want = testing::off_default_settings();
  const char* stops[] = {want.stop[0].c_str(), want.stop[1].c_str()};
  tessera_generation_settings c;
  tessera_generation_settings_init(&c);
  c.max_tokens = want.max_tokens;
  c.temperature = want.temperature;
  c.top_p = want.top_p;
  c.min_p = want.min_p;
  c.repeat_penalty = want.repeat_penalty;
  c.top_k = want.top_k;
  c.repeat_last_n = want.repeat_last_n;
  c.seed = want.seed;
  c.stop = {stops, 2};
  c.ignore_eos = 1;
  c.max_tokens_per_call = want.max_tokens_per_call;
  c.speculative = want.speculative.c_str();
  c.draft_max = want.draft_max;
  c.json_schema = want.json_schema.c_str();
  c.grammar = want.grammar.c_str();
  c.regex = want.regex.c_str();
  c.structural_tag = want.structural_tag.c_str();
  EXPECT_EQ(testing::differing_settings(api::settings_from_c(c), want), std::vector<std::string>{});
}

TEST(GenerationSettingsDoors, CRequestSettingsAreCheckedAndReplaced) {
  tessera_request* q = tessera_request_create();
  ASSERT_NE(q, nullptr);
  tessera_generation_settings c;
  tessera_generation_settings_init(&c);
  const char* bad[] = {"END", nullptr};
  c.stop = {bad, 2};
  EXPECT_EQ(tessera_request_set_settings(q, &c), -1);
  EXPECT_NE(std::string(tessera_last_error()).find("stop"), std::string::npos) << tessera_last_error();
  c.stop = {nullptr, 1};
  EXPECT_EQ(tessera_request_set_settings(q, &c), -1);
  c.stop = {nullptr, 0};
  EXPECT_EQ(tessera_request_set_settings(q, &c), 0);
  EXPECT_EQ(tessera_request_set_settings(q, nullptr), -1);
  EXPECT_EQ(tessera_request_set_settings(nullptr, &c), -1);
  tessera_request_free(q);
}

}  // namespace
}  // namespace tessera
