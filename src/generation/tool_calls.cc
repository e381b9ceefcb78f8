#include "generation/tool_calls.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "generation/reply_frames.h"
#include "generation/reply_text.h"
#include "generation/tool_call_readers.h"
#include "tokenizer/chat_template.h"

namespace tessera {

using ojson = nlohmann::ordered_json;

namespace {

// Reads the text between a block style's open and close markers as one
// call of one of `tools` (generation/tool_call_readers.h).
using BlockReader = std::optional<std::vector<BlockCall>> (*)(std::string_view body, const ojson& tools);

std::optional<std::vector<BlockCall>> one_call(std::optional<BlockCall> call) {
  if (!call) return std::nullopt;
  return std::vector<BlockCall>{std::move(*call)};
}
std::optional<std::vector<BlockCall>> read_qwen_xml_block(std::string_view body, const ojson& tools) {
  return one_call(read_qwen_xml_call(body, tools));
}
std::optional<std::vector<BlockCall>> read_glm_xml_block(std::string_view body, const ojson& tools) {
  return one_call(read_glm_xml_call(body, tools));
}
std::optional<std::vector<BlockCall>> read_seed_xml_block(std::string_view body, const ojson& tools) {
  return one_call(read_seed_xml_call(body, tools));
}
std::optional<std::vector<BlockCall>> read_gemma4_block(std::string_view body, const ojson& tools) {
  return one_call(read_gemma4_call(body, tools));
}
std::optional<std::vector<BlockCall>> read_harmony_block(std::string_view body, const ojson& tools) {
  return one_call(read_harmony_call(body, tools));
}
std::optional<std::vector<BlockCall>> read_minicpm5_block(std::string_view body, const ojson& tools) {
  return one_call(read_minicpm5_call(body, tools));
}

// Arguments written one by one, each `before` VALUE `after` ({key}: the
// argument's name, {type}: Kimi K3's name of its JSON type): a string as
// its text, any other value as JSON.
struct KeyedArguments {
  std::string_view before, after;
};
constexpr KeyedArguments kHy3Arguments{"<arg_key:opensource>{key}</arg_key:opensource>\n<arg_value:opensource>",
                                       "</arg_value:opensource>\n"};
constexpr KeyedArguments kMiniCpm5Arguments{"<param name=\"{key}\">", "</param>"};
constexpr KeyedArguments kAtemArguments{"<atem:parameter name=\"{key}\">", "</atem:parameter>\n"};
constexpr KeyedArguments kMiniMaxM3Arguments{"]<]minimax[>[<{key}>", "]<]minimax[>[</{key}>"};
constexpr KeyedArguments kKimiK3Arguments{"<|open|>argument key=\"{key}\" type=\"{type}\"<|sep|>",
                                          "<|close|>argument<|sep|>"};

// How a style writes one call: `open`, then the call, then `close`. JSON
// styles (no `read_block`) write {"name": "NAME", "<key>": ARGS}; block
// styles write what `read_block` reads. For Llama 3 the call is the JSON
// alone: it opens with its own `{"name"` and ends with the reply. The
// constraint's tag for a call is begin_before_name NAME begin_after_name,
// the arguments in XGrammar's `content_style`, then `end`; calls alone
// (tool_choice "required" / named) are separated by `separator`.
struct CallSyntax {
  std::string_view open;   // what starts a call in the reply
  bool open_is_json;       // `open` is the start of the call's JSON (kept for the head)
  std::string_view close;  // what ends a call ("" : the end of the reply)
  std::string_view begin_before_name, begin_after_name, end;  // the constraint's tag
  std::string_view trigger;
  std::string_view content_style;
  std::string_view separator;
  BlockReader read_block;
  // `open` and `close` wrap all the calls of a reply (DeepSeek, Kimi): the
  // constraint's call tags go inside one tag of them, `separator` between
  // calls; `read_block` reads what is between them.
  bool wraps_calls = false;
  // Set (Kimi): the name's tag is followed by a call index (digits) and
  // this text, then the arguments.
  std::string_view after_index = "";
  // A wrapping style's calls are a list: `calls_begin` after `open`,
  // `calls_end` before `close` (JSON lists' brackets).
  std::string_view calls_begin = "", calls_end = "";
  // The index comes first (Command R's {"tool_call_id": "0", "tool_name": ...}):
  // a call is begin_before_name INDEX after_index NAME begin_after_name ARGS end.
  bool index_first = false;
  // Set (Functionary v3.2): the reply is messages `open` RECIPIENT\n BODY,
  // the first `open` the generation prompt's; this recipient's messages are
  // text, every other one a call that ends at the next `open` (`close`,
  // left for that message) or at the reply's end.
  std::string_view text_recipient = "";
  // Set: the arguments are written one by one (content_style "keyed").
  const KeyedArguments* keyed = nullptr;
  // The close marker may be the model's stop token, which the reply's text
  // does not carry (harmony's <|call|>, Solar's <|calls|>): a block the
  // reply ends in is read whole.
  bool close_may_stop = false;
};

constexpr CallSyntax kHermes{"<tool_call>", false, "</tool_call>", "<tool_call>\n{\"name\": \"",
                             "\", \"arguments\": ", "}\n</tool_call>", "<tool_call>", "json", "\n", nullptr};
constexpr CallSyntax kLlama3{"{\"name\"", true, "", "{\"name\": \"", "\", \"parameters\": ", "}", "{\"name\": \"",
                             "json", "\n", nullptr};
constexpr CallSyntax kQwenXml{"<tool_call>", false, "</tool_call>", "<tool_call>\n<function=", ">\n",
                              "\n</function>\n</tool_call>", "<tool_call>", "qwen_xml", "\n", read_qwen_xml_block};
constexpr CallSyntax kGemma4{"<|tool_call>", false, "<tool_call|>", "<|tool_call>call:", "", "<tool_call|>",
                             "<|tool_call>", "gemma", "", read_gemma4_block};
constexpr CallSyntax kMistral{"[TOOL_CALLS]", false, "", "[TOOL_CALLS]", "[ARGS]", "", "[TOOL_CALLS]", "json", "",
                              read_mistral_calls};
constexpr CallSyntax kMistralList{"[TOOL_CALLS]", false, "", "[TOOL_CALLS][{\"name\": \"", "\", \"arguments\": ", "}]",
                                  "[TOOL_CALLS]", "json", "", read_mistral_calls};
constexpr CallSyntax kGlmXml{"<tool_call>", false, "</tool_call>", "<tool_call>", "", "</tool_call>", "<tool_call>",
                             "glm_xml", "\n", read_glm_xml_block};
constexpr CallSyntax kPythonic{"<|tool_call_start|>", false, "<|tool_call_end|>", "<|tool_call_start|>[", "(",
                               ")]<|tool_call_end|>", "<|tool_call_start|>", "python", "", read_pythonic_calls};

constexpr CallSyntax kDeepSeekV3{"<｜tool▁calls▁begin｜>", false, "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>",
                                 "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁begin｜>", "json", "",
                                 read_deepseek_calls, true};
constexpr CallSyntax kDeepSeekR1{"<｜tool▁calls▁begin｜>", false, "<｜tool▁calls▁end｜>",
                                 "<｜tool▁call▁begin｜>function<｜tool▁sep｜>", "\n```json\n",
                                 "\n```<｜tool▁call▁end｜>", "<｜tool▁calls▁begin｜>", "json", "\n",
                                 read_deepseek_calls, true};
constexpr CallSyntax kKimi{"<|tool_calls_section_begin|>", false, "<|tool_calls_section_end|>",
                           "<|tool_call_begin|>functions.", ":", "<|tool_call_end|>", "<|tool_calls_section_begin|>",
                           "json", "", read_kimi_calls, true, "<|tool_call_argument_begin|>"};

constexpr CallSyntax kMiniMaxXml{"<minimax:tool_call>", false, "</minimax:tool_call>", "<invoke name=\"", "\">\n",
                                 "</invoke>\n", "<minimax:tool_call>", "minimax_xml", "", read_minimax_xml_calls, true};
constexpr CallSyntax kMiniMaxJson{"<tool_calls>", false, "</tool_calls>", "{\"name\": \"", "\", \"arguments\": ", "}",
                                  "<tool_calls>", "json", "\n", read_json_calls, true};

// JSON lists of {"name": NAME, "arguments": {...}} between markers (a
// close of "": the list ends the reply).
constexpr CallSyntax json_list(std::string_view open, std::string_view close, std::string_view calls_begin,
                               std::string_view separator, std::string_view calls_end) {
  return {open, false, close, "{\"name\": \"", "\", \"arguments\": ", "}", open, "json", separator,
          read_json_list_calls, true, "", calls_begin, calls_end};
}
constexpr CallSyntax kNemotron = json_list("<TOOLCALL>", "</TOOLCALL>", "[", ", ", "]");
constexpr CallSyntax kApriel = json_list("<tool_calls>", "</tool_calls>", "[", ", ", "]");
constexpr CallSyntax kFireFunction = json_list(" functools", "", "[", ", ", "]");
constexpr CallSyntax kGranite = json_list("<|tool_call|>", "", "[", ", ", "]");
constexpr CallSyntax kCommandR{"<|START_ACTION|>", false, "<|END_ACTION|>", "{\"tool_call_id\": \"",
                               "\", \"parameters\": ", "}", "<|START_ACTION|>", "json", ",\n    ",
                               read_json_list_calls, true, "\", \"tool_name\": \"", "[\n    ", "\n]", true};
constexpr CallSyntax kCommandRPlus{"Action:\n```json", false, "```", "{\"tool_name\": \"", "\", \"parameters\": ",
                                   "}", "Action:\n```json", "json", ",\n    ", read_json_list_calls, true, "",
                                   "\n[\n    ", "\n]"};
constexpr CallSyntax kApertus{"<|tools_prefix|>", false, "<|tools_suffix|>", "{\"", "\": ", "}", "<|tools_prefix|>",
                              "json", ", ", read_json_list_calls, true, "", "[", "]"};
constexpr CallSyntax kSeedXml{"<seed:tool_call>", false, "</seed:tool_call>", "<seed:tool_call>\n<function=", ">\n",
                              "</function>\n</seed:tool_call>", "<seed:tool_call>", "qwen_xml", "\n",
                              read_seed_xml_block};
constexpr CallSyntax dsml(std::string_view open, std::string_view close) {
  return {open, false, close, "<｜DSML｜invoke name=\"", "\">\n", "</｜DSML｜invoke>\n", open, "deepseek_xml", "",
          read_dsml_calls, true, "", "\n", ""};
}
constexpr CallSyntax kDsmlV32 = dsml("<｜DSML｜function_calls>", "</｜DSML｜function_calls>");
constexpr CallSyntax kDsmlV4 = dsml("<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>");
constexpr CallSyntax kFunctionary{"<function=", false, "</function>", "<function=", ">", "</function>", "<function=",
                                  "json", "", read_functionary_calls};

constexpr CallSyntax kFunctionaryV32{">>>", false, ">>>", "", "\n", "", ">>>", "json", ">>>",
                                     read_functionary_v32_call, false, "", "", "", false, "all\n"};

constexpr CallSyntax kHarmony{"to=functions.", false, "<|call|>", " to=functions.",
                              "<|channel|>commentary json<|message|>", "<|call|>", " to=functions.", "json", "",
                              read_harmony_block, false, "", "", "", false, "", nullptr, true};
constexpr CallSyntax kSolarOpen{"<|tool_calls|>", false, "<|calls|>", "<|tool_call:begin|>", "<|tool_call:args|>",
                                "<|tool_call:end|>", "<|tool_calls|>", "json", "", read_solar_calls, true,
                                "<|tool_call:name|>", "", "", true, "", nullptr, true};
constexpr CallSyntax kKimiK3{"<|open|>tools<|sep|>", false, "<|close|>tools<|sep|>", "<|open|>call tool=\"",
                             "\" index=\"", "<|close|>call<|sep|>", "<|open|>tools<|sep|>", "keyed", "",
                             read_kimi_k3_calls, true, "\"<|sep|>", "", "", false, "", &kKimiK3Arguments};
constexpr CallSyntax kMiniMaxM3{"]<]minimax[>[<tool_call>", false, "]<]minimax[>[</tool_call>",
                                "]<]minimax[>[<invoke name=\"", "\">", "]<]minimax[>[</invoke>\n",
                                "]<]minimax[>[<tool_call>", "keyed", "", read_minimax_m3_calls, true, "", "\n", "",
                                false, "", &kMiniMaxM3Arguments};
constexpr CallSyntax kHy3{"<tool_calls:opensource>", false, "</tool_calls:opensource>", "<tool_call:opensource>",
                          "<tool_sep:opensource>\n", "</tool_call:opensource>\n", "<tool_calls:opensource>", "keyed",
                          "", read_hy3_calls, true, "", "\n", "", false, "", &kHy3Arguments};
constexpr CallSyntax kMiniCpm5{"<function name=\"", false, "</function>", "<function name=\"", "\">", "</function>",
                               "<function name=\"", "keyed", "\n", read_minicpm5_block, false, "", "", "", false, "",
                               &kMiniCpm5Arguments};
constexpr CallSyntax kAtem{"<atem:function_calls>", false, "</atem:function_calls>", "<atem:invoke name=\"", "\">\n",
                           "</atem:invoke>\n", "<atem:function_calls>", "keyed", "", read_atem_calls, true, "", "\n",
                           "", false, "", &kAtemArguments};
// One JSON call after a marker, to the end of the reply.
constexpr CallSyntax kGigaChat3{"function call<|role_sep|>\n", false, "", "function call<|role_sep|>\n{\"name\": \"",
                                "\", \"arguments\": ", "}", "function call<|role_sep|>\n", "json", "", nullptr};
constexpr CallSyntax kGigaChat31{"<|function_call|>", false, "", "<|function_call|>{\"name\": \"",
                                 "\", \"arguments\": ", "}", "<|function_call|>", "json", "", nullptr};

const CallSyntax& syntax_of(ToolCallStyle style) {
  switch (style) {
    case ToolCallStyle::Llama3: return kLlama3;
    case ToolCallStyle::QwenXml: return kQwenXml;
    case ToolCallStyle::Gemma4: return kGemma4;
    case ToolCallStyle::Pythonic: return kPythonic;
    case ToolCallStyle::Mistral: return kMistral;
    case ToolCallStyle::MistralList: return kMistralList;
    case ToolCallStyle::GlmXml: return kGlmXml;
    case ToolCallStyle::DeepSeekV3: return kDeepSeekV3;
    case ToolCallStyle::DeepSeekR1: return kDeepSeekR1;
    case ToolCallStyle::Kimi: return kKimi;
    case ToolCallStyle::MiniMaxXml: return kMiniMaxXml;
    case ToolCallStyle::MiniMaxJson: return kMiniMaxJson;
    case ToolCallStyle::Nemotron: return kNemotron;
    case ToolCallStyle::Apriel: return kApriel;
    case ToolCallStyle::FireFunction: return kFireFunction;
    case ToolCallStyle::Granite: return kGranite;
    case ToolCallStyle::CommandR: return kCommandR;
    case ToolCallStyle::CommandRPlus: return kCommandRPlus;
    case ToolCallStyle::Apertus: return kApertus;
    case ToolCallStyle::SeedXml: return kSeedXml;
    case ToolCallStyle::DeepSeekV32: return kDsmlV32;
    case ToolCallStyle::DeepSeekV4: return kDsmlV4;
    case ToolCallStyle::Functionary: return kFunctionary;
    case ToolCallStyle::FunctionaryV32: return kFunctionaryV32;
    case ToolCallStyle::Harmony: return kHarmony;
    case ToolCallStyle::SolarOpen: return kSolarOpen;
    case ToolCallStyle::KimiK3: return kKimiK3;
    case ToolCallStyle::MiniMaxM3: return kMiniMaxM3;
    case ToolCallStyle::Hy3: return kHy3;
    case ToolCallStyle::MiniCpm5: return kMiniCpm5;
    case ToolCallStyle::Atem: return kAtem;
    case ToolCallStyle::GigaChat3: return kGigaChat3;
    case ToolCallStyle::GigaChat31: return kGigaChat31;
    default: return kHermes;
  }
}

using reply_text::is_space;
using reply_text::partial_marker;

const ojson& function_of(const ojson& tool) { return tool["function"]; }

std::string name_of(const ojson& tool) { return function_of(tool)["name"].get<std::string>(); }

// The tool's parameter schema with its integers bounded (a tool without
// parameters takes an empty object).
ojson parameters_of(const ojson& tool) {
  const ojson& f = function_of(tool);
  ojson schema = f.contains("parameters") && !f["parameters"].is_null() ? f["parameters"]
                                                                        : ojson{{"type", "object"}, {"properties", ojson::object()}};
  return ojson::parse(with_bounded_integers(schema.dump()));
}

// `schema` with every length-bounded string (no pattern or format of its
// own) given the pattern of its bounds. XGrammar drops the length bounds of
// strings that must exclude a marker (Gemma 4's strings end at <|"|>:
// unrolling the exclusion per character is too slow to compile), but keeps
// a pattern, which it intersects with the exclusion as automata; without a
// bound a model may write one string until max_tokens.
ojson with_length_patterns(ojson schema) {
  auto visit = [](auto& self, ojson& node) -> void {
    if (node.is_array()) {
      for (ojson& item : node) self(self, item);
      return;
    }
    if (!node.is_object()) return;
    const bool bounded = node.contains("minLength") || node.contains("maxLength");
    if (node.value("type", ojson()) == "string" && bounded && !node.contains("pattern") && !node.contains("format")) {
      const int64_t lo = node.value("minLength", int64_t{0});
      const std::string hi = node.contains("maxLength") ? std::to_string(node["maxLength"].get<int64_t>()) : "";
      node["pattern"] = fmt::format("^[\\s\\S]{{{},{}}}$", lo, hi);
    }
    for (auto& [key, value] : node.items()) self(self, value);
  };
  visit(visit, schema);
  return schema;
}

// The tools a call may name: all, or the named one.
std::vector<const ojson*> callable(const ToolRequest& r) {
  std::vector<const ojson*> out;
  for (const ojson& t : r.tools)
    if (r.choice != ToolChoice::Named || name_of(t) == r.named) out.push_back(&t);
  return out;
}

// Arguments as an object for a template (OpenAI sends them as JSON text).
ojson arguments_object(const ojson& arguments) {
  if (!arguments.is_string()) return arguments;
  ojson parsed = ojson::parse(arguments.get<std::string>(), nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? arguments : parsed;
}

// Mistral's templates take only call ids of 9 letters and digits: `id`
// mapped to such one, the same for the call and its result (FNV-1a).
std::string nine_character_id(const std::string& id) {
  static constexpr char kDigits[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  if (id.size() == 9 && std::all_of(id.begin(), id.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); }))
    return id;
  uint64_t h = 1469598103934665603ull;
  for (char c : id) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  std::string out(9, 'a');
  for (char& c : out) {
    c = kDigits[h % 62];
    h /= 62;
  }
  return out;
}

std::string call_id(const std::string& reply_id, int index) {
  std::string_view base = reply_id;
  if (const size_t dash = base.find('-'); dash != std::string_view::npos) base.remove_prefix(dash + 1);
  return fmt::format("call_{}_{}", base, index);
}

// The system message a Generic template gets: the tools and the reply format.
std::string generic_instructions(const ToolRequest& r) {
  std::string text =
      "You can call the following tools. Each is a JSON object with the tool's name, description and parameters "
      "(a JSON Schema):\n";
  for (const ojson* t : callable(r)) text += function_of(*t).dump() + "\n";
  text += "\nTo call ";
  text += r.parallel ? "tools" : "a tool";
  text += ", reply with only a JSON object: {\"tool_calls\": [{\"name\": \"<tool name>\", \"arguments\": {<the "
          "arguments>}}]}.";
  if (r.choice == ToolChoice::Auto) text += " To answer without a tool, reply with {\"response\": \"<your answer>\"}.";
  return text;
}

ojson generic_reply_schema(const ToolRequest& r) {
  ojson calls = ojson::array();
  for (const ojson* t : callable(r))
    calls.push_back({{"type", "object"},
                     {"properties", {{"name", {{"const", name_of(*t)}}}, {"arguments", parameters_of(*t)}}},
                     {"required", {"name", "arguments"}}});
  ojson items = calls.size() == 1 ? calls[0] : ojson{{"anyOf", calls}};
  ojson list = {{"type", "array"}, {"items", items}, {"minItems", 1}};
  if (!r.parallel) list["maxItems"] = 1;
  ojson with_calls = {{"type", "object"}, {"properties", {{"tool_calls", list}}}, {"required", {"tool_calls"}}};
  if (r.choice != ToolChoice::Auto) return with_calls;
  ojson answer = {{"type", "object"}, {"properties", {{"response", {{"type", "string"}}}}}, {"required", {"response"}}};
  return {{"anyOf", {with_calls, answer}}};
}

ojson const_format(std::string text) { return {{"type", "const_string"}, {"value", std::move(text)}}; }

ojson json_value_format(const ojson& schema) {
  return {{"type", "json_schema"}, {"json_schema", schema}, {"max_whitespace_cnt", 1}};
}

// Arguments written one by one: the required properties in the schema's
// order, then each optional one or not; `element(key, schema, first)` is
// how one is written. `optional_needs_required` (Pythonic: a leading ", "
// would not parse): optional ones only after a required one.
template <typename Element>
ojson one_by_one_format(const ojson& parameters, Element element, bool optional_needs_required) {
  const ojson properties = parameters.value("properties", ojson::object());
  const ojson required = parameters.value("required", ojson::array());
  auto is_required = [&](const std::string& key) {
    return std::find(required.begin(), required.end(), key) != required.end();
  };
  ojson elements = ojson::array();
  for (const auto& [key, schema] : properties.items())
    if (is_required(key)) elements.push_back(element(key, schema, elements.empty()));
  const bool any_required = !elements.empty();
  if (any_required || !optional_needs_required)
    for (const auto& [key, schema] : properties.items())
      if (!is_required(key))
        elements.push_back({{"type", "optional"}, {"content", element(key, schema, /*first=*/false)}});
  if (elements.empty()) return const_format("");
  return {{"type", "sequence"}, {"elements", elements}};
}

// A Pythonic call's arguments, KEY=VALUE, ...: a tool without required
// arguments is called with none; every value as JSON (a Python literal but
// for true / false / null, which the reader takes too).
ojson python_arguments_format(const ojson& parameters) {
  return one_by_one_format(
      parameters,
      [](const std::string& key, const ojson& schema, bool first) {
        return ojson{{"type", "sequence"},
                     {"elements", {const_format((first ? "" : ", ") + key + "="), json_value_format(schema)}}};
      },
      /*optional_needs_required=*/true);
}

// Whether every value `schema` admits is a string (the keyed formats write
// those as their text).
bool is_text_schema(const ojson& schema) {
  if (!schema.is_object()) return false;
  if (schema.contains("type")) return schema["type"] == "string";
  const auto strings = [](const ojson& v) {
    return v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const ojson& x) { return x.is_string(); });
  };
  if (schema.contains("enum")) return strings(schema["enum"]);
  return schema.contains("const") && schema["const"].is_string();
}

// A string written as its text: one of its literals, the schema's
// pattern, or up to its length bounds any text without '<' (which would
// start the closing marker).
ojson text_value_format(const ojson& schema) {
  ojson literals = ojson::array();
  if (schema.contains("const")) literals.push_back(schema["const"]);
  if (schema.contains("enum")) literals = schema["enum"];
  if (!literals.empty()) {
    ojson choices = ojson::array();
    for (const ojson& l : literals) choices.push_back(const_format(l.get<std::string>()));
    return choices.size() == 1 ? choices[0] : ojson{{"type", "or"}, {"elements", choices}};
  }
  if (schema.contains("pattern") && schema["pattern"].is_string()) {
    std::string pattern = schema["pattern"].get<std::string>();
    if (pattern.starts_with("^")) pattern.erase(0, 1);
    if (pattern.ends_with("$") && !pattern.ends_with("\\$")) pattern.pop_back();
    return {{"type", "regex"}, {"pattern", pattern}};
  }
  const int64_t lo = schema.value("minLength", int64_t{0});
  const std::string hi = schema.contains("maxLength") ? std::to_string(schema["maxLength"].get<int64_t>()) : "";
  return {{"type", "regex"}, {"pattern", fmt::format("[^<]{{{},{}}}", lo, hi)}};
}

// Kimi K3's name of a schema's JSON type.
std::string json_type_name(const ojson& schema) {
  if (is_text_schema(schema)) return "string";
  const std::string t = schema.is_object() && schema.contains("type") && schema["type"].is_string()
                            ? schema["type"].get<std::string>()
                            : "object";
  return t == "integer" ? "number" : t;
}

ojson keyed_arguments_format(const ojson& parameters, const KeyedArguments& keyed) {
  return one_by_one_format(
      parameters,
      [&](const std::string& key, const ojson& schema, bool) {
        const std::string before = fmt::format(fmt::runtime(keyed.before), fmt::arg("key", key),
                                               fmt::arg("type", json_type_name(schema)));
        const std::string after = fmt::format(fmt::runtime(keyed.after), fmt::arg("key", key));
        return ojson{{"type", "sequence"},
                     {"elements",
                      {const_format(before), is_text_schema(schema) ? text_value_format(schema) : json_value_format(schema),
                       const_format(after)}}};
      },
      /*optional_needs_required=*/false);
}

// The arguments of a call, as `syntax` writes them, constrained to the tool's parameters.
ojson arguments_format(const ojson& tool, const CallSyntax& syntax) {
  const ojson parameters =
      syntax.content_style == "gemma" ? with_length_patterns(parameters_of(tool)) : parameters_of(tool);
  // At most one whitespace character between tokens: a model free to
  // write more may write nothing else.
  ojson content = {{"type", "json_schema"}, {"json_schema", parameters}, {"max_whitespace_cnt", 1}};
  if (syntax.content_style == "python") content = python_arguments_format(parameters);
  else if (syntax.keyed) content = keyed_arguments_format(parameters, *syntax.keyed);
  else if (syntax.content_style != "json") content["style"] = syntax.content_style;
  // A string argument is raw text up to its closing marker: it may not
  // hold the markers that would end the call early.
  if (syntax.content_style == "gemma") content["excludes"] = {std::string(syntax.open), std::string(syntax.close)};
  return content;
}

// A call index: bounded, as a model may write digits forever.
ojson index_format() { return {{"type", "regex"}, {"pattern", "[0-9]{1,5}"}}; }

// Command R's calls: one tag, the index first, then one of the tools.
ojson index_first_tags(const ToolRequest& r, const CallSyntax& syntax) {
  ojson tools = ojson::array();
  for (const ojson* t : callable(r))
    tools.push_back(
        {{"type", "sequence"},
         {"elements",
          {const_format(std::string(syntax.after_index) + name_of(*t) + std::string(syntax.begin_after_name)),
           arguments_format(*t, syntax)}}});
  ojson one_of = tools.size() == 1 ? tools[0] : ojson{{"type", "or"}, {"elements", std::move(tools)}};
  return ojson::array({{{"type", "tag"},
                        {"begin", std::string(syntax.begin_before_name)},
                        {"content", {{"type", "sequence"}, {"elements", {index_format(), std::move(one_of)}}}},
                        {"end", std::string(syntax.end)}}});
}

// One tag per tool: its name in the tag's begin (Kimi's index after it).
ojson named_tags(const ToolRequest& r, const CallSyntax& syntax) {
  ojson tags = ojson::array();
  for (const ojson* t : callable(r)) {
    ojson content = arguments_format(*t, syntax);
    if (!syntax.after_index.empty())
      content = {{"type", "sequence"},
                 {"elements", {index_format(), const_format(std::string(syntax.after_index)), std::move(content)}}};
    tags.push_back({{"type", "tag"},
                    {"begin", std::string(syntax.begin_before_name) + name_of(*t) + std::string(syntax.begin_after_name)},
                    {"content", std::move(content)},
                    {"end", std::string(syntax.end)}});
  }
  return tags;
}

// Functionary v3.2's reply: calls NAME\n{...} separated by `open`, or (auto)
// text after the text recipient, then calls each after `open`.
ojson recipient_messages_format(const ToolRequest& r, const CallSyntax& syntax) {
  const ojson tags = named_tags(r, syntax);
  ojson calls = {{"type", "tags_with_separator"}, {"tags", tags}, {"separator", std::string(syntax.open)},
                 {"at_least_one", true}, {"stop_after_first", !r.parallel}};
  if (r.choice != ToolChoice::Auto) return calls;
  ojson opened = tags;
  for (ojson& t : opened) t["begin"] = std::string(syntax.open) + t["begin"].get<std::string>();
  ojson text_then_calls = {{"type", "sequence"},
                           {"elements",
                            {const_format(std::string(syntax.text_recipient)),
                             {{"type", "triggered_tags"}, {"triggers", {std::string(syntax.open)}}, {"tags", opened},
                              {"at_least_one", false}, {"stop_after_first", !r.parallel}}}}};
  return {{"type", "or"}, {"elements", {std::move(calls), std::move(text_then_calls)}}};
}

ojson tagged_calls_format(const ToolRequest& r, const CallSyntax& syntax) {
  if (!syntax.text_recipient.empty()) return recipient_messages_format(r, syntax);
  const ojson tags = syntax.index_first ? index_first_tags(r, syntax) : named_tags(r, syntax);
  if (syntax.wraps_calls) {
    // One block of calls: opened by the trigger where the calls are free (auto).
    ojson calls = {{"type", "tags_with_separator"}, {"tags", tags}, {"separator", std::string(syntax.separator)},
                   {"at_least_one", true}, {"stop_after_first", !r.parallel}};
    ojson block = {{"type", "tag"},
                   {"begin", std::string(syntax.open) + std::string(syntax.calls_begin)},
                   {"content", std::move(calls)},
                   {"end", std::string(syntax.calls_end) + std::string(syntax.close)}};
    if (r.choice != ToolChoice::Auto) return block;
    // A list without a close marker ends the reply.
    return {{"type", "triggered_tags"}, {"triggers", {std::string(syntax.trigger)}}, {"tags", {std::move(block)}},
            {"at_least_one", false}, {"stop_after_first", !r.parallel || syntax.close.empty()}};
  }
  if (r.choice == ToolChoice::Auto)
    return {{"type", "triggered_tags"}, {"triggers", {std::string(syntax.trigger)}}, {"tags", tags},
            {"at_least_one", false}, {"stop_after_first", !r.parallel}};
  return {{"type", "tags_with_separator"}, {"tags", tags}, {"separator", std::string(syntax.separator)},
          {"at_least_one", true}, {"stop_after_first", !r.parallel}};
}

// The reasoning block a reply writes before its calls: closed first when
// the prompt opened it, optional where the reply may open it.
std::optional<ojson> reasoning_format(const std::optional<ReasoningSyntax>& syntax, ReasoningStart start) {
  if (!syntax || start == ReasoningStart::Skipped) return std::nullopt;
  ojson text = {{"type", "any_text"}, {"excludes", {std::string(syntax->begin), std::string(syntax->end)}}};
  ojson block = {{"type", "tag"},
                 {"begin", start == ReasoningStart::Open ? "" : std::string(syntax->begin)},
                 {"content", std::move(text)},
                 {"end", std::string(syntax->end) + std::string(syntax->separator)}};
  if (start == ReasoningStart::Optional) return ojson{{"type", "optional"}, {"content", std::move(block)}};
  return block;
}

}  // namespace

const char* tool_call_style_name(ToolCallStyle style) {
  switch (style) {
    case ToolCallStyle::Hermes: return "hermes";
    case ToolCallStyle::Llama3: return "llama3";
    case ToolCallStyle::QwenXml: return "qwen_xml";
    case ToolCallStyle::Gemma4: return "gemma4";
    case ToolCallStyle::Pythonic: return "pythonic";
    case ToolCallStyle::Mistral: return "mistral";
    case ToolCallStyle::MistralList: return "mistral_list";
    case ToolCallStyle::GlmXml: return "glm_xml";
    case ToolCallStyle::DeepSeekV3: return "deepseek_v3";
    case ToolCallStyle::DeepSeekR1: return "deepseek_r1";
    case ToolCallStyle::Kimi: return "kimi";
    case ToolCallStyle::MiniMaxXml: return "minimax_xml";
    case ToolCallStyle::MiniMaxJson: return "minimax_json";
    case ToolCallStyle::Nemotron: return "nemotron";
    case ToolCallStyle::Apriel: return "apriel";
    case ToolCallStyle::FireFunction: return "firefunction";
    case ToolCallStyle::Granite: return "granite";
    case ToolCallStyle::CommandR: return "command_r";
    case ToolCallStyle::CommandRPlus: return "command_r_plus";
    case ToolCallStyle::Apertus: return "apertus";
    case ToolCallStyle::SeedXml: return "seed_xml";
    case ToolCallStyle::DeepSeekV32: return "deepseek_v3_2";
    case ToolCallStyle::DeepSeekV4: return "deepseek_v4";
    case ToolCallStyle::Functionary: return "functionary";
    case ToolCallStyle::FunctionaryV32: return "functionary_v3_2";
    case ToolCallStyle::Harmony: return "harmony";
    case ToolCallStyle::SolarOpen: return "solar_open";
    case ToolCallStyle::KimiK3: return "kimi_k3";
    case ToolCallStyle::MiniMaxM3: return "minimax_m3";
    case ToolCallStyle::Hy3: return "hy3";
    case ToolCallStyle::MiniCpm5: return "minicpm5";
    case ToolCallStyle::Atem: return "atem";
    case ToolCallStyle::GigaChat3: return "gigachat3";
    case ToolCallStyle::GigaChat31: return "gigachat3_1";
    case ToolCallStyle::Generic: break;
  }
  return "generic";
}

ToolCallStyle tool_call_style_of(const ChatTemplate* chat_template) {
  if (!chat_template) return ToolCallStyle::Generic;
  const std::string& s = chat_template->source();
  auto has = [&](std::string_view part) { return s.find(part) != std::string::npos; };
  // <tool_call> blocks of JSON that starts with the name. Not Hermes: the
  // XML blocks of Qwen3.5 / Qwen3-Coder (<function=...>) and GLM / Ling
  // (<arg_key>), blocks that start with the bare name (MiniMax, Spark), and
  // Apriel's one <tool_calls>[...] list. Llama 3.1 - 3.3 ("Environment:
  // ipython"): one bare {"name": ..., "parameters": ...} per reply.
  // Formats whose markers are their own (checked first: MiniMax M3's
  // instructions also show <tool_call> and <invoke name=).
  if (has("]<]minimax[>[")) return ToolCallStyle::MiniMaxM3;
  if (has("<|channel|>commentary")) return ToolCallStyle::Harmony;
  if (has("<|tool_call:begin|>")) return ToolCallStyle::SolarOpen;
  if (has("<|end_of_msg|>")) return ToolCallStyle::KimiK3;
  if (has(":opensource")) return ToolCallStyle::Hy3;
  if (has("<param name=\"")) return ToolCallStyle::MiniCpm5;
  if (has("<atem:function_calls>")) return ToolCallStyle::Atem;
  if (has("<|role_sep|>")) return has("<|function_call|>") ? ToolCallStyle::GigaChat31 : ToolCallStyle::GigaChat3;
  if (has("<seed:tool_call>") && has("<function=")) return ToolCallStyle::SeedXml;
  if (has("<tool_call>") && has("<function=") && has("<parameter=")) return ToolCallStyle::QwenXml;
  if (has("<tool_call>") && has("<arg_key>") && has("<arg_value>")) return ToolCallStyle::GlmXml;
  if (has("<|tool_call>call:")) return ToolCallStyle::Gemma4;
  if (has("List of tools: <|tool_list_start|>[") || has("List of tools: [")) return ToolCallStyle::Pythonic;
  // DeepSeek: R1 (and its distills) write `function<｜tool▁sep｜>NAME` and a
  // ```json fence, V3.1 `NAME<｜tool▁sep｜>` and the bare JSON.
  if (has("<｜tool▁calls▁begin｜>") && has("<｜tool▁sep｜>"))
    return has("```json") ? ToolCallStyle::DeepSeekR1 : ToolCallStyle::DeepSeekV3;
  if (has("<|tool_calls_section_begin|>") && has("<|tool_call_argument_begin|>")) return ToolCallStyle::Kimi;
  // MiniMax: M2's <invoke name=...> XML in <minimax:tool_call>, M1's JSON
  // lines in <tool_calls> (M3 writes its own XML: not this one).
  if (has("'<minimax:tool_call>'") && has("<invoke name=")) return ToolCallStyle::MiniMaxXml;
  if (has("<tool_calls>\\n{\"name\"") || (has("<tool_calls>") && has("'{\"name\": \"' + tool_call.function.name")))
    return ToolCallStyle::MiniMaxJson;
  // DeepSeek V3.2 / V4's DSML blocks: <｜DSML｜function_calls>, V4's <｜DSML｜tool_calls>.
  if (has("DSML") && has("invoke name="))
    return has("function_calls>") ? ToolCallStyle::DeepSeekV32 : ToolCallStyle::DeepSeekV4;
  // JSON lists of calls after a marker.
  if (has("<|START_ACTION|>") && has("\"tool_name\"")) return ToolCallStyle::CommandR;
  if (has("Action:\\n```json")) return ToolCallStyle::CommandRPlus;
  if (has("<|tools_prefix|>")) return ToolCallStyle::Apertus;
  if (has("<TOOLCALL>[")) return ToolCallStyle::Nemotron;
  if (has("<tool_calls>[")) return ToolCallStyle::Apriel;
  if (has("' functools['")) return ToolCallStyle::FireFunction;
  if (has("<|tool_call|>") && has("JSON list")) return ToolCallStyle::Granite;
  if (has("'<function='") && has("'</function>'") && !has("<parameter=")) return ToolCallStyle::Functionary;
  if (has("'>>>all\\n'") && has("'>>>' + tool_call['function']['name']")) return ToolCallStyle::FunctionaryV32;
  if (has("[TOOL_CALLS]") && has("[ARGS]")) return ToolCallStyle::Mistral;
  if (has("[TOOL_CALLS][")) return ToolCallStyle::MistralList;
  if (has("<tool_call>") && (has("{\"name\"") || has("{\\\"name\\\"")) && !has("<function=") && !has("<arg_key>") &&
      !has("<tool_calls>["))
    return ToolCallStyle::Hermes;
  if (has("Environment: ipython") && has("\"parameters\": ")) return ToolCallStyle::Llama3;
  return ToolCallStyle::Generic;
}

ToolRequest ToolRequest::parse(const ojson& tools, const ojson* tool_choice, const ojson* parallel_tool_calls) {
  ToolRequest r;
  if (!tools.is_array()) fail("request", "tools", "must be a list of tools");
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& t = tools[i];
    if (!t.is_object() || t.value("type", "") != "function" || !t.contains("function") || !t["function"].is_object())
      fail("request", "tools", "tools[{}] must be {{\"type\": \"function\", \"function\": {{...}}}}", i);
    const ojson& f = t["function"];
    if (!f.contains("name") || !f["name"].is_string() || f["name"].get<std::string>().empty())
      fail("request", "tools", "tools[{}].function.name must be a non-empty string", i);
    const std::string name = f["name"].get<std::string>();
    if (name.find_first_of("\"\\\n<>") != std::string::npos)
      fail("request", "tools", "tools[{}].function.name '{}' has a character a call cannot carry", i, name);
    if (f.contains("parameters") && !f["parameters"].is_object() && !f["parameters"].is_null())
      fail("request", "tools", "tools[{}].function.parameters must be a JSON Schema object", i);
    for (const ojson& other : r.tools)
      if (name_of(other) == name) fail("request", "tools", "two tools are named '{}'", name);
    r.tools.push_back(t);
  }
  if (tool_choice && !tool_choice->is_null()) {
    if (tool_choice->is_string()) {
      const std::string c = tool_choice->get<std::string>();
      if (c == "auto") r.choice = ToolChoice::Auto;
      else if (c == "none") r.choice = ToolChoice::None;
      else if (c == "required") r.choice = ToolChoice::Required;
      else fail("request", "tool_choice", "must be \"auto\", \"none\", \"required\" or a named function, got '{}'", c);
    } else if (tool_choice->is_object() && tool_choice->value("type", "") == "function" &&
               tool_choice->contains("function") && (*tool_choice)["function"].contains("name") &&
               (*tool_choice)["function"]["name"].is_string()) {
      r.choice = ToolChoice::Named;
      r.named = (*tool_choice)["function"]["name"].get<std::string>();
      if (std::none_of(r.tools.begin(), r.tools.end(), [&](const ojson& t) { return name_of(t) == r.named; }))
        fail("request", "tool_choice", "names '{}', which is not one of the tools", r.named);
    } else {
      fail("request", "tool_choice", "must be a string or {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}");
    }
  }
  if (r.tools.empty() && (r.choice == ToolChoice::Required || r.choice == ToolChoice::Named))
    fail("request", "tool_choice", "a call is required but no tools are given");
  if (r.tools.empty()) r.choice = ToolChoice::None;
  if (parallel_tool_calls && !parallel_tool_calls->is_null()) {
    if (!parallel_tool_calls->is_boolean()) fail("request", "parallel_tool_calls", "must be a boolean");
    r.parallel = parallel_tool_calls->get<bool>();
  }
  return r;
}

ToolCalling::ToolCalling(ToolCallStyle style, ToolRequest request, std::optional<ReasoningSyntax> reasoning,
                         ReasoningStart start)
    : style_(style), request_(std::move(request)), reasoning_(reasoning), start_(start) {
  // Their templates take one call per message (harmony's <|call|> ends the reply).
  if (style_ == ToolCallStyle::Llama3 || style_ == ToolCallStyle::Harmony || style_ == ToolCallStyle::GigaChat3 ||
      style_ == ToolCallStyle::GigaChat31)
    request_.parallel = false;
}

CallMessageForm call_message_form_of(const ChatTemplate* chat_template) {
  CallMessageForm form;
  if (!chat_template) return form;
  const std::string& s = chat_template->source();
  for (std::string_view concat : {"['arguments'] +", "['arguments']+", ".arguments +", ".arguments+", "+ tool_call['function']['arguments'] }}"})
    form.text_arguments |= s.find(concat) != std::string::npos;
  // A template that also serializes OpenAI calls' arguments itself (Apertus:
  // its own block format concatenates, its tool_calls path writes
  // `function.arguments|tojson`) takes them as an object there.
  for (std::string_view serialized : {"function.arguments|tojson", "function.arguments | tojson"})
    if (s.find(serialized) != std::string::npos) form.text_arguments = false;
  return form;
}

ojson ToolCalling::messages(const ojson& openai_messages, CallMessageForm form) const {
  ojson out = ojson::array();
  if (style_ == ToolCallStyle::Pythonic || style_ == ToolCallStyle::Granite) {
    // Their templates know no `tool_calls`: the calls go in the content, as
    // the model writes them.
    for (const ojson& m : openai_messages) {
      ojson copy = m;
      if (copy.contains("tool_calls")) {
        std::string calls;
        for (const ojson& call : copy["tool_calls"]) {
          const ojson args = arguments_object(call["function"]["arguments"]);
          const std::string name = call["function"]["name"].get<std::string>();
          calls += calls.empty() ? "" : ", ";
          if (style_ == ToolCallStyle::Granite) {
            calls += ojson{{"name", name}, {"arguments", args}}.dump();
            continue;
          }
          std::string list;
          if (args.is_object())
            for (const auto& [key, value] : args.items()) list += (list.empty() ? "" : ", ") + key + "=" + python_literal(value);
          calls += name + "(" + list + ")";
        }
        const CallSyntax& syntax = syntax_of(style_);
        const std::string text = copy.contains("content") && copy["content"].is_string() ? copy["content"].get<std::string>() : "";
        copy["content"] = text + std::string(syntax.open) + "[" + calls + "]" + std::string(syntax.close);
        copy.erase("tool_calls");
      }
      out.push_back(std::move(copy));
    }
    return out;
  }
  if (style_ != ToolCallStyle::Generic) {
    const bool mistral = style_ == ToolCallStyle::Mistral || style_ == ToolCallStyle::MistralList;
    for (const ojson& m : openai_messages) {
      ojson copy = m;
      if (mistral && copy.contains("tool_call_id") && copy["tool_call_id"].is_string())
        copy["tool_call_id"] = nine_character_id(copy["tool_call_id"].get<std::string>());
      if (copy.contains("tool_calls")) {
        for (ojson& call : copy["tool_calls"]) {
          if (call.contains("function") && call["function"].contains("arguments")) {
            ojson& arguments = call["function"]["arguments"];
            if (!form.text_arguments) arguments = arguments_object(arguments);
            else if (!arguments.is_string()) arguments = arguments.dump();
          }
          if (mistral) call["id"] = nine_character_id(call.value("id", ""));
        }
        // DeepSeek R1's templates write a turn's calls only when its content is none.
        const bool keep_none = style_ == ToolCallStyle::DeepSeekR1;
        if (!copy.contains("content") || (copy["content"].is_null() && !keep_none))
          copy["content"] = keep_none ? ojson() : ojson("");
      }
      out.push_back(std::move(copy));
    }
    return out;
  }
  // Generic: the instructions first, calls as the JSON replies they were,
  // results as user messages (a template without tools may know no `tool` role).
  const std::string instructions = generic_instructions(request_);
  size_t first = 0;
  if (!openai_messages.empty() && openai_messages[0].value("role", "") == "system") {
    out.push_back({{"role", "system"}, {"content", openai_messages[0].value("content", "") + "\n\n" + instructions}});
    first = 1;
  } else if (!request_.tools.empty()) {
    out.push_back({{"role", "system"}, {"content", instructions}});
  }
  for (size_t i = first; i < openai_messages.size(); ++i) {
    const ojson& m = openai_messages[i];
    const std::string role = m.value("role", "");
    if (role == "assistant" && m.contains("tool_calls") && !m["tool_calls"].empty()) {
      ojson calls = ojson::array();
      for (const ojson& call : m["tool_calls"])
        calls.push_back({{"name", call["function"]["name"]}, {"arguments", arguments_object(call["function"]["arguments"])}});
      out.push_back({{"role", "assistant"}, {"content", ojson{{"tool_calls", calls}}.dump()}});
    } else if (role == "tool") {
      const std::string result =
          ojson{{"tool_response", {{"tool_call_id", m.value("tool_call_id", "")}, {"content", m.value("content", "")}}}}
              .dump();
      if (!out.empty() && out.back()["role"] == "user" && i > first && openai_messages[i - 1].value("role", "") == "tool")
        out.back()["content"] = out.back()["content"].get<std::string>() + "\n" + result;
      else
        out.push_back({{"role", "user"}, {"content", result}});
    } else {
      ojson copy = m;
      if (role == "assistant" && (!copy.contains("content") || copy["content"].is_null())) copy["content"] = "";
      out.push_back(std::move(copy));
    }
  }
  return out;
}

ojson ToolCalling::template_extra() const {
  if (style_ != ToolCallStyle::Generic && !request_.tools.empty()) return {{"tools", request_.tools}};
  return ojson::object();
}

ConstraintSpec ToolCalling::constraint() const {
  if (!parses()) return {};
  const std::optional<ojson> reasoning = reasoning_format(reasoning_, start_);
  if (style_ == ToolCallStyle::Generic && !reasoning)
    return {ConstraintKind::JsonSchema, generic_reply_schema(request_).dump()};
  ojson calls = style_ == ToolCallStyle::Generic
                    ? ojson{{"type", "json_schema"}, {"json_schema", generic_reply_schema(request_)}}
                    : tagged_calls_format(request_, syntax_of(style_));
  ojson format = reasoning ? ojson{{"type", "sequence"}, {"elements", {*reasoning, calls}}} : calls;
  return {ConstraintKind::StructuralTag, ojson{{"type", "structural_tag"}, {"format", format}}.dump()};
}

void ToolCalling::constrain(GenerationSettings& s) const {
  const ConstraintSpec spec = constraint();
  if (spec.empty()) return;
  if (!s.json_schema.empty() || !s.grammar.empty() || !s.regex.empty() || !s.structural_tag.empty())
    fail("request", "tools",
         "tools (unless tool_choice is \"none\") constrain the reply themselves: they take no response_format, "
         "json_schema, grammar, regex or structural_tag");
  (spec.kind == ConstraintKind::StructuralTag ? s.structural_tag : s.json_schema) = spec.text;
}

ToolReply ToolCalling::parse(std::string_view text, const std::string& reply_id) const {
  return ChatReplyStream::parse(text, this, std::nullopt, ReasoningStart::Skipped, reply_id, reply_frames_of(style_));
}

ToolReplyStream::ToolReplyStream(const ToolCalling& calling, std::string reply_id)
    : calling_(calling), reply_id_(std::move(reply_id)) {
  // Functionary v3.2: the generation prompt wrote the first message's opener.
  if (calling_.parses() && !syntax_of(calling_.style()).text_recipient.empty()) state_ = State::Block;
}

namespace {

enum class HeadScan { Incomplete, Malformed, Done };

// Reads `{"name": "NAME", "arguments": ` (or "parameters") at the start of
// `text` (the text after "<tool_call>"), with any whitespace between the
// parts; Done sets `name` and `args` (where the arguments start).
HeadScan scan_head(std::string_view text, std::string& name, size_t& args) {
  size_t i = 0;
  auto skip = [&] {
    while (i < text.size() && is_space(text[i])) ++i;
  };
  // Matches `lit` at i: 1 matched, 0 incomplete, -1 mismatch.
  auto literal = [&](std::string_view lit) {
    const std::string_view rest = text.substr(i);
    if (rest.size() < lit.size()) return lit.substr(0, rest.size()) == rest ? 0 : -1;
    if (rest.substr(0, lit.size()) != lit) return -1;
    i += lit.size();
    return 1;
  };
  int m;
  skip();
  if ((m = literal("{")) != 1) return m == 0 ? HeadScan::Incomplete : HeadScan::Malformed;
  skip();
  if ((m = literal("\"name\"")) != 1) return m == 0 ? HeadScan::Incomplete : HeadScan::Malformed;
  skip();
  if ((m = literal(":")) != 1) return m == 0 ? HeadScan::Incomplete : HeadScan::Malformed;
  skip();
  if ((m = literal("\"")) != 1) return m == 0 ? HeadScan::Incomplete : HeadScan::Malformed;
  const size_t name_end = text.find('"', i);
  if (name_end == std::string_view::npos) return HeadScan::Incomplete;
  const std::string_view found = text.substr(i, name_end - i);
  i = name_end + 1;
  skip();
  if ((m = literal(",")) != 1) return m == 0 ? HeadScan::Incomplete : HeadScan::Malformed;
  skip();
  if ((m = literal("\"")) != 1) return m == 0 ? HeadScan::Incomplete : HeadScan::Malformed;
  const size_t key_end = text.find('"', i);
  if (key_end == std::string_view::npos) return i + 10 < text.size() ? HeadScan::Malformed : HeadScan::Incomplete;
  const std::string_view key = text.substr(i, key_end - i);
  if (key != "arguments" && key != "parameters") return HeadScan::Malformed;
  i = key_end + 1;
  skip();
  if ((m = literal(":")) != 1) return m == 0 ? HeadScan::Incomplete : HeadScan::Malformed;
  skip();
  if (i == text.size()) return HeadScan::Incomplete;  // the arguments' first character decides nothing, but wait for it
  name = std::string(found);
  args = i;
  return HeadScan::Done;
}

// Where text[0, end) ends once trailing whitespace, one closing brace (the
// call's own) and the whitespace before it are taken off.
size_t before_closing_brace(std::string_view text, size_t end) {
  while (end > 0 && is_space(text[end - 1])) --end;
  if (end > 0 && text[end - 1] == '}') --end;
  while (end > 0 && is_space(text[end - 1])) --end;
  return end;
}

ToolReplyDelta arguments_delta(int index, std::string arguments) {
  ToolReplyDelta d;
  d.index = index;
  d.arguments = std::move(arguments);
  return d;
}

ToolReplyDelta text_delta(std::string text) {
  ToolReplyDelta d;
  d.content = std::move(text);
  return d;
}

}  // namespace

void ToolReplyStream::emit_calls(std::vector<BlockCall>& calls, std::vector<ToolReplyDelta>& out) {
  for (BlockCall& call : calls) {
    ToolReplyDelta d;
    d.index = calls_;
    d.id = call_id(reply_id_, calls_);
    d.name = std::move(call.name);
    d.arguments = call.arguments.dump();
    out.push_back(std::move(d));
    ++calls_;
  }
}

std::vector<ToolReplyDelta> ToolReplyStream::push(std::string_view text) {
  std::vector<ToolReplyDelta> out;
  if (!calling_.parses()) {
    if (!text.empty()) out.push_back(text_delta(std::string(text)));
    return out;
  }
  if (calling_.style() == ToolCallStyle::Generic) {
    all_ += text;  // one JSON object: known only when whole
    return out;
  }
  buffer_ += text;
  // Content is handed out without the whitespace that only separates
  // calls (or leads / trails the reply): a whitespace run is held until
  // text other than a call follows it, and dropped before a call.
  auto content = [&](std::string_view piece) {
    if (piece.empty()) return;
    out.push_back(text_delta(std::string(piece)));
  };
  for (;;) {
    if (state_ == State::Text) {
      const CallSyntax& syntax = syntax_of(calling_.style());
      const size_t open = buffer_.find(syntax.open);
      const size_t end = open != std::string::npos ? open : buffer_.size() - partial_marker(buffer_, syntax.open);
      // Hand out up to `end`, keeping a trailing whitespace run back.
      size_t keep = end;
      while (keep > 0 && is_space(buffer_[keep - 1])) --keep;
      size_t from = 0;
      if (!emitted_content_)
        while (from < keep && is_space(buffer_[from])) ++from;  // leading whitespace of the reply
      if (keep > from) {
        content(std::string_view(buffer_).substr(from, keep - from));
        emitted_content_ = true;
      }
      if (open == std::string::npos) {
        buffer_.erase(0, keep);  // the whitespace run and any partial "<tool_call>" wait
        return out;
      }
      // The whitespace before a call is dropped (and the open marker, unless
      // it is the JSON's own start).
      buffer_.erase(0, open + (syntax.open_is_json ? 0 : syntax.open.size()));
      state_ = syntax.read_block ? State::Block : State::Head;
    }
    if (state_ == State::Block) {
      // A block style's call is read whole, once its close marker is seen
      // (Mistral's have none: they run to the end of the reply).
      const CallSyntax& syntax = syntax_of(calling_.style());
      const bool recipients = !syntax.text_recipient.empty();
      if (recipients) {  // a text message: its text is content
        const std::string_view head = syntax.text_recipient;
        if (buffer_.size() < head.size() && head.starts_with(buffer_)) return out;
        if (buffer_.starts_with(head)) {
          buffer_.erase(0, head.size());
          state_ = State::Text;
          continue;
        }
      }
      if (syntax.close.empty()) return out;
      const size_t close = buffer_.find(syntax.close);
      if (close == std::string::npos) return out;
      std::optional<std::vector<BlockCall>> calls =
          syntax.read_block(std::string_view(buffer_).substr(0, close), calling_.request().tools);
      // A message's close is the next message's opener: it stays.
      const size_t taken = recipients ? close : close + syntax.close.size();
      if (calls) {
        emit_calls(*calls, out);
      } else {  // not a call after all: the text as it is
        out.push_back(text_delta(std::string(syntax.open) + buffer_.substr(0, taken)));
        emitted_content_ = true;
      }
      buffer_.erase(0, taken);
      state_ = State::Text;
      continue;
    }
    if (state_ == State::Head) {
      // {"name": "NAME", "arguments": (or "parameters"), any spacing.
      std::string name;
      size_t args = 0;
      const HeadScan scan = scan_head(buffer_, name, args);
      if (scan == HeadScan::Incomplete) return out;
      if (scan == HeadScan::Malformed) {  // not a call after all: the text as it is
        if (!syntax_of(calling_.style()).open_is_json) buffer_.insert(0, syntax_of(calling_.style()).open);
        out.push_back(text_delta(buffer_));
        emitted_content_ = true;
        buffer_.clear();
        state_ = State::Text;
        return out;
      }
      ToolReplyDelta start;
      start.index = calls_;
      start.id = call_id(reply_id_, calls_);
      start.name = std::move(name);
      out.push_back(std::move(start));
      buffer_.erase(0, args);
      state_ = State::Arguments;
    }
    if (state_ == State::Arguments) {
      // The arguments run to the block's "}" before "</tool_call>"; until
      // that marker is seen, a trailing "}" (with whitespace) may be the
      // block's own and waits.
      const std::string_view close_tag = syntax_of(calling_.style()).close;
      const size_t close = close_tag.empty() ? std::string::npos : buffer_.find(close_tag);
      size_t end = close != std::string::npos ? close
                   : close_tag.empty()        ? buffer_.size()
                                              : buffer_.size() - partial_marker(buffer_, close_tag);
      end = before_closing_brace(buffer_, end);
      if (end > 0) out.push_back(arguments_delta(calls_, buffer_.substr(0, end)));
      if (close == std::string::npos) {
        buffer_.erase(0, end);
        return out;
      }
      buffer_.erase(0, close + close_tag.size());
      ++calls_;
      state_ = State::Text;
    }
  }
}

std::vector<ToolReplyDelta> ToolReplyStream::finish() {
  std::vector<ToolReplyDelta> out;
  if (!calling_.parses()) return out;
  if (calling_.style() == ToolCallStyle::Generic) {
    const ojson reply = ojson::parse(all_, nullptr, /*allow_exceptions=*/false);
    if (reply.is_object() && reply.contains("tool_calls") && reply["tool_calls"].is_array()) {
      std::vector<BlockCall> calls;
      for (const ojson& call : reply["tool_calls"])
        if (call.is_object() && call.contains("name") && call["name"].is_string())
          calls.push_back({call["name"].get<std::string>(), call.value("arguments", ojson::object())});
      emit_calls(calls, out);
    } else if (reply.is_object() && reply.contains("response") && reply["response"].is_string()) {
      if (!reply["response"].get<std::string>().empty()) out.push_back(text_delta(reply["response"].get<std::string>()));
    } else if (!all_.empty()) {
      out.push_back(text_delta(all_));  // not the format (cut short by max_tokens): the text as it is
    }
    return out;
  }
  if (state_ == State::Text) {
    // What is left: trailing whitespace (dropped) or a partial "<tool_call>" (text).
    size_t keep = buffer_.size();
    while (keep > 0 && is_space(buffer_[keep - 1])) --keep;
    if (keep > 0) out.push_back(text_delta(buffer_.substr(0, keep)));
  } else if (state_ == State::Arguments && syntax_of(calling_.style()).close.empty()) {
    // The call's JSON ends with the reply: what is held is its closing brace.
    const size_t end = before_closing_brace(buffer_, buffer_.size());
    if (end > 0) out.push_back(arguments_delta(calls_, buffer_.substr(0, end)));
    ++calls_;
  } else if (state_ == State::Block) {
    const CallSyntax& syntax = syntax_of(calling_.style());
    std::optional<std::vector<BlockCall>> calls;
    // Mistral's calls, Functionary v3.2's last message and a block whose
    // close is the stop token end with the reply.
    if (syntax.close.empty() || !syntax.text_recipient.empty() || syntax.close_may_stop)
      calls = syntax.read_block(buffer_, calling_.request().tools);
    if (!syntax.text_recipient.empty() && buffer_.empty()) {
      // An empty reply (or one that ends at an opener): nothing.
    } else if (calls) {
      emit_calls(*calls, out);
    } else {  // a block cut short (max_tokens) is no call: the text as it is
      out.push_back(text_delta(std::string(syntax.open) + buffer_));
    }
  } else if (state_ == State::Arguments && !buffer_.empty()) {
    out.push_back(arguments_delta(calls_, buffer_));  // a call cut short (max_tokens): as far as it goes
  }
  buffer_.clear();
  return out;
}

ChatReplyStream::ChatReplyStream(const ToolCalling* tools, std::optional<ReasoningSyntax> reasoning,
                                 ReasoningStart start, std::string reply_id, std::optional<ReplyFrames> frames) {
  if (reasoning) splitter_.emplace(*reasoning, start);
  if (frames) frames_.emplace(std::move(*frames));
  if (tools) calls_.emplace(*tools, std::move(reply_id));
}

std::vector<ToolReplyDelta> ChatReplyStream::pass(std::vector<ReplyPiece> pieces, bool final) {
  std::vector<ToolReplyDelta> out;
  for (ReplyPiece& p : pieces) {
    if (p.reasoning) {
      ToolReplyDelta d;
      d.reasoning = std::move(p.text);
      out.push_back(std::move(d));
      continue;
    }
    content(frames_ ? frames_->push(p.text) : std::move(p.text), out);
  }
  if (final && frames_) content(frames_->finish(), out);
  if (final && calls_)
    for (ToolReplyDelta& d : calls_->finish()) out.push_back(std::move(d));
  return out;
}

void ChatReplyStream::content(std::string text, std::vector<ToolReplyDelta>& out) {
  if (calls_) {
    for (ToolReplyDelta& d : calls_->push(text)) out.push_back(std::move(d));
  } else if (!text.empty()) {
    out.push_back(text_delta(std::move(text)));
  }
}

std::vector<ToolReplyDelta> ChatReplyStream::push(std::string_view text) {
  if (splitter_) return pass(splitter_->push(text), false);
  return pass({ReplyPiece{false, std::string(text)}}, false);
}

std::vector<ToolReplyDelta> ChatReplyStream::finish() {
  return pass(splitter_ ? splitter_->finish() : std::vector<ReplyPiece>{}, true);
}

ToolReply ChatReplyStream::parse(std::string_view text, const ToolCalling* tools,
                                 std::optional<ReasoningSyntax> reasoning, ReasoningStart start,
                                 const std::string& reply_id, std::optional<ReplyFrames> frames) {
  ChatReplyStream stream(tools, reasoning, start, reply_id, std::move(frames));
  std::vector<ToolReplyDelta> deltas = stream.push(text);
  for (ToolReplyDelta& d : stream.finish()) deltas.push_back(std::move(d));
  ToolReply reply;
  for (const ToolReplyDelta& d : deltas) {
    reply.reasoning += d.reasoning;
    if (d.index < 0) {
      reply.content += d.content;
      continue;
    }
    if (d.index >= static_cast<int>(reply.calls.size())) reply.calls.push_back({d.id, d.name, ""});
    reply.calls[static_cast<size_t>(d.index)].arguments += d.arguments;
  }
  return reply;
}

}  // namespace tessera
