// Readers of the tool-call formats that are not JSON (generation/tool_calls.h
// chooses the format from the template): each takes the text between a
// call's open and close markers and gives the call's name and its
// arguments as a JSON object, or nullopt when the text is not a call of one
// of the tools.
//
// Qwen XML (Qwen3.5, Qwen3.6, Qwen3-Coder; between <tool_call> and </tool_call>):
//   <function=NAME>
//   <parameter=KEY>
//   VALUE
//   </parameter>
//   ...
//   </function>
// VALUE is raw text up to </parameter>, less the one whitespace character
// on each side (the template writes a newline there). A parameter whose
// schema is a string keeps the text (an enum / const of strings: less any
// surrounding whitespace, which the constraint allows around a literal);
// any other is read as JSON (the template writes objects and lists as JSON)
// or as the Python spelling a template's `| string` gives (True, False,
// None), and failing both is kept as a string.
//
// Seed XML (Seed-OSS; between <seed:tool_call> and </seed:tool_call>): Qwen
// XML's shape with VALUE as it is written (no newlines around it), read as
// GLM XML's.
//
// GLM XML (GLM 4.6 / 4.7, Ling 3; between <tool_call> and </tool_call>):
//   NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>...
// whitespace allowed between the parts; VALUE as Qwen XML's, but free text
// (a string without length, pattern or format) has no newlines around it
// to take off.
//
// Gemma 4 (between <|tool_call> and <tool_call|>):
//   call:NAME{KEY:VALUE,...}
// keys bare (or between <|"|> markers), strings between <|"|> markers with
// nothing escaped, numbers, true / false / null as JSON spells them, lists
// [...], objects {...}.
//
// Pythonic (LFM2, LFM2.5; between <|tool_call_start|> and <|tool_call_end|>):
//   [NAME(KEY=VALUE, ...), ...]
// one or more calls, VALUE a Python literal: strings in single or double
// quotes, numbers, True / False / None (or JSON's true / false / null),
// lists, dicts with string keys.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera {

struct BlockCall {
  std::string name;
  nlohmann::ordered_json arguments;  // an object
};

// `tools`: OpenAI's [{"type": "function", "function": {"name", "parameters"}}].
std::optional<BlockCall> read_qwen_xml_call(std::string_view body, const nlohmann::ordered_json& tools);
std::optional<BlockCall> read_seed_xml_call(std::string_view body, const nlohmann::ordered_json& tools);
std::optional<BlockCall> read_glm_xml_call(std::string_view body, const nlohmann::ordered_json& tools);
std::optional<BlockCall> read_gemma4_call(std::string_view body, const nlohmann::ordered_json& tools);

std::optional<std::vector<BlockCall>> read_pythonic_calls(std::string_view body, const nlohmann::ordered_json& tools);

// A JSON value as a Python literal (the Pythonic format's arguments).
std::string python_literal(const nlohmann::ordered_json& value);

// Mistral (after the first [TOOL_CALLS], to the end of the reply):
//   NAME[ARGS]{...}[TOOL_CALLS]NAME[ARGS]{...}   (Small 3.2, Devstral, Ministral 3;
//                                                  NAME[CALL_ID]ID[ARGS] too)
//   [{"name": NAME, "arguments": {...}}, ...]     (Nemo; several lists each after [TOOL_CALLS])
std::optional<std::vector<BlockCall>> read_mistral_calls(std::string_view body, const nlohmann::ordered_json& tools);

// DeepSeek (between <｜tool▁calls▁begin｜> and <｜tool▁calls▁end｜>), calls one
// after another, whitespace allowed between them:
//   <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>              (V3.1)
//   <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>
//                                                             (R1 and its distills)
std::optional<std::vector<BlockCall>> read_deepseek_calls(std::string_view body, const nlohmann::ordered_json& tools);

// Kimi K2 (between <|tool_calls_section_begin|> and <|tool_calls_section_end|>):
//   <|tool_call_begin|>functions.NAME:INDEX<|tool_call_argument_begin|>{...}<|tool_call_end|> ...
// INDEX counts the calls of the conversation (the template's own numbering).
std::optional<std::vector<BlockCall>> read_kimi_calls(std::string_view body, const nlohmann::ordered_json& tools);

// MiniMax M2 (between <minimax:tool_call> and </minimax:tool_call>):
//   <invoke name="NAME"><parameter name="KEY">VALUE</parameter>...</invoke> ...
// whitespace allowed between the parts; VALUE as GLM XML's.
std::optional<std::vector<BlockCall>> read_minimax_xml_calls(std::string_view body, const nlohmann::ordered_json& tools);

// MiniMax M1 (between <tool_calls> and </tool_calls>): JSON calls one after
// another (the template puts each on its own line),
//   {"name": NAME, "arguments": {...}}
std::optional<std::vector<BlockCall>> read_json_calls(std::string_view body, const nlohmann::ordered_json& tools);

// DeepSeek V3.2 / V4's DSML (between <｜DSML｜function_calls> and its end,
// or V4's <｜DSML｜tool_calls>):
//   <｜DSML｜invoke name="NAME">
//   <｜DSML｜parameter name="KEY" string="true">VALUE</｜DSML｜parameter>
//   ...
//   </｜DSML｜invoke>
// string="true": VALUE is the string as written; string="false": VALUE is JSON.
std::optional<std::vector<BlockCall>> read_dsml_calls(std::string_view body, const nlohmann::ordered_json& tools);

// Functionary v3.1 (between <function= and </function>): NAME>{...}
std::optional<std::vector<BlockCall>> read_functionary_calls(std::string_view body,
                                                             const nlohmann::ordered_json& tools);

// Functionary v3.2 (one message after >>>, to the next >>> or the reply's end): NAME\n{...}
std::optional<std::vector<BlockCall>> read_functionary_v32_call(std::string_view body,
                                                                const nlohmann::ordered_json& tools);

// gpt-oss's harmony (after "to=functions.", to <|call|> or the reply's end):
//   NAME<|channel|>commentary json<|message|>{...}     (the template's order)
//   NAME <|constrain|>json<|message|>{...}             (the model's, after <|channel|>commentary)
std::optional<BlockCall> read_harmony_call(std::string_view body, const nlohmann::ordered_json& tools);

// Solar Open (between <|tool_calls|> and <|calls|>):
//   <|tool_call:begin|>ID<|tool_call:name|>NAME<|tool_call:args|>{...}<|tool_call:end|> ...
std::optional<std::vector<BlockCall>> read_solar_calls(std::string_view body, const nlohmann::ordered_json& tools);

// Hy3 (between <tool_calls:opensource> and </tool_calls:opensource>), GLM
// XML's pairs with markers of its own and newlines between the parts:
//   <tool_call:opensource>NAME<tool_sep:opensource>
//   <arg_key:opensource>KEY</arg_key:opensource>
//   <arg_value:opensource>VALUE</arg_value:opensource>
//   </tool_call:opensource> ...
std::optional<std::vector<BlockCall>> read_hy3_calls(std::string_view body, const nlohmann::ordered_json& tools);

// MiniCPM5 (between <function name=" and </function>):
//   NAME"><param name="KEY">VALUE</param>...
// VALUE as GLM XML's; a value with <, & or a newline in <![CDATA[...]]>,
// non-strings as Python writes them (True, None, {'k': 1}) or as JSON.
std::optional<BlockCall> read_minicpm5_call(std::string_view body, const nlohmann::ordered_json& tools);

// muse-glimmer's ATEM (between <atem:function_calls> and </atem:function_calls>):
//   <atem:invoke name="NAME">
//   <atem:parameter name="KEY">VALUE</atem:parameter>
//   </atem:invoke> ...
// VALUE as GLM XML's (lists and objects as JSON).
std::optional<std::vector<BlockCall>> read_atem_calls(std::string_view body, const nlohmann::ordered_json& tools);

// Kimi K3 (between <|open|>tools<|sep|> and <|close|>tools<|sep|>):
//   <|open|>call tool="NAME" index="N"<|sep|>
//     <|open|>argument key="KEY" type="TYPE"<|sep|>VALUE<|close|>argument<|sep|> ...
//   <|close|>call<|sep|> ...
// TYPE "string": VALUE as written; any other: JSON. Or the arguments whole,
// <|open|>json type="object"<|sep|>{...}<|close|>json<|sep|>. Attribute
// values escape & and " as &amp; and &quot;.
std::optional<std::vector<BlockCall>> read_kimi_k3_calls(std::string_view body, const nlohmann::ordered_json& tools);

// MiniMax M3 (between NS<tool_call> and NS</tool_call>, NS its namespace
// token ]<]minimax[>[ before every tag):
//   NS<invoke name="NAME">NS<KEY>VALUENS</KEY>...NS</invoke> ...   (VALUE right before NS)
// an object's VALUE is its keys as elements again, a list's its items as
// NS<item> elements; a scalar as GLM XML's.
std::optional<std::vector<BlockCall>> read_minimax_m3_calls(std::string_view body,
                                                            const nlohmann::ordered_json& tools);

// A JSON list of calls, the whole body (whitespace around it allowed):
//   [{"name": NAME, "arguments": {...}}, ...]     (Nemotron Nano v2, Apriel,
//                                                  Firefunction v2, Granite 3.3)
//   [{"tool_call_id": "0", "tool_name": NAME, "parameters": {...}}, ...]
//                                                 (Command R7B, Command A, Command R+)
//   [{NAME: {...}}, ...]                           (Apertus)
// other keys of a call (an id) are ignored.
std::optional<std::vector<BlockCall>> read_json_list_calls(std::string_view body, const nlohmann::ordered_json& tools);

// One Gemma 4 value, the whole of `text` (surrounding whitespace allowed).
std::optional<nlohmann::ordered_json> read_gemma_value(std::string_view text);

}  // namespace tessera
