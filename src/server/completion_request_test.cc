// The server's door of the generation settings
// (include/tessera/generation_settings.hpp): a request that sets every
// setting's field (setting_fields()) to a value off its default parses into
// exactly those settings, on both endpoints; a setting with no field is
// there with a reason.
#include "server/completion_request.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "api/generation_settings_for_tests.h"
#include "server/api_error.h"

namespace tessera::server {
namespace {

using json = nlohmann::ordered_json;  // key order kept: schemas and tools keep their properties' order

const SettingField* entry_of(const std::string& setting) {
  for (const SettingField& f : setting_fields())
    if (setting == f.setting) return &f;
  return nullptr;
}

TEST(ServerSettings, EveryListedSettingHasAFieldOrAReason) {
  std::set<std::string> listed;
  for_each_generation_setting([&](const GenerationSettingInfo& info, auto) {
    listed.insert(info.name);
    const SettingField* f = entry_of(info.name);
    if (!f) {
      ADD_FAILURE() << "setting " << info.name << " is neither read by the server nor left out with a reason";
      return;
    }
    if (!f->field) {
      EXPECT_TRUE(f->not_here && *f->not_here) << info.name << ": left out without a reason";
    }
  });
  // OpenAI's request fields (chat completions and completions) that carry settings.
  const std::set<std::string> openai = {"max_tokens", "max_completion_tokens", "temperature", "top_p", "seed", "stop"};
  for (const SettingField& f : setting_fields()) {
    EXPECT_TRUE(listed.count(f.setting)) << f.setting << " is not a setting";
    if (f.field) {
      EXPECT_EQ(f.extension, !openai.count(f.field)) << f.field << ": OpenAI's or an extension?";
    }
  }
  EXPECT_EQ(setting_fields().size(), listed.size());
}

TEST(ServerSettings, EverySettingArrives) {
  const GenerationSettings want = testing::off_default_settings();
  json settings = json::object();
  std::vector<std::string> left_out;
  for_each_generation_setting([&](const GenerationSettingInfo& info, auto member) {
    const SettingField* f = entry_of(info.name);
    if (f && f->field)
      settings[f->field] = want.*member;
    else
      left_out.push_back(info.name);
  });
  json chat = settings, completion = settings;
  chat["messages"] = json::array({{{"role", "user"}, {"content", "hi"}}});
  completion["prompt"] = "hi";
  const GenerationSettings from_chat = parse_completion_request(chat, Endpoint::Chat, 1 << 20).request.settings;
  const GenerationSettings from_completion =
      parse_completion_request(completion, Endpoint::Completion, 1 << 20).request.settings;
  // Exactly the settings left out keep their defaults.
  EXPECT_EQ(testing::differing_settings(from_chat, want), left_out) << chat.dump();
  EXPECT_EQ(testing::differing_settings(from_completion, want), left_out) << completion.dump();
}

// OpenAI's image_url content parts: a data: URL's bytes go to the request's
// images in order, each part becomes {"type": "image"} for the chat
// template; a remote URL or a malformed data URL is a 400 naming the part.
TEST(ServerImages, DataUrlsBecomeImagesInOrder) {
  json chat;
  chat["messages"] = json::array(
      {{{"role", "user"},
        {"content", json::array({{{"type", "text"}, {"text", "Compare "}},
                                 {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,Zm9v"}}}},
                                 {{"type", "image_url"}, {"image_url", "data:image/jpeg;base64,YmFy"}}})}}});
  const CompletionRequest c = parse_completion_request(chat, Endpoint::Chat, 64);
  EXPECT_EQ(c.request.images, (std::vector<std::string>{"foo", "bar"}));
  const json content = (*c.request.messages)[0]["content"];
  ASSERT_TRUE(content.is_array());
  EXPECT_EQ(content[0]["text"], "Compare ");
  EXPECT_EQ(content[1], json({{"type", "image"}}));
  EXPECT_EQ(content[2], json({{"type", "image"}}));
}

TEST(ServerImages, RemoteAndMalformedUrlsAreBadRequests) {
  for (const char* url : {"https://example.com/cat.png", "data:image/png;base64,@@", "data:image/png,raw"}) {
    json chat;
    chat["messages"] = json::array(
        {{{"role", "user"}, {"content", json::array({{{"type", "image_url"}, {"image_url", {{"url", url}}}}})}}});
    try {
      parse_completion_request(chat, Endpoint::Chat, 64);
      ADD_FAILURE() << url << " accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400) << url;
      EXPECT_NE(e.body().dump().find("messages[0].content.image_url"), std::string::npos) << e.body().dump();
    }
  }
}

}  // namespace
}  // namespace tessera::server
