// The CLI's door of the generation settings
// (include/tessera/generation_settings.hpp): `tessera run` / `tessera chat`
// with every setting's flag (setting_flags()) set to a value off its default
// parse into exactly those settings.
#include "cli/generation_flags.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "api/generation_settings_for_tests.h"

namespace tessera::cli {
namespace {

// The flag's long name: the last of CLI11's comma-separated names.
std::string long_flag(const std::string& flags) { return flags.substr(flags.rfind(',') + 1); }

template <class T>
void append(std::vector<std::string>& args, const std::string& flag, const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    if (value) args.push_back(flag);
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    for (const std::string& s : value) args.insert(args.end(), {flag, s});
  } else {
    args.insert(args.end(), {flag, fmt::format("{}", value)});
  }
}

TEST(CliSettings, EveryListedSettingHasAFlag) {
  std::set<std::string> listed;
  for_each_generation_setting([&](const GenerationSettingInfo& info, auto) { listed.insert(info.name); });
  std::set<std::string> flagged;
  for (const SettingFlag& f : setting_flags()) {
    EXPECT_TRUE(flagged.insert(f.setting).second) << f.setting << " has two entries";
    EXPECT_TRUE(listed.count(f.setting)) << f.setting << " is not a setting";
  }
  EXPECT_EQ(flagged, listed);
}

TEST(CliSettings, EverySettingArrives) {
  const GenerationSettings want = testing::off_default_settings();
  std::vector<std::string> args = {"tessera-run", "model.bundle"};
  for_each_generation_setting([&](const GenerationSettingInfo& info, auto member) {
    for (const SettingFlag& f : setting_flags())
      if (std::string(f.setting) == info.name) append(args, long_flag(f.flags), want.*member);
  });
  GenerationFlags flags;
  CLI::App app;
  flags.add_to(app);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  ASSERT_NO_THROW(app.parse(static_cast<int>(argv.size()), argv.data()));
  EXPECT_EQ(testing::differing_settings(flags.settings, want), std::vector<std::string>{})
      << fmt::format("{}", fmt::join(args, " "));
  EXPECT_EQ(flags.model, "model.bundle");
}

TEST(CliSettings, DefaultsAreTheLists) {
  GenerationFlags flags;
  CLI::App app;
  flags.add_to(app);
  const char* argv[] = {"tessera-run", "model.bundle"};
  app.parse(2, argv);
  EXPECT_EQ(testing::differing_settings(flags.settings, GenerationSettings{}), std::vector<std::string>{});
}

}  // namespace
}  // namespace tessera::cli
