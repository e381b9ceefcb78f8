// Tool calling: requests checked, replies parsed (whole and streamed in any
// split, the same calls), and constrained random walks that always give
// calls whose arguments parse and name a tool.
#include "generation/tool_calls.h"

#include <random>

#include <gtest/gtest.h>

#include "core/error.h"
#include "generation/tool_call_readers.h"
#include "tokenizer/byte_level_tokenizer_for_tests.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace tessera {
namespace {

using ojson = nlohmann::ordered_json;

ojson weather_tools() {
  return ojson::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8},
                                                       "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                     "required": ["city", "days"]}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
      "properties": {"zone": {"enum": ["utc", "cet"]}}, "required": ["zone"]}}}])");
}

ToolCalling calling(ToolCallStyle style, const char* choice = "auto", bool parallel = true,
                    const ojson& tools = weather_tools()) {
  const ojson c = choice[0] == '{' ? ojson::parse(choice) : ojson(choice);
  const ojson p = parallel;
  return ToolCalling(style, ToolRequest::parse(tools, &c, &p));
}

// The reply streamed in pieces split at random points, folded the way
// ToolCalling::parse folds deltas.
ToolReply streamed(const ToolCalling& tc, const std::string& text, uint64_t seed) {
  // As a chat reply reads it: the style's message frames taken out first.
  ChatReplyStream stream(&tc, std::nullopt, ReasoningStart::Skipped, "chatcmpl-abc", reply_frames_of(tc.style()));
  std::mt19937_64 rng(seed);
  std::vector<ToolReplyDelta> deltas;
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min<size_t>(text.size() - at, 1 + rng() % 7);
    for (auto& d : stream.push(std::string_view(text).substr(at, n))) deltas.push_back(d);
    at += n;
  }
  for (auto& d : stream.finish()) deltas.push_back(d);
  ToolReply r;
  for (const auto& d : deltas) {
    if (d.index < 0) {
      r.content += d.content;
    } else {
      if (d.index >= static_cast<int>(r.calls.size())) {
        EXPECT_FALSE(d.id.empty());
        EXPECT_FALSE(d.name.empty());
        r.calls.push_back({d.id, d.name, ""});
      }
      r.calls[static_cast<size_t>(d.index)].arguments += d.arguments;
    }
  }
  return r;
}

void expect_same(const ToolReply& a, const ToolReply& b) {
  EXPECT_EQ(a.content, b.content);
  ASSERT_EQ(a.calls.size(), b.calls.size());
  for (size_t i = 0; i < a.calls.size(); ++i) {
    EXPECT_EQ(a.calls[i].id, b.calls[i].id);
    EXPECT_EQ(a.calls[i].name, b.calls[i].name);
    EXPECT_EQ(a.calls[i].arguments, b.calls[i].arguments);
  }
}

// The reply parsed whole, checked equal to the same reply streamed in
// pieces split at 50 random sets of points.
ToolReply parsed_whole_and_streamed(const ToolCalling& tc, const std::string& text) {
  const ToolReply whole = tc.parse(text, "chatcmpl-abc");
  for (uint64_t seed = 0; seed < 50; ++seed) expect_same(streamed(tc, text, seed), whole);
  return whole;
}

// The reply most tests write: "Checking." then get_weather(Paris, 2) and get_time(cet).
void expect_checking_weather_then_time(const ToolReply& r) {
  EXPECT_EQ(r.content, "Checking.");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(ojson::parse(r.calls[0].arguments), ojson::parse(R"({"city": "Paris", "days": 2})"));
  EXPECT_EQ(r.calls[1].name, "get_time");
  EXPECT_EQ(r.calls[1].arguments, R"({"zone":"cet"})");
}

TEST(ToolCalls, HermesRepliesParseWholeAndStreamed) {
  const ToolCalling tc = calling(ToolCallStyle::Hermes);
  const std::string text =
      "  Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"cet\"}}\n</tool_call>\n";
  const ToolReply r = parsed_whole_and_streamed(tc, text);
  EXPECT_EQ(r.content, "Let me check.");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].id, "call_abc_0");
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(ojson::parse(r.calls[0].arguments), ojson::parse(R"({"city": "Paris", "days": 2})"));
  EXPECT_EQ(r.calls[1].name, "get_time");
  // Text only, with a "<" that is not a call.
  const std::string plain = "a < b, and <tool is not a call";
  EXPECT_EQ(tc.parse(plain, "x").content, plain);
  for (uint64_t seed = 0; seed < 20; ++seed) expect_same(streamed(tc, plain, seed), tc.parse(plain, "x"));
}

TEST(ToolCalls, Llama3RepliesParseWholeAndStreamed) {
  const ToolCalling tc = calling(ToolCallStyle::Llama3);
  EXPECT_FALSE(tc.request().parallel);  // one call per reply, as its template takes them
  const std::string text = "Let me look.\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": {\"n\": 2}}}";
  const ToolReply r = parsed_whole_and_streamed(tc, text);
  EXPECT_EQ(r.content, "Let me look.");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(ojson::parse(r.calls[0].arguments), ojson::parse(R"({"city": "Paris", "days": {"n": 2}})"));
  EXPECT_EQ(tc.parse("{\"nam", "x").content, "{\"nam");  // not a call
}

TEST(ToolCalls, QwenXmlRepliesParseWholeAndStreamed) {
  const ToolCalling tc = calling(ToolCallStyle::QwenXml);
  // As Qwen3.5's template writes calls: strings raw (here over two lines,
  // with a quote), other values as JSON or Python's spelling.
  const std::string text =
      "Checking.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nSan \"Fran\"\ncisco\n</parameter>\n"
      "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_time>\n"
      "<parameter=zone>\ncet\n</parameter>\n</function>\n</tool_call>";
  const ToolReply r = parsed_whole_and_streamed(tc, text);
  EXPECT_EQ(r.content, "Checking.");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(ojson::parse(r.calls[0].arguments), ojson::parse(R"({"city": "San \"Fran\"\ncisco", "days": 2})"));
  EXPECT_EQ(ojson::parse(r.calls[1].arguments), ojson::parse(R"({"zone": "cet"})"));
  // A block that is no call of a tool (an unknown function) and one cut
  // short are text as they are.
  const std::string unknown = "<tool_call>\n<function=nope>\n</function>\n</tool_call>";
  EXPECT_EQ(tc.parse(unknown, "x").content, unknown);
  EXPECT_EQ(tc.parse("<tool_call>\n<function=get_time>\n<para", "x").content, "<tool_call>\n<function=get_time>\n<para");
  // Python spellings and JSON lists for values that are not strings.
  const ojson tools = ojson::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
      "properties": {"on": {"type": "boolean"}, "ids": {"type": "array"}, "x": {}, "s": {"enum": ["1", "2"]}}}}}])");
  const std::optional<BlockCall> call = read_qwen_xml_call(
      "<function=f>\n<parameter=on>\nTrue\n</parameter>\n<parameter=ids>\n[1, 2]\n</parameter>\n"
      "<parameter=x>\nNone\n</parameter>\n<parameter=s>\n1\n</parameter>\n</function>",
      tools);
  ASSERT_TRUE(call);
  EXPECT_EQ(call->arguments, ojson::parse(R"({"on": true, "ids": [1, 2], "x": null, "s": "1"})"));
}

TEST(ToolCalls, Gemma4RepliesParseWholeAndStreamed) {
  const ToolCalling tc = calling(ToolCallStyle::Gemma4);
  const std::string text =
      "Checking.<|tool_call>call:get_weather{city:<|\"|>Paris, \"FR\"<|\"|>,days:2}<tool_call|>"
      "<|tool_call>call:get_time{zone:<|\"|>cet<|\"|>}<tool_call|>";
  const ToolReply r = parsed_whole_and_streamed(tc, text);
  EXPECT_EQ(r.content, "Checking.");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(ojson::parse(r.calls[0].arguments), ojson::parse(R"({"city": "Paris, \"FR\"", "days": 2})"));
  EXPECT_EQ(r.calls[1].name, "get_time");
  // Nested values, quoted keys, Python spellings; malformed values are no value.
  EXPECT_EQ(*read_gemma_value(R"({a:[1,-2.5e3,{<|"|>b c<|"|>:null}],t:true,f:False, s:<|"|>x:{y}<|"|>})"),
            ojson::parse(R"({"a": [1, -2500.0, {"b c": null}], "t": true, "f": false, "s": "x:{y}"})"));
  EXPECT_FALSE(read_gemma_value("{a:1"));
  EXPECT_FALSE(read_gemma_value("{a:<|\"|>open}"));
  EXPECT_FALSE(read_gemma_value("{a:bare}"));
  EXPECT_FALSE(read_gemma_value("{a:1} trailing"));
  EXPECT_EQ(tc.parse("<|tool_call>call:get_time{zone:<|\"|>cet}<tool_call|>", "x").calls.size(), 0u);
}

TEST(ToolCalls, PythonicRepliesParseWholeAndStreamed) {
  const ToolCalling tc = calling(ToolCallStyle::Pythonic);
  // LFM2 writes a list of calls; several lists are several blocks.
  const std::string text =
      "Checking.<|tool_call_start|>[get_weather(city='San \\'Fran\\'', days=2), get_time(zone=\"cet\")]"
      "<|tool_call_end|><|tool_call_start|>[get_time(zone=\"utc\")]<|tool_call_end|>";
  const ToolReply r = parsed_whole_and_streamed(tc, text);
  EXPECT_EQ(r.content, "Checking.");
  ASSERT_EQ(r.calls.size(), 3u);
  EXPECT_EQ(ojson::parse(r.calls[0].arguments), ojson::parse(R"({"city": "San 'Fran'", "days": 2})"));
  EXPECT_EQ(r.calls[1].name, "get_time");
  EXPECT_EQ(r.calls[2].id, "call_abc_2");
  const ojson tools = ojson::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  const auto calls = read_pythonic_calls(
      R"([f(a=True, b=None, c=[1, 2.5, "x\n\u00e9\ud83d\ude00"], d={"k": false}, e=-3), f()])", tools);
  ASSERT_TRUE(calls);
  ASSERT_EQ(calls->size(), 2u);
  EXPECT_EQ((*calls)[0].arguments,
            ojson::parse(R"({"a": true, "b": null, "c": [1, 2.5, "x\n\u00e9\ud83d\ude00"], "d": {"k": false}, "e": -3})"));
  EXPECT_EQ((*calls)[1].arguments, ojson::object());
  EXPECT_FALSE(read_pythonic_calls("[f(a=unquoted)]", tools));
  EXPECT_FALSE(read_pythonic_calls("[g()]", tools));  // not a tool
  EXPECT_FALSE(read_pythonic_calls("[f(a=1]", tools));
  // Written back as the model writes them: Python's spelling.
  EXPECT_EQ(python_literal(ojson::parse(R"({"a": [true, null, "q\""]})")), R"({"a": [True, None, "q\""]})");
}

TEST(ToolCalls, MistralRepliesParseWholeAndStreamed) {
  const ToolCalling tc = calling(ToolCallStyle::Mistral);
  const std::string text =
      "Checking.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\", \"days\": 2}"
      "[TOOL_CALLS]get_time[CALL_ID]a1b2c3d4e[ARGS]{\"zone\": \"cet\"}";
  expect_checking_weather_then_time(parsed_whole_and_streamed(tc, text));
  const ToolCalling nemo = calling(ToolCallStyle::MistralList);
  const std::string list =
      "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {\"zone\": \"utc\"}, \"id\": \"abcdefghi\"}, "
      "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"a]b\", \"days\": 1}}][TOOL_CALLS][{\"name\": "
      "\"get_time\", \"arguments\": {\"zone\": \"cet\"}}]";
  const ToolReply n = parsed_whole_and_streamed(nemo, list);
  ASSERT_EQ(n.calls.size(), 3u);
  EXPECT_EQ(ojson::parse(n.calls[1].arguments), ojson::parse(R"({"city": "a]b", "days": 1})"));
  EXPECT_EQ(n.calls[2].arguments, R"({"zone":"cet"})");
  // Cut short: the text as it is.
  EXPECT_EQ(tc.parse("[TOOL_CALLS]get_time[ARGS]{\"zo", "r").content, "[TOOL_CALLS]get_time[ARGS]{\"zo");
  // Call ids become the 9 letters and digits Mistral's templates insist on, a call's and its result's alike.
  const ojson messages = ojson::parse(R"([{"role": "assistant", "content": null, "tool_calls": [{"id": "call_x_0",
      "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "call_x_0", "content": "noon"}])");
  const ojson m = tc.messages(messages);
  const std::string id = m[0]["tool_calls"][0]["id"];
  EXPECT_EQ(id.size(), 9u);
  EXPECT_EQ(m[1]["tool_call_id"], id);
}

TEST(ToolCalls, GlmXmlRepliesParseWholeAndStreamed) {
  const ToolCalling tc = calling(ToolCallStyle::GlmXml);
  const std::string text =
      "Checking.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value> Paris\n</arg_value>\n"
      "<arg_key>days</arg_key><arg_value>2</arg_value>\n</tool_call><tool_call>get_time<arg_key>zone</arg_key>"
      "<arg_value>cet</arg_value></tool_call>";
  // city has a maxLength: the whitespace the constraint allows around it is taken off.
  expect_checking_weather_then_time(parsed_whole_and_streamed(tc, text));
  const std::string unknown = "<tool_call>nope<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>";
  EXPECT_EQ(tc.parse(unknown, "x").content, unknown);
}

TEST(ToolCalls, DeepSeekRepliesParseWholeAndStreamed) {
  const ToolCalling v3 = calling(ToolCallStyle::DeepSeekV3);
  const std::string text =
      "Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\", \"days\": 2}"
      "<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{\"zone\": \"cet\"}<｜tool▁call▁end｜>"
      "<｜tool▁calls▁end｜>";
  expect_checking_weather_then_time(parsed_whole_and_streamed(v3, text));
  // R1: function<｜tool▁sep｜>NAME and a fenced JSON, a newline between calls.
  const ToolCalling r1 = calling(ToolCallStyle::DeepSeekR1);
  const std::string fenced =
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{\"zone\": \"utc\"}\n```"
      "<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Oslo\", "
      "\"days\": 3}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
  const ToolReply f = parsed_whole_and_streamed(r1, fenced);
  EXPECT_EQ(f.content, "");
  ASSERT_EQ(f.calls.size(), 2u);
  EXPECT_EQ(f.calls[0].arguments, R"({"zone":"utc"})");
  EXPECT_EQ(f.calls[1].name, "get_weather");
  // Not a tool, or cut short: the text as it is.
  const std::string unknown = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>nope<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
  EXPECT_EQ(v3.parse(unknown, "x").content, unknown);
  const std::string cut = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{\"zo";
  EXPECT_EQ(v3.parse(cut, "x").content, cut);
  EXPECT_FALSE(read_deepseek_calls("<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n{\"zone\": \"utc\"}<｜tool▁call▁end｜>",
                                   weather_tools()));  // R1 without its fence
}

TEST(ToolCalls, KimiRepliesParseWholeAndStreamed) {
  const ToolCalling tc = calling(ToolCallStyle::Kimi);
  const std::string text =
      "Checking.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
      "{\"city\": \"Paris\", \"days\": 2}<|tool_call_end|><|tool_call_begin|>functions.get_time:1"
      "<|tool_call_argument_begin|>{\"zone\": \"cet\"}<|tool_call_end|><|tool_calls_section_end|>";
  const ToolReply r = parsed_whole_and_streamed(tc, text);
  expect_checking_weather_then_time(r);
  EXPECT_EQ(r.calls[0].id, "call_abc_0");
  for (const char* bad : {"<|tool_call_begin|>get_time:0<|tool_call_argument_begin|>{}<|tool_call_end|>",   // no functions.
                          "<|tool_call_begin|>functions.get_time<|tool_call_argument_begin|>{}<|tool_call_end|>",  // no index
                          "<|tool_call_begin|>functions.get_time:x<|tool_call_argument_begin|>{}<|tool_call_end|>"})
    EXPECT_FALSE(read_kimi_calls(bad, weather_tools())) << bad;
}

TEST(ToolCalls, MiniMaxRepliesParseWholeAndStreamed) {
  const ToolCalling m2 = calling(ToolCallStyle::MiniMaxXml);
  const std::string text =
      "Checking.\n<minimax:tool_call>\n<invoke name=\"get_weather\"><parameter name=\"city\">Paris</parameter>\n"
      "<parameter name=\"days\">2</parameter>\n</invoke>\n<invoke name=\"get_time\">\n<parameter name=\"zone\">cet"
      "</parameter>\n</invoke>\n</minimax:tool_call>";
  expect_checking_weather_then_time(parsed_whole_and_streamed(m2, text));
  const std::string unknown = "<minimax:tool_call><invoke name=\"nope\"></invoke></minimax:tool_call>";
  EXPECT_EQ(m2.parse(unknown, "x").content, unknown);
  // M1: JSON calls in <tool_calls>, one per line (a newline inside one is fine).
  const ToolCalling m1 = calling(ToolCallStyle::MiniMaxJson);
  const std::string lines =
      "<tool_calls>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"utc\"}}\n{\"name\": \"get_weather\", "
      "\"arguments\": {\n\"city\": \"a}b\", \"days\": 1}}\n</tool_calls>";
  const ToolReply j = parsed_whole_and_streamed(m1, lines);
  EXPECT_EQ(j.content, "");
  ASSERT_EQ(j.calls.size(), 2u);
  EXPECT_EQ(ojson::parse(j.calls[1].arguments), ojson::parse(R"({"city": "a}b", "days": 1})"));
  EXPECT_FALSE(read_json_calls("{\"name\": \"get_time\", \"arguments\": {}} trailing", weather_tools()));
}

// JSON lists of calls after a marker: Nemotron Nano v2, Apriel, Firefunction
// v2 and Granite 3.3 (the last two: the list ends the reply), Command R's
// tool_name / parameters with an id first.
TEST(ToolCalls, JsonListRepliesParseWholeAndStreamed) {
  const std::string list =
      "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}, "
      "{\"name\": \"get_time\", \"arguments\": {\"zone\": \"cet\"}, \"id\": \"x1\"}]";
  expect_checking_weather_then_time(
      parsed_whole_and_streamed(calling(ToolCallStyle::Nemotron), "Checking.\n<TOOLCALL>" + list + "</TOOLCALL>"));
  expect_checking_weather_then_time(
      parsed_whole_and_streamed(calling(ToolCallStyle::Apriel), "Checking.\n<tool_calls>" + list + "</tool_calls>"));
  expect_checking_weather_then_time(
      parsed_whole_and_streamed(calling(ToolCallStyle::FireFunction), "Checking. functools" + list + "\n"));
  expect_checking_weather_then_time(
      parsed_whole_and_streamed(calling(ToolCallStyle::Granite), "Checking.<|tool_call|>" + list));
  const std::string command_r =
      "Checking.<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": "
      "{\"city\": \"Paris\", \"days\": 2}},\n    {\"tool_call_id\": \"1\", \"tool_name\": \"get_time\", "
      "\"parameters\": {\"zone\": \"cet\"}}\n]<|END_ACTION|>";
  expect_checking_weather_then_time(parsed_whole_and_streamed(calling(ToolCallStyle::CommandR), command_r));
  const std::string command_r_plus =
      "Checking.\nAction:\n```json\n[\n    {\n        \"tool_name\": \"get_weather\",\n        \"parameters\": "
      "{\"city\": \"Paris\", \"days\": 2}\n    },\n    {\"tool_name\": \"get_time\", \"parameters\": {\"zone\": "
      "\"cet\"}}\n]```\n";
  expect_checking_weather_then_time(parsed_whole_and_streamed(calling(ToolCallStyle::CommandRPlus), command_r_plus));
  expect_checking_weather_then_time(parsed_whole_and_streamed(
      calling(ToolCallStyle::Apertus),
      "Checking.<|tools_prefix|>[{\"get_weather\": {\"city\": \"Paris\", \"days\": 2}}, {\"get_time\": "
      "{\"zone\": \"cet\"}}]<|tools_suffix|>"));
  // Text after a list that ends the reply, an unknown tool, not a list: the text as it is.
  const ToolCalling granite = calling(ToolCallStyle::Granite);
  for (const std::string& bad : {"<|tool_call|>" + list + " and more", std::string("<|tool_call|>[{\"name\": \"nope\"}]"),
                                std::string("<|tool_call|>{\"name\": \"get_time\", \"arguments\": {}}")})
    EXPECT_EQ(granite.parse(bad, "x").content, bad);
  EXPECT_FALSE(read_json_list_calls("[]", weather_tools()));
}

// DeepSeek V3.2 / V4's DSML: string="true" values as written, others JSON.
TEST(ToolCalls, DsmlRepliesParseWholeAndStreamed) {
  const std::string invokes =
      "<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"days\" string=\"false\">2</｜DSML｜parameter>\n</｜DSML｜invoke>\n"
      "<｜DSML｜invoke name=\"get_time\">\n<｜DSML｜parameter name=\"zone\" string=\"true\">cet</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n";
  expect_checking_weather_then_time(parsed_whole_and_streamed(
      calling(ToolCallStyle::DeepSeekV32),
      "Checking.\n\n<｜DSML｜function_calls>\n" + invokes + "</｜DSML｜function_calls>"));
  expect_checking_weather_then_time(parsed_whole_and_streamed(
      calling(ToolCallStyle::DeepSeekV4), "Checking.\n\n<｜DSML｜tool_calls>\n" + invokes + "</｜DSML｜tool_calls>"));
  // A string keeps its whitespace; a typed value must be JSON; the type is required.
  const auto spaced = read_dsml_calls(
      "<｜DSML｜invoke name=\"get_time\"><｜DSML｜parameter name=\"zone\" string=\"true\"> cet\n</｜DSML｜parameter>"
      "</｜DSML｜invoke>", weather_tools());
  ASSERT_TRUE(spaced);
  EXPECT_EQ((*spaced)[0].arguments["zone"], " cet\n");
  EXPECT_FALSE(read_dsml_calls("<｜DSML｜invoke name=\"get_weather\"><｜DSML｜parameter name=\"days\" "
                               "string=\"false\">two</｜DSML｜parameter></｜DSML｜invoke>", weather_tools()));
  EXPECT_FALSE(read_dsml_calls("<｜DSML｜invoke name=\"get_time\"><｜DSML｜parameter name=\"zone\">cet"
                               "</｜DSML｜parameter></｜DSML｜invoke>", weather_tools()));
}

// Seed-OSS's XML (values as written) and Functionary v3.1's <function=NAME>{...}.
TEST(ToolCalls, SeedAndFunctionaryRepliesParseWholeAndStreamed) {
  expect_checking_weather_then_time(parsed_whole_and_streamed(
      calling(ToolCallStyle::SeedXml),
      "Checking.\n<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n<parameter=days>2"
      "</parameter>\n</function>\n</seed:tool_call>\n<seed:tool_call>\n<function=get_time>\n<parameter=zone>cet"
      "</parameter>\n</function>\n</seed:tool_call>"));
  expect_checking_weather_then_time(parsed_whole_and_streamed(
      calling(ToolCallStyle::Functionary),
      "Checking.<function=get_weather>{\"city\": \"Paris\", \"days\": 2}</function><function=get_time>"
      "{\"zone\": \"cet\"}</function>"));
  const ToolCalling functionary = calling(ToolCallStyle::Functionary);
  const std::string unknown = "<function=nope>{}</function>";
  EXPECT_EQ(functionary.parse(unknown, "x").content, unknown);
}

// Functionary v3.2: the generation prompt wrote the first ">>>"; "all" is text.
TEST(ToolCalls, FunctionaryV32RepliesParseWholeAndStreamed) {
  const ToolCalling tc = calling(ToolCallStyle::FunctionaryV32);
  expect_checking_weather_then_time(parsed_whole_and_streamed(
      tc, "all\nChecking.>>>get_weather\n{\"city\": \"Paris\", \"days\": 2}>>>get_time\n{\"zone\": \"cet\"}"));
  const ToolReply calls_only = parsed_whole_and_streamed(tc, "get_time\n{\"zone\": \"utc\"}");
  EXPECT_EQ(calls_only.content, "");
  ASSERT_EQ(calls_only.calls.size(), 1u);
  EXPECT_EQ(calls_only.calls[0].arguments, R"({"zone":"utc"})");
  EXPECT_EQ(parsed_whole_and_streamed(tc, "all\nIt is noon.").content, "It is noon.");
  EXPECT_EQ(parsed_whole_and_streamed(tc, "").content, "");
  EXPECT_FALSE(read_functionary_v32_call("nope\n{}", weather_tools()));
  // Under auto: text after "all", then calls after ">>>"; or calls alone.
  const tok::Tokenizer tokenizer = tok::Tokenizer::from_json(tok::byte_level_json(), nullptr, "test");
  ConstraintCompiler compiler(tokenizer, std::vector<int32_t>{264}, 272);
  const auto compiled = compiler.compile(tc.constraint());
  auto accepts = [&](const std::string& text) {
    ConstraintMatcher m(compiled);
    for (int32_t id : tokenizer.encode(text, false))
      if (!m.accept(id)) return false;
    return m.accept(264) && m.terminated();
  };
  EXPECT_TRUE(accepts("all\nIt is noon."));
  EXPECT_TRUE(accepts("all\nChecking.>>>get_time\n{\"zone\": \"utc\"}"));
  EXPECT_TRUE(accepts("get_time\n{\"zone\": \"utc\"}>>>get_weather\n{\"city\": \"Paris\", \"days\": 2}"));
  EXPECT_FALSE(accepts("It is noon."));                      // no recipient
  EXPECT_FALSE(accepts("get_time\n{\"zone\": \"pst\"}"));  // not in the enum
}

// gpt-oss's harmony: one call, a message of its own after the analysis
// channel (reasoning), its <|call|> the stop token or in the text; the
// template's header order and the model's (<|channel|>commentary first).
TEST(ToolCalls, HarmonyRepliesParseWholeAndStreamed) {
  const ToolCalling tc = calling(ToolCallStyle::Harmony);
  EXPECT_FALSE(tc.request().parallel);
  for (const std::string text :
       {" to=functions.get_time<|channel|>commentary json<|message|>{\"zone\": \"cet\"}<|call|>",
        " to=functions.get_time<|channel|>commentary json<|message|>{\"zone\": \"cet\"}",
        "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{\"zone\": \"cet\"}<|call|>"}) {
    const ToolReply r = parsed_whole_and_streamed(tc, text);
    EXPECT_EQ(r.content, "") << text;
    ASSERT_EQ(r.calls.size(), 1u) << text;
    EXPECT_EQ(r.calls[0].name, "get_time");
    EXPECT_EQ(r.calls[0].arguments, R"({"zone":"cet"})");
  }
  EXPECT_EQ(parsed_whole_and_streamed(tc, "<|channel|>final<|message|>It is noon.<|return|>").content, "It is noon.");
  // With the analysis channel split off as reasoning.
  const std::optional<ReasoningSyntax> syntax = reasoning_syntax_of(nullptr);
  EXPECT_FALSE(syntax);
  const ReasoningSyntax harmony{"<|channel|>analysis<|message|>", "<|end|>", "<|start|>assistant"};
  const ToolReply r = ChatReplyStream::parse(
      "<|channel|>analysis<|message|>Need the zone.<|end|><|start|>assistant to=functions.get_time<|channel|>"
      "commentary json<|message|>{\"zone\": \"utc\"}",
      &tc, harmony, ReasoningStart::Optional, "r", reply_frames_of(ToolCallStyle::Harmony));
  EXPECT_EQ(r.reasoning, "Need the zone.");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.calls.size(), 1u);
  const ToolReply text = ChatReplyStream::parse(
      "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>Noon.", nullptr, harmony,
      ReasoningStart::Optional, "r", reply_frames_of(ToolCallStyle::Harmony));
  EXPECT_EQ(text.reasoning, "Easy.");
  EXPECT_EQ(text.content, "Noon.");
  EXPECT_FALSE(read_harmony_call("nope<|message|>{}", weather_tools()));
}

TEST(ToolCalls, SolarOpenRepliesParseWholeAndStreamed) {
  const ToolCalling tc = calling(ToolCallStyle::SolarOpen);
  const std::string calls =
      "<|tool_calls|><|tool_call:begin|>a1b2c3d4e5<|tool_call:name|>get_weather<|tool_call:args|>{\"city\": \"Paris\", "
      "\"days\": 2}<|tool_call:end|><|tool_call:begin|>x<|tool_call:name|>get_time<|tool_call:args|>{\"zone\": \"cet\"}"
      "<|tool_call:end|>";
  for (const std::string& text : {calls + "<|calls|>", calls}) {  // <|calls|> may be the stop token
    const ToolReply r = parsed_whole_and_streamed(tc, text);
    EXPECT_EQ(r.content, "");
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(ojson::parse(r.calls[0].arguments), ojson::parse(R"({"city": "Paris", "days": 2})"));
    EXPECT_EQ(r.calls[1].name, "get_time");
  }
  EXPECT_EQ(parsed_whole_and_streamed(tc, "<|content|>It is noon.<|end|>").content, "It is noon.");
  EXPECT_FALSE(read_solar_calls("<|tool_call:begin|>x<|tool_call:name|>nope<|tool_call:args|>{}<|tool_call:end|>",
                                weather_tools()));
}

TEST(ToolCalls, KimiK3RepliesParseWholeAndStreamed) {
  const ToolCalling tc = calling(ToolCallStyle::KimiK3);
  const std::string text =
      "<|open|>response<|sep|>Checking.<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool=\"get_weather\" "
      "index=\"1\"<|sep|><|open|>argument key=\"city\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|><|open|>"
      "argument key=\"days\" type=\"number\"<|sep|>2<|close|>argument<|sep|><|close|>call<|sep|><|open|>call "
      "tool=\"get_time\" index=\"2\"<|sep|><|open|>json type=\"object\"<|sep|>{\"zone\": \"cet\"}<|close|>json<|sep|>"
      "<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>";
  expect_checking_weather_then_time(parsed_whole_and_streamed(tc, text));
  // A string written as it is ("1" stays a string), attribute escapes.
  const auto calls = read_kimi_k3_calls(
      "<|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"city\" type=\"string\"<|sep|>1 & "
      "\"2\"<|close|>argument<|sep|><|close|>call<|sep|>",
      weather_tools());
  ASSERT_TRUE(calls);
  EXPECT_EQ((*calls)[0].arguments["city"], "1 & \"2\"");
  EXPECT_FALSE(read_kimi_k3_calls("<|open|>call tool=\"nope\" index=\"1\"<|sep|><|close|>call<|sep|>", weather_tools()));
}

TEST(ToolCalls, MiniMaxM3RepliesParseWholeAndStreamed) {
  const ToolCalling tc = calling(ToolCallStyle::MiniMaxM3);
  const std::string ns = "]<]minimax[>[";
  const std::string text = "</mm:think>Checking." + ns + "<tool_call>\n" + ns + "<invoke name=\"get_weather\">" + ns +
                           "<city>Paris" + ns + "</city>" + ns + "<days>2" + ns + "</days>" + ns + "</invoke>\n" + ns +
                           "<invoke name=\"get_time\">" + ns + "<zone>cet" + ns + "</zone>" + ns + "</invoke>\n" + ns +
                           "</tool_call>";
  expect_checking_weather_then_time(parsed_whole_and_streamed(tc, text));
  // Objects and lists as nested elements, typed by the schema.
  const ojson tools = ojson::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
    "properties": {"o": {"type": "object", "properties": {"n": {"type": "string"}, "k": {"type": "integer"}}},
                   "l": {"type": "array", "items": {"type": "string"}}}}}}])");
  const auto nested = read_minimax_m3_calls(ns + "<invoke name=\"f\">" + ns + "<o>" + ns + "<n>7" + ns + "</n>" + ns +
                                                "<k>7" + ns + "</k>" + ns + "</o>" + ns + "<l>" + ns + "<item>a" + ns +
                                                "</item>" + ns + "<item>2" + ns + "</item>" + ns + "</l>" + ns + "</invoke>",
                                            tools);
  ASSERT_TRUE(nested);
  EXPECT_EQ((*nested)[0].arguments, ojson::parse(R"({"o": {"n": "7", "k": 7}, "l": ["a", "2"]})"));
}

TEST(ToolCalls, Hy3RepliesParseWholeAndStreamed) {
  const ToolCalling tc = calling(ToolCallStyle::Hy3);
  const std::string text =
      "Checking.<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n<arg_key:opensource>city"
      "</arg_key:opensource>\n<arg_value:opensource>Paris</arg_value:opensource>\n<arg_key:opensource>days"
      "</arg_key:opensource>\n<arg_value:opensource>2</arg_value:opensource>\n</tool_call:opensource>\n"
      "<tool_call:opensource>get_time<tool_sep:opensource>\n<arg_key:opensource>zone</arg_key:opensource>\n"
      "<arg_value:opensource>cet</arg_value:opensource>\n</tool_call:opensource>\n</tool_calls:opensource>";
  expect_checking_weather_then_time(parsed_whole_and_streamed(tc, text));
  EXPECT_FALSE(read_hy3_calls("<tool_call:opensource>get_time\n</tool_call:opensource>", weather_tools()));  // no separator
}

TEST(ToolCalls, MiniCpm5RepliesParseWholeAndStreamed) {
  const ToolCalling tc = calling(ToolCallStyle::MiniCpm5);
  const std::string text =
      "Checking.\n<function name=\"get_weather\"><param name=\"city\">Paris</param><param name=\"days\">2</param>"
      "</function>\n<function name=\"get_time\"><param name=\"zone\">cet</param></function>";
  expect_checking_weather_then_time(parsed_whole_and_streamed(tc, text));
  // CDATA, and values as Python writes them.
  const ojson tools = ojson::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
    "properties": {"s": {"type": "string"}, "b": {"type": "boolean"}, "d": {"type": "object"}}}}}])");
  const auto call = read_minicpm5_call(
      "f\"><param name=\"s\"><![CDATA[a < b\nc]]></param><param name=\"b\">True</param><param name=\"d\">{'k': [1, "
      "'x'], 't': False}</param>",
      tools);
  ASSERT_TRUE(call);
  EXPECT_EQ(call->arguments, ojson::parse(R"({"s": "a < b\nc", "b": true, "d": {"k": [1, "x"], "t": false}})"));
}

// muse-glimmer's ATEM: messages <|start|>assistant to=RECIPIENT<|message|>,
// reasoning to=self, text to=user, calls in <atem:function_calls>.
TEST(ToolCalls, AtemRepliesParseWholeAndStreamed) {
  const ToolCalling tc = calling(ToolCallStyle::Atem);
  const std::string text =
      " to=user<|message|>Checking.<|eom|><|start|>assistant to=get_weather<|message|><atem:function_calls>\n"
      "<atem:invoke name=\"get_weather\">\n<atem:parameter name=\"city\">Paris</atem:parameter>\n<atem:parameter "
      "name=\"days\">2</atem:parameter>\n</atem:invoke>\n<atem:invoke name=\"get_time\">\n<atem:parameter "
      "name=\"zone\">cet</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eot|>";
  expect_checking_weather_then_time(parsed_whole_and_streamed(tc, text));
  // "to=" in the text is text.
  EXPECT_EQ(parsed_whole_and_streamed(tc, " to=user<|message|>Set x to=5 and y to= 6.").content, "Set x to=5 and y to= 6.");
  const ReasoningSyntax atem{"to=self<|message|>", "<|eom|>", "<|start|>assistant"};
  const ToolReply r = ChatReplyStream::parse(" to=self<|message|>Think.<|eom|><|start|>assistant to=user<|message|>Noon.",
                                             nullptr, atem, ReasoningStart::Optional, "r", reply_frames_of(ToolCallStyle::Atem));
  EXPECT_EQ(r.reasoning, "Think.");
  EXPECT_EQ(r.content, "Noon.");
}

TEST(ToolCalls, GigaChatRepliesParseWholeAndStreamed) {
  const ToolCalling v31 = calling(ToolCallStyle::GigaChat31);
  EXPECT_FALSE(v31.request().parallel);
  const ToolReply r = parsed_whole_and_streamed(v31, "Checking.<|function_call|>{\"name\": \"get_time\", \"arguments\": {\"zone\": \"cet\"}}");
  EXPECT_EQ(r.content, "Checking.");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, "{\"zone\": \"cet\"}");
  const ToolCalling v3 = calling(ToolCallStyle::GigaChat3);
  const ToolReply r3 = parsed_whole_and_streamed(
      v3, "Checking.<|message_sep|>\n\nfunction call<|role_sep|>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"cet\"}}");
  EXPECT_EQ(r3.content, "Checking.");
  ASSERT_EQ(r3.calls.size(), 1u);
  EXPECT_EQ(r3.calls[0].name, "get_time");
}

TEST(ToolCalls, GenericRepliesParse) {
  const ToolCalling tc = calling(ToolCallStyle::Generic);
  const ToolReply calls = tc.parse(R"({"tool_calls": [{"name": "get_time", "arguments": {"zone": "utc"}}]})", "r-1");
  ASSERT_EQ(calls.calls.size(), 1u);
  EXPECT_EQ(calls.calls[0].name, "get_time");
  EXPECT_EQ(calls.calls[0].arguments, R"({"zone":"utc"})");
  EXPECT_EQ(calls.content, "");
  const ToolReply answer = tc.parse(R"({"response": "It is noon."})", "r-1");
  EXPECT_TRUE(answer.calls.empty());
  EXPECT_EQ(answer.content, "It is noon.");
  EXPECT_EQ(tc.parse(R"({"tool_calls": [{"name": "get)", "r").content, R"({"tool_calls": [{"name": "get)");
}

TEST(ToolCalls, NoneShowsToolsButParsesNothing) {
  const ToolCalling tc = calling(ToolCallStyle::Hermes, "none");
  EXPECT_TRUE(tc.constraint().empty());
  const std::string text = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  EXPECT_EQ(tc.parse(text, "r").content, text);
  EXPECT_EQ(tc.template_extra()["tools"].size(), 2u);
}

TEST(ToolCalls, MessagesForEachStyle) {
  const ojson messages = ojson::parse(R"([
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 1}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}])");
  const ojson hermes = calling(ToolCallStyle::Hermes).messages(messages);
  EXPECT_EQ(hermes[1]["tool_calls"][0]["function"]["arguments"], ojson::parse(R"({"city": "Paris", "days": 1})"));
  EXPECT_EQ(hermes[1]["content"], "");
  EXPECT_EQ(hermes[2]["role"], "tool");
  const ojson pythonic = calling(ToolCallStyle::Pythonic).messages(messages);
  EXPECT_FALSE(pythonic[1].contains("tool_calls"));
  EXPECT_EQ(pythonic[1]["content"], "<|tool_call_start|>[get_weather(city=\"Paris\", days=1)]<|tool_call_end|>");
  EXPECT_EQ(pythonic[2]["role"], "tool");
  const ojson generic = calling(ToolCallStyle::Generic).messages(messages);
  ASSERT_EQ(generic.size(), 4u);
  EXPECT_EQ(generic[0]["role"], "system");
  EXPECT_NE(generic[0]["content"].get<std::string>().find("get_weather"), std::string::npos);
  EXPECT_EQ(ojson::parse(generic[2]["content"].get<std::string>())["tool_calls"][0]["name"], "get_weather");
  EXPECT_EQ(generic[3]["role"], "user");
  EXPECT_NE(generic[3]["content"].get<std::string>().find("sunny"), std::string::npos);
  // DeepSeek R1: the content stays none (its templates write calls only then);
  // a template that concatenates the arguments gets them as JSON text.
  const ChatTemplate concat = ChatTemplate::parse("{{ '```json\n' + tool['function']['arguments'] + '\n```' }}", "t");
  const ChatTemplate tojson = ChatTemplate::parse("{{ tool['function']['arguments'] | tojson }}", "t");
  EXPECT_TRUE(call_message_form_of(&concat).text_arguments);
  EXPECT_FALSE(call_message_form_of(&tojson).text_arguments);
  // Apertus concatenates in its own block format but serializes OpenAI calls itself.
  const ChatTemplate both = ChatTemplate::parse(
      "{{ '{\"' + call.name + '\": ' + call.arguments + '}' }}{{ function.arguments|tojson }}", "t");
  EXPECT_FALSE(call_message_form_of(&both).text_arguments);
  const ojson r1 = calling(ToolCallStyle::DeepSeekR1).messages(messages, call_message_form_of(&concat));
  EXPECT_TRUE(r1[1]["content"].is_null());
  EXPECT_EQ(r1[1]["tool_calls"][0]["function"]["arguments"], "{\"city\": \"Paris\", \"days\": 1}");
  const ojson v3 = calling(ToolCallStyle::DeepSeekV3).messages(messages, call_message_form_of(&tojson));
  EXPECT_EQ(v3[1]["content"], "");
  EXPECT_TRUE(v3[1]["tool_calls"][0]["function"]["arguments"].is_object());
}

TEST(ToolCalls, BadRequestsNameTheField) {
  const ojson choice = "sometimes";
  EXPECT_THROW(ToolRequest::parse(weather_tools(), &choice, nullptr), Error);
  const ojson other = ojson::parse(R"({"type": "function", "function": {"name": "nope"}})");
  try {
    ToolRequest::parse(weather_tools(), &other, nullptr);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.subject(), "tool_choice");
  }
  EXPECT_THROW(ToolRequest::parse(ojson::parse(R"([{"type": "function", "function": {}}])"), nullptr, nullptr), Error);
  EXPECT_THROW(ToolRequest::parse(ojson::parse(R"([{"type": "retrieval"}])"), nullptr, nullptr), Error);
  const ojson required = "required";
  EXPECT_THROW(ToolRequest::parse(ojson::array(), &required, nullptr), Error);
  EXPECT_EQ(ToolRequest::parse(ojson::array(), nullptr, nullptr).choice, ToolChoice::None);
}

TEST(ToolCalls, StyleFromTheTemplate) {
  EXPECT_EQ(tool_call_style_of(nullptr), ToolCallStyle::Generic);
  const ChatTemplate hermes = ChatTemplate::parse(
      "{% if tools %}<tools>{{ tools | tojson }}</tools> reply <tool_call>{\"name\": ...}</tool_call>{% endif %}", "t");
  EXPECT_EQ(tool_call_style_of(&hermes), ToolCallStyle::Hermes);
  const ChatTemplate llama3 = ChatTemplate::parse("Environment: ipython\n{{ '{\"name\": \"' }}f{{ '\", \"parameters\": ' }}", "t");
  EXPECT_EQ(tool_call_style_of(&llama3), ToolCallStyle::Llama3);
  const ChatTemplate xml = ChatTemplate::parse("<tool_call>\n<function=name>\n<parameter=x>", "t");
  EXPECT_EQ(tool_call_style_of(&xml), ToolCallStyle::QwenXml);
  const ChatTemplate glm = ChatTemplate::parse("<tool_call>{name}<arg_key>k</arg_key><arg_value>", "t");
  EXPECT_EQ(tool_call_style_of(&glm), ToolCallStyle::GlmXml);
  const ChatTemplate gemma4 = ChatTemplate::parse("{{ '<|tool_call>call:' + name + '{' }}", "t");
  EXPECT_EQ(tool_call_style_of(&gemma4), ToolCallStyle::Gemma4);
  const ChatTemplate lfm2 = ChatTemplate::parse("{{ 'List of tools: <|tool_list_start|>[' }}", "t");
  EXPECT_EQ(tool_call_style_of(&lfm2), ToolCallStyle::Pythonic);
  const ChatTemplate mistral = ChatTemplate::parse("{{ '[TOOL_CALLS]' + name + '[ARGS]' }}", "t");
  EXPECT_EQ(tool_call_style_of(&mistral), ToolCallStyle::Mistral);
  const ChatTemplate nemo = ChatTemplate::parse("{{ '[TOOL_CALLS][' }}", "t");
  EXPECT_EQ(tool_call_style_of(&nemo), ToolCallStyle::MistralList);
  const ChatTemplate v3 = ChatTemplate::parse("{{ '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + name + '<｜tool▁sep｜>' }}", "t");
  EXPECT_EQ(tool_call_style_of(&v3), ToolCallStyle::DeepSeekV3);
  const ChatTemplate r1 = ChatTemplate::parse("{{ '<｜tool▁calls▁begin｜>' + t + '<｜tool▁sep｜>' + name + '```json' }}", "t");
  EXPECT_EQ(tool_call_style_of(&r1), ToolCallStyle::DeepSeekR1);
  const ChatTemplate kimi = ChatTemplate::parse("<|tool_calls_section_begin|><|tool_call_begin|>{{ id }}<|tool_call_argument_begin|>", "t");
  EXPECT_EQ(tool_call_style_of(&kimi), ToolCallStyle::Kimi);
  const ChatTemplate m2 = ChatTemplate::parse("{% set b = '<minimax:tool_call>' %}{{ '<invoke name=\"' + name }}", "t");
  EXPECT_EQ(tool_call_style_of(&m2), ToolCallStyle::MiniMaxXml);
  const ChatTemplate m1 = ChatTemplate::parse("{{ 'reply <tool_calls>\\n{\"name\": <tool-name>}' }}", "t");
  EXPECT_EQ(tool_call_style_of(&m1), ToolCallStyle::MiniMaxJson);
  const std::pair<const char*, ToolCallStyle> more[] = {
      {"{{ '<TOOLCALL>[' }}", ToolCallStyle::Nemotron},
      {"<tool_call></tool_call> {{ '<tool_calls>[' }}{\"name\"", ToolCallStyle::Apriel},
      {"{{ ns.content + ' functools[' }}", ToolCallStyle::FireFunction},
      {"respond only with <|tool_call|> followed by a JSON list of tools used.", ToolCallStyle::Granite},
      {"<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": ", ToolCallStyle::CommandR},
      {"{{ '\\nAction:\\n```json\\n[\\n' }}", ToolCallStyle::CommandRPlus},
      {"{%- set tool_calls_token = '<|tools_prefix|>' -%}", ToolCallStyle::Apertus},
      {"{% set b = '<seed:tool_call>' %}\n<function=x>\n<parameter=k>", ToolCallStyle::SeedXml},
      {"{{ '<' + dsml + 'function_calls>' }}{{ '<' + dsml + 'invoke name=\"' }} DSML", ToolCallStyle::DeepSeekV32},
      {"{{ '<' + dsml + 'tool_calls>' }}{{ '<' + dsml + 'invoke name=\"' }} DSML", ToolCallStyle::DeepSeekV4},
      {"{{ '<function=' + name + '>' + args + '</function>' }}", ToolCallStyle::Functionary},
      {"{{ '>>>all\\n' + m }}{{ '>>>' + tool_call['function']['name'] + '\\n' }}", ToolCallStyle::FunctionaryV32}};
  for (const auto& [source, style] : more) {
    const ChatTemplate t = ChatTemplate::parse(source, "t");
    EXPECT_EQ(tool_call_style_of(&t), style) << source;
  }
  const ChatTemplate plain = ChatTemplate::parse("{% for m in messages %}{{ m.content }}{% endfor %}", "t");
  EXPECT_EQ(tool_call_style_of(&plain), ToolCallStyle::Generic);
}

// A required call after reasoning the prompt opened: the block must close
// first; a reply may open one of its own where the prompt did neither.
TEST(ToolCalls, ReasoningComesBeforeRequiredCalls) {
  const tok::Tokenizer tokenizer = tok::Tokenizer::from_json(tok::byte_level_json(), nullptr, "test");
  const std::vector<int32_t> stops{264};
  ConstraintCompiler compiler(tokenizer, stops, 272);
  const ReasoningSyntax think{"<think>", "</think>", "\n\n"};
  const ojson c = "required";
  auto accepts = [&](ReasoningStart start, const std::string& text) {
    const ToolCalling tc(ToolCallStyle::QwenXml, ToolRequest::parse(weather_tools(), &c, nullptr), think, start);
    ConstraintMatcher m(compiler.compile(tc.constraint()));
    for (int32_t id : tokenizer.encode(text, false))
      if (!m.accept(id)) return false;
    return m.accept(264) && m.terminated();
  };
  const std::string call = "<tool_call>\n<function=get_time>\n<parameter=zone>\nutc\n</parameter>\n</function>\n</tool_call>";
  EXPECT_TRUE(accepts(ReasoningStart::Open, "UTC is asked.</think>\n\n" + call));
  EXPECT_FALSE(accepts(ReasoningStart::Open, call));  // still inside the block: no end
  EXPECT_TRUE(accepts(ReasoningStart::Optional, call));
  EXPECT_TRUE(accepts(ReasoningStart::Optional, "<think>UTC.</think>\n\n" + call));
  EXPECT_FALSE(accepts(ReasoningStart::Skipped, "<think>UTC.</think>\n\n" + call));
  EXPECT_TRUE(accepts(ReasoningStart::Skipped, call));
  // The reply read back: reasoning apart, then the call.
  const ToolCalling tc(ToolCallStyle::QwenXml, ToolRequest::parse(weather_tools(), &c, nullptr), think,
                       ReasoningStart::Open);
  const ToolReply r = ChatReplyStream::parse("UTC is asked.</think>\n\n" + call, &tc, think, ReasoningStart::Open, "r");
  EXPECT_EQ(r.reasoning, "UTC is asked.");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"zone":"utc"})");
}

// Random logits under each style's constraint: every reply parses into
// calls of known tools whose arguments satisfy the schema's bounds.
TEST(ToolCalls, ConstrainedRandomWalksAlwaysGiveValidCalls) {
  const tok::Tokenizer tokenizer = tok::Tokenizer::from_json(tok::byte_level_json(), nullptr, "test");
  const std::vector<int32_t> stops{264};
  ConstraintCompiler compiler(tokenizer, stops, 272);
  for (ToolCallStyle style : {ToolCallStyle::Hermes, ToolCallStyle::Llama3, ToolCallStyle::QwenXml,
                              ToolCallStyle::Gemma4, ToolCallStyle::Pythonic, ToolCallStyle::Mistral,
                              ToolCallStyle::MistralList, ToolCallStyle::GlmXml, ToolCallStyle::DeepSeekV3,
                              ToolCallStyle::DeepSeekR1, ToolCallStyle::Kimi, ToolCallStyle::MiniMaxXml,
                              ToolCallStyle::MiniMaxJson, ToolCallStyle::Nemotron, ToolCallStyle::Apriel,
                              ToolCallStyle::FireFunction, ToolCallStyle::Granite, ToolCallStyle::CommandR,
                              ToolCallStyle::CommandRPlus, ToolCallStyle::Apertus,
                              ToolCallStyle::SeedXml, ToolCallStyle::DeepSeekV32, ToolCallStyle::DeepSeekV4,
                              ToolCallStyle::Functionary, ToolCallStyle::FunctionaryV32, ToolCallStyle::Harmony,
                              ToolCallStyle::SolarOpen, ToolCallStyle::KimiK3, ToolCallStyle::MiniMaxM3,
                              ToolCallStyle::Hy3, ToolCallStyle::MiniCpm5, ToolCallStyle::Atem,
                              ToolCallStyle::GigaChat3, ToolCallStyle::GigaChat31, ToolCallStyle::Generic}) {
    SCOPED_TRACE(tool_call_style_name(style));
    for (const char* choice : {"required", R"({"type": "function", "function": {"name": "get_weather"}})"}) {
      for (bool parallel : {true, false}) {
        const ToolCalling tc = calling(style, choice, parallel);
        const auto compiled = compiler.compile(tc.constraint());
        for (uint64_t seed = 0; seed < 8; ++seed) {
          ConstraintMatcher m(compiled);
          std::mt19937_64 rng(seed);
          std::uniform_real_distribution<float> u(-4.0f, 4.0f);
          tok::StreamingDetokenizer detok(tokenizer);
          std::string text;
          bool ended = false;
          for (int step = 0; step < 3000 && !ended; ++step) {
            std::vector<float> logits(272);
            for (float& l : logits) l = u(rng);
            std::fill(logits.begin() + 0x80, logits.begin() + 0x100, -100.0f);  // ASCII (see output_constraint_test)
            ASSERT_GT(m.mask(logits.data()), 0);
            const auto id = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
            ASSERT_TRUE(m.accept(id));
            if (id == 264) {
              ended = true;
            } else {
              text += detok.push(id);
            }
          }
          ASSERT_TRUE(ended) << text;
          const ToolReply r = tc.parse(text, "r");
          SCOPED_TRACE(text);
          ASSERT_GE(r.calls.size(), 1u);
          if (!tc.request().parallel) {
            EXPECT_EQ(r.calls.size(), 1u);
          }
          for (const ToolCall& c : r.calls) {
            const ojson args = ojson::parse(c.arguments);
            if (choice[0] == '{') {
              EXPECT_EQ(c.name, "get_weather");
            }
            if (c.name == "get_weather") {
              EXPECT_TRUE(args["city"].is_string() && args["city"].get<std::string>().size() <= 8);
              EXPECT_TRUE(args["days"].is_number_integer() && args["days"] >= 1 && args["days"] <= 7);
            } else {
              EXPECT_EQ(c.name, "get_time");
              EXPECT_TRUE(args["zone"] == "utc" || args["zone"] == "cet");
            }
          }
          EXPECT_EQ(r.content, "");
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera
