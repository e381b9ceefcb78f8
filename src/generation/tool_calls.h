// Tool calling: OpenAI's `tools`, `tool_choice` and `parallel_tool_calls`
// on a model's own chat template, its output parsed back into `tool_calls`.
//
// A model writes calls in the format its template teaches it; each format
// is a style here, chosen from the template's source:
//
//   Hermes   the template writes <tool_call> JSON blocks (Qwen2.5, Qwen3,
//            Hermes 2 / 3):
//              <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//            The tools go to the template (its `tools` variable); earlier
//            assistant calls go back as `tool_calls` with their arguments
//            as objects, results as `tool` messages, as the template wants.
//   Llama3   Llama 3.1 - 3.3 templates: one bare JSON call per reply,
//              {"name": "f", "parameters": {...}}
//            tools through the template, results as `tool` messages.
//   QwenXml  Qwen3.5, Qwen3.6, Qwen3-Coder: XML blocks, a string argument as
//            its raw text, any other as JSON,
//              <tool_call>\n<function=f>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>
//   Gemma4   Gemma 4: keys bare, strings between <|"|> markers,
//              <|tool_call>call:f{city:<|"|>Paris<|"|>,days:2}<tool_call|>
//            (both: tools and calls through the template as for Hermes).
//   Pythonic LFM2, LFM2.5: a list of Python calls, arguments as literals,
//              <|tool_call_start|>[f(city="Paris", days=2)]<|tool_call_end|>
//            tools through the template; its templates know no
//            `tool_calls`, so earlier calls go back written so in the
//            assistant's content. Under the constraint a call writes its
//            required arguments (and, after them, optional ones) in the
//            schema's order, values in JSON's spelling; a tool without
//            required arguments is called with none.
//   Mistral  Mistral Small 3.2, Devstral, Ministral 3:
//              [TOOL_CALLS]f[ARGS]{"city": "Paris"}
//   MistralList  Mistral Nemo: [TOOL_CALLS][{"name": "f", "arguments": {...}}]
//            (both: tools and calls through the template, call ids made
//            the 9 letters and digits its templates insist on; the calls
//            run to the end of the reply and are read there).
//   GlmXml   GLM 4.6 / 4.7, Ling 3:
//              <tool_call>f<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>
//   SeedXml  Seed-OSS: Qwen XML in <seed:tool_call>, values without newlines.
//   DeepSeekV3 / DeepSeekR1 / Kimi / MiniMaxXml / MiniMaxJson / DeepSeekV32 /
//   DeepSeekV4: one section of calls between a pair of markers
//              (generation/tool_call_readers.h spells each).
//   Nemotron / Apriel / FireFunction / Granite / CommandR / CommandRPlus /
//   Apertus: a JSON list of
//            calls after a marker,
//              <TOOLCALL>[{"name": "f", "arguments": {...}}, ...]</TOOLCALL>
//            (Apriel's <tool_calls>; Firefunction's " functools" and
//            Granite's <|tool_call|> lists end the reply; Command R's
//            calls are {"tool_call_id": "0", "tool_name": "f", "parameters":
//            {...}} in <|START_ACTION|>; Command R+'s the same without the
//            id after "Action:\n```json"; Apertus's {"f": {...}} in
//            <|tools_prefix|>). Granite's template knows no `tool_calls`:
//            earlier calls go back in the content.
//   Functionary  Functionary v3.1: <function=f>{"city": "Paris"}</function>
//   FunctionaryV32  Functionary v3.2: messages >>>RECIPIENT\nBODY, the first
//            one's >>> written by the generation prompt: recipient "all" is
//            text, any other a call with BODY its JSON arguments,
//              all\nChecking.>>>get_weather\n{"city": "Paris"}
//   Harmony  gpt-oss: one call per reply, a message of its own after any
//            reasoning (the analysis channel), ended by <|call|>,
//              <|start|>assistant to=functions.f<|channel|>commentary json<|message|>{...}<|call|>
//   SolarOpen  <|tool_calls|><|tool_call:begin|>ID<|tool_call:name|>f<|tool_call:args|>{...}<|tool_call:end|><|calls|>
//   KimiK3   <|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|>
//              <|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|><|close|>call<|sep|>...
//   MiniMaxM3  XML with a namespace token before every tag, objects and
//            lists as nested elements: ]<]minimax[>[<invoke name="f">]<]minimax[>[<city>Paris]<]minimax[>[</city>...
//   Hy3      GLM XML's pairs in <tool_calls:opensource>, markers :opensource
//   MiniCpm5 <function name="f"><param name="city">Paris</param></function>, a call per line
//   Atem     muse-glimmer: <atem:function_calls> of <atem:invoke name="f">
//            with <atem:parameter name="city">Paris</atem:parameter>
//   GigaChat3 / GigaChat31  one JSON call {"name": "f", "arguments": {...}}
//            after "function call<|role_sep|>\n" (v3) or <|function_call|> (v3.1)
//   (Harmony, Solar Open, Kimi K3 and ATEM frame a reply's messages with
//   headers of their own: generation/reply_frames.h takes them out of the content.)
//   Generic  a template without tools (SmolLM2, Gemma 3): the tools and the
//            reply format are described in a system message, and the reply
//            is one JSON object, {"tool_calls": [{"name": "f", "arguments":
//            {...}}]} or {"response": "text"} (llama.cpp's generic format).
//            Earlier calls go back as that JSON, results as user messages.
//
// Unless tool_choice is "none" the output is constrained
// (generation/output_constraint.h) so that every call parses and its
// arguments validate against the tool's parameter schema: Hermes with an
// XGrammar structural tag (free text, and after "<tool_call>" one of the
// tools' blocks; "required" / a named function: calls only; Llama3, QwenXml
// and Gemma4 alike, Llama3's trigger the call's own {"name": ", the
// arguments in XGrammar's qwen_xml / gemma styles), Generic with a JSON
// Schema of the reply object. A template with reasoning markers
// (generation/reasoning.h) gets its reasoning block before the calls: a
// prompt that opened one has it closed first, and where the reply may open
// one, it may.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <tessera/generation_settings.hpp>

#include "generation/output_constraint.h"
#include "generation/reasoning.h"
#include "generation/reply_frames.h"
#include "generation/tool_call_readers.h"

namespace tessera {

class ChatTemplate;

enum class ToolCallStyle {
  Hermes,
  Llama3,
  QwenXml,
  Gemma4,
  Pythonic,
  Mistral,
  MistralList,
  GlmXml,
  DeepSeekV3,
  DeepSeekR1,
  Kimi,
  MiniMaxXml,
  MiniMaxJson,
  Nemotron,
  Apriel,
  FireFunction,
  Granite,
  CommandR,
  CommandRPlus,
  Apertus,
  SeedXml,
  DeepSeekV32,
  DeepSeekV4,
  Functionary,
  FunctionaryV32,
  Harmony,
  SolarOpen,
  KimiK3,
  MiniMaxM3,
  Hy3,
  MiniCpm5,
  Atem,
  GigaChat3,
  GigaChat31,
  Generic
};
const char* tool_call_style_name(ToolCallStyle style);
// Hermes when the template writes <tool_call> blocks of JSON, Llama3 for
// Llama 3's bare JSON calls, QwenXml for <function=...> blocks with
// <parameter=...>, Gemma4 for <|tool_call>call:, Pythonic for LFM2's tool
// list, Mistral / MistralList for [TOOL_CALLS], GlmXml for <arg_key>,
// DeepSeekV3 / DeepSeekR1 for <｜tool▁calls▁begin｜> blocks (R1's with a
// ```json fence), Kimi for <|tool_calls_section_begin|>, MiniMaxXml for
// M2's <minimax:tool_call> <invoke> blocks, MiniMaxJson for M1's
// <tool_calls> JSON lines, DeepSeekV32 / DeepSeekV4 for DSML, the JSON-list
// styles for their markers, SeedXml for <seed:tool_call>, Functionary for
// <function=NAME>{...}, else Generic (also for no template).
ToolCallStyle tool_call_style_of(const ChatTemplate* chat_template);

// How a template reads an assistant turn's calls. Most take each call's
// arguments as an object (`| tojson`, or its items); a few concatenate them
// as JSON text (DeepSeek R1's Llama distill: `'```json\n' + arguments`),
// which an object would make fail.
struct CallMessageForm {
  bool text_arguments = false;
};
CallMessageForm call_message_form_of(const ChatTemplate* chat_template);

enum class ToolChoice { Auto, None, Required, Named };

// What a request asks, checked: Error("request", "tools" | "tool_choice" |
// "parallel_tool_calls", problem) for anything malformed (a tool without a
// name, a named choice that is not a tool, ...).
struct ToolRequest {
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // OpenAI's [{"type": "function", "function": {...}}]
  ToolChoice choice = ToolChoice::Auto;
  std::string named;     // ToolChoice::Named: the function
  bool parallel = true;  // more than one call per reply

  // tool_choice / parallel_tool_calls may be null (absent).
  static ToolRequest parse(const nlohmann::ordered_json& tools, const nlohmann::ordered_json* tool_choice,
                           const nlohmann::ordered_json* parallel_tool_calls);
};

struct ToolCall {
  std::string id;         // "call_<reply id>_<index>"
  std::string name;
  std::string arguments;  // JSON text, as OpenAI's function.arguments
};

struct ToolReply {
  std::string reasoning;  // the reasoning block's text (ChatReplyStream), "" if none
  std::string content;    // the text besides the calls ("" if none)
  std::vector<ToolCall> calls;
};

// One piece of a streamed reply: reasoning text, content text, or a piece
// of call `index` (its first piece carries id and name; arguments pieces
// concatenate to the call's arguments).
struct ToolReplyDelta {
  std::string reasoning;
  std::string content;
  int index = -1;  // >= 0: a call's piece
  std::string id, name, arguments;
};

class ToolCalling {
 public:
  // `reasoning`: the template's reasoning markers and where the reply
  // starts (the constraint lets the reply reason first; none: it does not).
  ToolCalling(ToolCallStyle style, ToolRequest request, std::optional<ReasoningSyntax> reasoning = std::nullopt,
              ReasoningStart start = ReasoningStart::Skipped);

  ToolCallStyle style() const { return style_; }
  const ToolRequest& request() const { return request_; }
  // tool_choice "none": the tools are shown but no call is parsed.
  bool parses() const { return request_.choice != ToolChoice::None; }

  // The conversation (OpenAI messages: assistant `tool_calls` with
  // arguments as JSON text, `tool` results with tool_call_id) as this
  // style's template should see it.
  // `form`: how the template reads a call (call_message_form_of).
  nlohmann::ordered_json messages(const nlohmann::ordered_json& openai_messages, CallMessageForm form = {}) const;
  // The template's extra variables ({"tools": [...]} for Hermes).
  nlohmann::ordered_json template_extra() const;
  // The constraint that keeps calls well-formed; empty for "none".
  ConstraintSpec constraint() const;
  // Sets constraint() as the setting of its kind (structural_tag or
  // json_schema). Throws Error("request", "tools", ...) when the settings
  // already hold a constraint of their own: the calls need theirs.
  void constrain(GenerationSettings& settings) const;
  // The whole reply's text (after any reasoning) as content and calls.
  ToolReply parse(std::string_view text, const std::string& reply_id) const;

 private:
  ToolCallStyle style_;
  ToolRequest request_;
  std::optional<ReasoningSyntax> reasoning_;
  ReasoningStart start_;
};

// A reply streamed as deltas: content as it comes, calls as they are written.
// Everything pushed then finish() gives exactly what parse() gives for the
// whole text (content pieces concatenate to its content, each call's
// argument pieces to its arguments).
class ToolReplyStream {
 public:
  ToolReplyStream(const ToolCalling& calling, std::string reply_id);
  std::vector<ToolReplyDelta> push(std::string_view text);
  std::vector<ToolReplyDelta> finish();
  int calls() const { return calls_; }

 private:
  enum class State { Text, Head, Arguments, Block };
  // Hands out whole calls (a block style's, or the generic reply's), numbered on from calls_.
  void emit_calls(std::vector<BlockCall>& calls, std::vector<ToolReplyDelta>& out);
  const ToolCalling& calling_;
  std::string reply_id_;
  std::string buffer_;  // text not yet handed out
  std::string all_;     // Generic: the whole reply, parsed at finish()
  State state_ = State::Text;
  int calls_ = 0;
  bool emitted_content_ = false;  // leading whitespace is dropped until then
};

// A chat reply as OpenAI's message: its reasoning split off (when the
// template has reasoning markers), then its content and, with tools, its
// calls. Everything pushed then finish() gives exactly what parse() gives.
class ChatReplyStream {
 public:
  // `tools` may be null (no tools: content only), `reasoning` empty (no
  // markers: no reasoning). `tools` must outlive the stream.
  // `frames`: the message frames taken out of the content (generation/reply_frames.h).
  ChatReplyStream(const ToolCalling* tools, std::optional<ReasoningSyntax> reasoning, ReasoningStart start,
                  std::string reply_id, std::optional<ReplyFrames> frames = std::nullopt);
  std::vector<ToolReplyDelta> push(std::string_view text);
  std::vector<ToolReplyDelta> finish();
  int calls() const { return calls_ ? calls_->calls() : 0; }
  static ToolReply parse(std::string_view text, const ToolCalling* tools, std::optional<ReasoningSyntax> reasoning,
                         ReasoningStart start, const std::string& reply_id,
                         std::optional<ReplyFrames> frames = std::nullopt);

 private:
  std::vector<ToolReplyDelta> pass(std::vector<ReplyPiece> pieces, bool final);
  // Content (frames taken out) to the calls' reader, or out as it is.
  void content(std::string text, std::vector<ToolReplyDelta>& out);
  std::optional<ReasoningSplitter> splitter_;
  std::optional<FrameFilter> frames_;
  std::optional<ToolReplyStream> calls_;
};

}  // namespace tessera
