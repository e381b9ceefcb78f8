#include "generation/reasoning.h"

#include <algorithm>
#include <utility>

#include "generation/reply_text.h"
#include "tokenizer/chat_template.h"

namespace tessera {

namespace {

constexpr ReasoningSyntax kThink{"<think>", "</think>", "\n\n"};
constexpr ReasoningSyntax kChannel{"<|channel>thought\n", "<channel|>", ""};
constexpr ReasoningSyntax kCohere{"<|START_THINKING|>", "<|END_THINKING|>", ""};
constexpr ReasoningSyntax kSeed{"<seed:think>", "</seed:think>", "\n"};
// Reasoning as a message of its own: harmony's analysis channel, Solar
// Open's <|think|> message and ATEM's message to=self, each followed by
// the next message's header.
constexpr ReasoningSyntax kHarmony{"<|channel|>analysis<|message|>", "<|end|>", "<|start|>assistant"};
constexpr ReasoningSyntax kSolar{"<|think|>", "<|end|>", "<|begin|>assistant"};
constexpr ReasoningSyntax kAtem{"to=self<|message|>", "<|eom|>", "<|start|>assistant"};
constexpr ReasoningSyntax kKimiK3{"<|open|>think<|sep|>", "<|close|>think<|sep|>", "", "<|open|>response<|sep|>"};
constexpr ReasoningSyntax kMiniMaxM3{"<mm:think>", "</mm:think>", ""};
constexpr ReasoningSyntax kHy3{"<think:opensource>", "</think:opensource>", ""};

using reply_text::is_space;
using reply_text::partial_marker;
using reply_text::trim_end;

}  // namespace

std::optional<ReasoningSyntax> reasoning_syntax_of(const ChatTemplate* chat_template) {
  if (!chat_template) return std::nullopt;
  const std::string& s = chat_template->source();
  auto has = [&](std::string_view part) { return s.find(part) != std::string::npos; };
  if (has("<|channel|>analysis")) return kHarmony;
  if (has("<|think|>") && has("<|begin|>")) return kSolar;
  if (has("<atem:function_calls>")) return kAtem;
  if (has("<|end_of_msg|>")) return kKimiK3;
  if (has("<mm:think>")) return kMiniMaxM3;
  if (has(":opensource")) return kHy3;
  if (s.find("<|channel>thought") != std::string::npos) return kChannel;
  if (s.find("<|END_THINKING|>") != std::string::npos) return kCohere;
  if (s.find("</seed:think>") != std::string::npos) return kSeed;
  if (s.find("</think>") != std::string::npos) return kThink;
  return std::nullopt;
}

ReasoningStart reasoning_start(std::string_view prompt, const ReasoningSyntax& syntax) {
  const std::string_view tail = trim_end(prompt);
  // The begin marker may end in whitespace ("<|channel>thought\n").
  const std::string_view begin = trim_end(syntax.begin);
  if (tail.ends_with(syntax.end)) return ReasoningStart::Skipped;
  if (!syntax.answer.empty() && tail.ends_with(syntax.answer)) return ReasoningStart::Skipped;
  if (tail.ends_with(begin)) return ReasoningStart::Open;
  return ReasoningStart::Optional;
}

ReasoningSplitter::ReasoningSplitter(ReasoningSyntax syntax, ReasoningStart start)
    : syntax_(syntax),
      state_(start == ReasoningStart::Open      ? State::Reasoning
             : start == ReasoningStart::Skipped ? State::Content
                                                : State::Start) {}

std::vector<ReplyPiece> ReasoningSplitter::push(std::string_view text) {
  std::vector<ReplyPiece> out;
  auto emit = [&](bool reasoning, std::string_view piece) {
    if (piece.empty()) return;
    if (!out.empty() && out.back().reasoning == reasoning) out.back().text += piece;
    else out.push_back({reasoning, std::string(piece)});
  };
  buffer_ += text;
  for (;;) {
    switch (state_) {
      case State::Start: {
        size_t i = 0;
        while (i < buffer_.size() && is_space(buffer_[i])) ++i;
        const std::string_view rest = std::string_view(buffer_).substr(i);
        if (rest.starts_with(syntax_.begin)) {
          buffer_.erase(0, i + syntax_.begin.size());
          state_ = State::Reasoning;
          continue;
        }
        if (syntax_.begin.starts_with(rest)) return out;  // all whitespace, or a part of the marker: wait
        state_ = State::Content;
        continue;
      }
      case State::Reasoning: {
        const size_t end = buffer_.find(syntax_.end);
        size_t upto = end != std::string::npos ? end : buffer_.size() - partial_marker(buffer_, syntax_.end);
        size_t from = 0;
        if (!reasoning_began_)
          while (from < upto && is_space(buffer_[from])) ++from;
        size_t keep = upto;
        while (keep > from && is_space(buffer_[keep - 1])) --keep;  // whitespace that may end the block waits
        if (keep > from) {
          emit(true, std::string_view(buffer_).substr(from, keep - from));
          reasoning_began_ = true;
        }
        if (end == std::string::npos) {
          buffer_.erase(0, keep > from ? keep : from);
          return out;
        }
        buffer_.erase(0, end + syntax_.end.size());
        state_ = State::AfterReasoning;
        continue;
      }
      case State::AfterReasoning: {
        size_t i = 0;
        while (i < buffer_.size() && is_space(buffer_[i])) ++i;
        buffer_.erase(0, i);
        if (buffer_.empty()) return out;
        state_ = State::Content;
        continue;
      }
      case State::Content:
        emit(false, buffer_);
        buffer_.clear();
        return out;
    }
  }
}

std::vector<ReplyPiece> ReasoningSplitter::finish() {
  std::vector<ReplyPiece> out;
  if (buffer_.empty()) return out;
  if (state_ == State::Start) {
    out.push_back({false, buffer_});  // whitespace, or a part of the marker: the text as it is
  } else if (state_ == State::Reasoning) {
    // Cut short inside the block: all of it is reasoning (a partial end
    // marker too), without trailing whitespace.
    std::string_view rest = trim_end(buffer_);
    if (!reasoning_began_)
      while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
    if (!rest.empty()) out.push_back({true, std::string(rest)});
  }
  buffer_.clear();
  return out;
}

ReasoningSplitter::Split ReasoningSplitter::split(std::string_view text, ReasoningSyntax syntax, ReasoningStart start) {
  ReasoningSplitter splitter(syntax, start);
  Split s;
  auto take = [&](const std::vector<ReplyPiece>& pieces) {
    for (const ReplyPiece& p : pieces) (p.reasoning ? s.reasoning : s.content) += p.text;
  };
  take(splitter.push(text));
  take(splitter.finish());
  return s;
}

}  // namespace tessera
