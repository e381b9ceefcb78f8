// Message frames taken out of a reply's content: the same text whole and
// streamed in any split, frames anywhere, text that only looks like one kept.
#include "generation/reply_frames.h"

#include <random>

#include <gtest/gtest.h>

#include "generation/tool_calls.h"

namespace tessera {
namespace {

// The text pushed in pieces split at random points.
std::string streamed(const ReplyFrames& frames, std::string_view text, uint64_t seed) {
  FrameFilter f(frames);
  std::mt19937_64 rng(seed);
  std::string out;
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min<size_t>(text.size() - at, 1 + rng() % 5);
    out += f.push(text.substr(at, n));
    at += n;
  }
  return out + f.finish();
}

void expect_filtered(ToolCallStyle style, std::string_view text, std::string_view want) {
  const ReplyFrames frames = *reply_frames_of(style);
  EXPECT_EQ(FrameFilter::filter(text, frames), want) << text;
  for (uint64_t seed = 0; seed < 40; ++seed) EXPECT_EQ(streamed(frames, text, seed), want) << text << " seed " << seed;
}

TEST(ReplyFrames, HarmonyMessagesLeaveTheirText) {
  expect_filtered(ToolCallStyle::Harmony, "<|start|>assistant<|channel|>final<|message|>It is noon.<|return|>",
                  "It is noon.");
  expect_filtered(ToolCallStyle::Harmony, "<|channel|>commentary<|message|>Checking.<|end|>", "Checking.");
  // A partial marker at the end is text.
  expect_filtered(ToolCallStyle::Harmony, "a <|start|>assist", "a <|start|>assist");
  // The calls' headers are not frames, in the template's order or the
  // model's (whose channel goes, its recipient stays).
  expect_filtered(ToolCallStyle::Harmony, " to=functions.f<|channel|>commentary json<|message|>{}",
                  " to=functions.f<|channel|>commentary json<|message|>{}");
  expect_filtered(ToolCallStyle::Harmony, "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}",
                  "to=functions.f <|constrain|>json<|message|>{}");
}

TEST(ReplyFrames, AtemRecipientHeadersGo) {
  expect_filtered(ToolCallStyle::Atem, " to=user<|message|>Noon.<|eot|>", "Noon.");
  expect_filtered(ToolCallStyle::Atem, "to=user<|message|>Noon.", "Noon.");
  expect_filtered(ToolCallStyle::Atem, "A.<|eom|><|start|>assistant to=get_weather<|message|><atem:function_calls>",
                  "A.<atem:function_calls>");
  // "to=" inside the text, or without its <|message|>, is text.
  expect_filtered(ToolCallStyle::Atem, "x to=5 then to=y <|message|>", "x to=5 then to=y <|message|>");
  expect_filtered(ToolCallStyle::Atem, "goes to=", "goes to=");
}

TEST(ReplyFrames, SolarAndKimiK3) {
  expect_filtered(ToolCallStyle::SolarOpen, "<|content|>Noon.<|end|>", "Noon.");
  expect_filtered(ToolCallStyle::KimiK3, "<|open|>response<|sep|>Noon.<|close|>response<|sep|><|close|>message<|sep|>",
                  "Noon.");
  EXPECT_FALSE(reply_frames_of(ToolCallStyle::Hermes));
}

}  // namespace
}  // namespace tessera
