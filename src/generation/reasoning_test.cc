// Reasoning split off a reply: the markers found in a template, where a
// reply starts from its prompt, and the same split whole and streamed in
// any pieces.
#include "generation/reasoning.h"

#include <random>

#include <gtest/gtest.h>

#include "tokenizer/chat_template.h"

namespace tessera {
namespace {

const ReasoningSyntax kThink = *reasoning_syntax_of([] {
  static const ChatTemplate t = ChatTemplate::parse("{{ '<think>' }}{{ '</think>' }}", "t");
  return &t;
}());

ReasoningSplitter::Split streamed(std::string_view text, ReasoningSyntax syntax, ReasoningStart start, uint64_t seed) {
  ReasoningSplitter splitter(syntax, start);
  std::mt19937_64 rng(seed);
  ReasoningSplitter::Split s;
  auto take = [&](const std::vector<ReplyPiece>& pieces) {
    for (const ReplyPiece& p : pieces) {
      EXPECT_FALSE(p.text.empty());
      (p.reasoning ? s.reasoning : s.content) += p.text;
    }
  };
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min<size_t>(text.size() - at, 1 + rng() % 6);
    take(splitter.push(text.substr(at, n)));
    at += n;
  }
  take(splitter.finish());
  return s;
}

void expect_split(std::string_view text, ReasoningSyntax syntax, ReasoningStart start, std::string_view reasoning,
                  std::string_view content) {
  SCOPED_TRACE(std::string(text));
  const ReasoningSplitter::Split whole = ReasoningSplitter::split(text, syntax, start);
  EXPECT_EQ(whole.reasoning, reasoning);
  EXPECT_EQ(whole.content, content);
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const ReasoningSplitter::Split s = streamed(text, syntax, start, seed);
    EXPECT_EQ(s.reasoning, whole.reasoning);
    EXPECT_EQ(s.content, whole.content);
  }
}

TEST(Reasoning, MarkersFromTheTemplate) {
  EXPECT_FALSE(reasoning_syntax_of(nullptr));
  const ChatTemplate plain = ChatTemplate::parse("{% for m in messages %}{{ m.content }}{% endfor %}", "t");
  EXPECT_FALSE(reasoning_syntax_of(&plain));
  EXPECT_EQ(kThink.begin, "<think>");
  const ChatTemplate gemma4 = ChatTemplate::parse("{{ '<|channel>thought\\n<channel|>' }}", "t");
  ASSERT_TRUE(reasoning_syntax_of(&gemma4));
  EXPECT_EQ(reasoning_syntax_of(&gemma4)->end, "<channel|>");
}

TEST(Reasoning, WhereTheReplyStarts) {
  EXPECT_EQ(reasoning_start("<|im_start|>assistant\n<think>\n", kThink), ReasoningStart::Open);
  EXPECT_EQ(reasoning_start("<|im_start|>assistant\n<think>\n\n</think>\n\n", kThink), ReasoningStart::Skipped);
  EXPECT_EQ(reasoning_start("<think>a</think>b<|im_start|>assistant\n", kThink), ReasoningStart::Optional);
  const ReasoningSyntax channel{"<|channel>thought\n", "<channel|>", ""};
  EXPECT_EQ(reasoning_start("<|turn>model\n<|channel>thought\n<channel|>", channel), ReasoningStart::Skipped);
  EXPECT_EQ(reasoning_start("<|turn>model\n", channel), ReasoningStart::Optional);
  // Kimi K3: its prompt opens the thinking block, or (thinking off) the answer.
  const ChatTemplate kimi_k3 = ChatTemplate::parse("{{ '<|end_of_msg|>' }}", "t");
  ASSERT_TRUE(reasoning_syntax_of(&kimi_k3));
  const ReasoningSyntax k3 = *reasoning_syntax_of(&kimi_k3);
  EXPECT_EQ(reasoning_start("<|open|>message role=\"assistant\"<|sep|><|open|>think<|sep|>", k3), ReasoningStart::Open);
  EXPECT_EQ(reasoning_start("<|open|>message role=\"assistant\"<|sep|><|open|>response<|sep|>", k3),
            ReasoningStart::Skipped);
}

TEST(Reasoning, SplitsWholeAndStreamed) {
  // Opened by the prompt: reasoning up to the end marker.
  expect_split("\nLet me think.\nTwo steps.\n</think>\n\nThe answer.", kThink, ReasoningStart::Open,
               "Let me think.\nTwo steps.", "The answer.");
  // Opened by the reply itself, at its start only.
  expect_split("  <think>hmm</think>Yes.", kThink, ReasoningStart::Optional, "hmm", "Yes.");
  expect_split("No <think> here</think>.", kThink, ReasoningStart::Optional, "", "No <think> here</think>.");
  expect_split("<thin", kThink, ReasoningStart::Optional, "", "<thin");
  // Skipped: all content, markers and all.
  expect_split("<think>x</think>y", kThink, ReasoningStart::Skipped, "", "<think>x</think>y");
  // Cut short inside the block: all reasoning (a partial marker too).
  expect_split("still thinking </thi", kThink, ReasoningStart::Open, "still thinking </thi", "");
  // Gemma 4's channel.
  const ReasoningSyntax channel{"<|channel>thought\n", "<channel|>", ""};
  expect_split("<|channel>thought\nPlan it.<channel|>Done.", channel, ReasoningStart::Optional, "Plan it.", "Done.");
}

}  // namespace
}  // namespace tessera
