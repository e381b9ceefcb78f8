// Reasoning ("thinking") in a chat reply: the text a model writes between
// its template's reasoning markers before it answers, split off as OpenAI-
// style `reasoning_content` (the field vLLM, llama.cpp and DeepSeek's API
// use), the rest left as `content`.
//
// The markers come from the template's source:
//   think     <think> ... </think>              (Qwen3, Qwen3.5, QwQ, DeepSeek-R1, SmolLM3, ...)
//   channel   <|channel>thought\n ... <channel|>  (Gemma 4)
//   cohere    <|START_THINKING|> ... <|END_THINKING|>  (Command R7B, Command A)
//   seed      <seed:think> ... </seed:think>     (Seed-OSS)
//   harmony   <|channel|>analysis<|message|> ... <|end|>  (gpt-oss)
//   Solar     <|think|> ... <|end|>              (Solar Open)
//   ATEM      to=self<|message|> ... <|eom|>     (muse-glimmer)
//   Kimi K3   <|open|>think<|sep|> ... <|close|>think<|sep|>
//   MiniMax M3 <mm:think> ... </mm:think>;  Hy3 <think:opensource> ... </think:opensource>
//
// Where a reply starts depends on the prompt the template rendered:
//   Open      the prompt ends inside a reasoning block (Qwen3.5 writes
//             "<think>\n" after its generation prompt): the reply starts
//             as reasoning and the end marker closes it;
//   Skipped   the prompt ends with a closed, empty block (Qwen3 with
//             enable_thinking=false, Gemma 4 without thinking): the reply
//             is all content;
//   Optional  neither: the reply may open a block with the begin marker
//             (Qwen3 by default), at its start only.
// A reply cut short inside a block is all reasoning.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

class ChatTemplate;

struct ReasoningSyntax {
  std::string_view begin, end;
  // What the template writes between the end marker and the content
  // ("\n\n" for <think>): a constrained reply writes it too.
  std::string_view separator;
  // Set (Kimi K3): the marker that opens the answer; a prompt that ends
  // with it has skipped reasoning (its thinking turned off).
  std::string_view answer = "";
};

// The template's reasoning markers, if it has any.
std::optional<ReasoningSyntax> reasoning_syntax_of(const ChatTemplate* chat_template);

enum class ReasoningStart { Open, Skipped, Optional };
ReasoningStart reasoning_start(std::string_view prompt, const ReasoningSyntax& syntax);

// One piece of a reply: reasoning or content.
struct ReplyPiece {
  bool reasoning = false;
  std::string text;
};

// Splits a reply streamed in pieces. Everything pushed then finish() gives
// exactly what split() gives for the whole text: reasoning with the markers
// and the whitespace around them taken off, content as written (its leading
// whitespace after the block taken off).
class ReasoningSplitter {
 public:
  ReasoningSplitter(ReasoningSyntax syntax, ReasoningStart start);
  std::vector<ReplyPiece> push(std::string_view text);
  std::vector<ReplyPiece> finish();

  struct Split {
    std::string reasoning, content;
  };
  static Split split(std::string_view text, ReasoningSyntax syntax, ReasoningStart start);

 private:
  enum class State { Start, Reasoning, AfterReasoning, Content };
  ReasoningSyntax syntax_;
  State state_;
  std::string buffer_;          // text held back: a possible marker, or whitespace
  bool reasoning_began_ = false;  // reasoning text handed out (its leading whitespace is dropped before)
};

}  // namespace tessera
