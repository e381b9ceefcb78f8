#include "generation/tool_call_readers.h"

#include <algorithm>
#include <cstdlib>

#include "generation/reply_text.h"

namespace tessera {

using ojson = nlohmann::ordered_json;

namespace {

using reply_text::is_space;
using reply_text::trim;

// The tool named `name`'s parameter schema (null when there is no such tool).
const ojson* parameters_of(const ojson& tools, std::string_view name) {
  static const ojson kNone;
  for (const ojson& t : tools) {
    const ojson& f = t["function"];
    if (f["name"].get<std::string>() != name) continue;
    return f.contains("parameters") && f["parameters"].is_object() ? &f["parameters"] : &kNone;
  }
  return nullptr;
}

// Whether every value `schema` admits is a string.
bool is_string_schema(const ojson& schema) {
  if (!schema.is_object()) return false;
  if (const auto t = schema.find("type"); t != schema.end()) return t->is_string() && *t == "string";
  const auto all_strings = [](const ojson& values) {
    return values.is_array() && !values.empty() &&
           std::all_of(values.begin(), values.end(), [](const ojson& v) { return v.is_string(); });
  };
  if (const auto e = schema.find("enum"); e != schema.end()) return all_strings(*e);
  if (const auto c = schema.find("const"); c != schema.end()) return c->is_string();
  return false;
}

std::optional<ojson> python_value(std::string_view& s, int depth);

// A parameter's raw text as the JSON value it stands for. The templates
// write free text as it is (Qwen XML between newlines: `padded`); the
// constraint (XGrammar's qwen_xml / glm_xml) writes free text the same way
// and any other value with one whitespace character allowed on each side,
// a string with a length, pattern or format included.
ojson xml_value(std::string_view raw, const ojson* property, bool padded) {
  auto strip_one = [](std::string_view v) {
    if (!v.empty() && is_space(v.front())) v.remove_prefix(1);
    if (!v.empty() && is_space(v.back())) v.remove_suffix(1);
    return v;
  };
  // MiniCPM5 wraps a value holding <, & or a newline in a CDATA section.
  if (const std::string_view t = trim(raw); t.starts_with("<![CDATA[") && t.ends_with("]]>"))
    return xml_value(t.substr(9, t.size() - 12), property, false);
  if (property && is_string_schema(*property)) {
    if (property->contains("enum") || property->contains("const")) return std::string(trim(raw));
    const bool shaped = property->contains("minLength") || property->contains("maxLength") ||
                        property->contains("pattern") || property->contains("format");
    return std::string(shaped || padded ? strip_one(raw) : raw);
  }
  const std::string_view t = trim(raw);
  ojson parsed = ojson::parse(t, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_discarded()) return parsed;
  // The spelling of a template's `| string` (True, False, None, dicts and
  // lists in Python's quotes).
  std::string_view rest = t;
  if (std::optional<ojson> literal = python_value(rest, 0); literal && trim(rest).empty()) return *literal;
  return std::string(padded ? strip_one(raw) : raw);
}

// Consumes `lit` at `s`'s start.
bool take(std::string_view& s, std::string_view lit) {
  if (!s.starts_with(lit)) return false;
  s.remove_prefix(lit.size());
  return true;
}

void skip_space(std::string_view& s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
}

constexpr std::string_view kGemmaQuote = "<|\"|>";

// Reads one Gemma value at `s`'s start; advances `s` past it.
std::optional<ojson> gemma_value(std::string_view& s, int depth) {
  if (depth > 64) return std::nullopt;
  skip_space(s);
  if (take(s, kGemmaQuote)) {
    const size_t end = s.find(kGemmaQuote);
    if (end == std::string_view::npos) return std::nullopt;
    ojson v = std::string(s.substr(0, end));
    s.remove_prefix(end + kGemmaQuote.size());
    return v;
  }
  if (take(s, "{")) {
    ojson object = ojson::object();
    skip_space(s);
    if (take(s, "}")) return object;
    for (;;) {
      skip_space(s);
      std::string key;
      if (take(s, kGemmaQuote)) {
        const size_t end = s.find(kGemmaQuote);
        if (end == std::string_view::npos) return std::nullopt;
        key = std::string(s.substr(0, end));
        s.remove_prefix(end + kGemmaQuote.size());
      } else {
        const size_t colon = s.find(':');
        if (colon == std::string_view::npos) return std::nullopt;
        key = std::string(trim(s.substr(0, colon)));
        if (key.empty() || key.find_first_of("{}[],") != std::string::npos) return std::nullopt;
        s.remove_prefix(colon);
      }
      skip_space(s);
      if (!take(s, ":")) return std::nullopt;
      std::optional<ojson> v = gemma_value(s, depth + 1);
      if (!v) return std::nullopt;
      object[key] = std::move(*v);
      skip_space(s);
      if (take(s, "}")) return object;
      if (!take(s, ",")) return std::nullopt;
    }
  }
  if (take(s, "[")) {
    ojson list = ojson::array();
    skip_space(s);
    if (take(s, "]")) return list;
    for (;;) {
      std::optional<ojson> v = gemma_value(s, depth + 1);
      if (!v) return std::nullopt;
      list.push_back(std::move(*v));
      skip_space(s);
      if (take(s, "]")) return list;
      if (!take(s, ",")) return std::nullopt;
    }
  }
  // A number, true / false / null (or their Python spellings): up to the
  // next delimiter.
  size_t end = 0;
  while (end < s.size() && s[end] != ',' && s[end] != '}' && s[end] != ']') ++end;
  const std::string_view word = trim(s.substr(0, end));
  if (word.empty()) return std::nullopt;
  s.remove_prefix(end);
  if (word == "True") return ojson(true);
  if (word == "False") return ojson(false);
  if (word == "None") return ojson(nullptr);
  ojson parsed = ojson::parse(word, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || parsed.is_structured() || parsed.is_string()) return std::nullopt;
  return parsed;
}

// Reads one Python literal at `s`'s start; advances `s` past it.
std::optional<ojson> python_value(std::string_view& s, int depth) {
  if (depth > 64) return std::nullopt;
  skip_space(s);
  if (s.empty()) return std::nullopt;
  const char q = s.front();
  if (q == '"' || q == '\'') {
    std::string out;
    size_t i = 1;
    for (; i < s.size() && s[i] != q; ++i) {
      if (s[i] != '\\') {
        out += s[i];
        continue;
      }
      if (++i == s.size()) return std::nullopt;
      switch (s[i]) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {  // \uXXXX as JSON writes it; a surrogate pair is two
          if (i + 4 >= s.size()) return std::nullopt;
          std::string escape = "\"\\u" + std::string(s.substr(i + 1, 4));
          size_t used = 4;
          const unsigned long unit = std::strtoul(std::string(s.substr(i + 1, 4)).c_str(), nullptr, 16);
          if (unit >= 0xD800 && unit < 0xDC00 && i + 10 < s.size() && s.substr(i + 5, 2) == "\\u") {
            escape += "\\u" + std::string(s.substr(i + 7, 4));
            used = 10;
          }
          const ojson decoded = ojson::parse(escape + "\"", nullptr, /*allow_exceptions=*/false);
          if (decoded.is_discarded()) return std::nullopt;
          out += decoded.get<std::string>();
          i += used;
          break;
        }
        default: out += s[i];  // \\, \', \", \/
      }
    }
    if (i >= s.size()) return std::nullopt;
    s.remove_prefix(i + 1);
    return ojson(std::move(out));
  }
  if (take(s, "[")) {
    ojson list = ojson::array();
    skip_space(s);
    if (take(s, "]")) return list;
    for (;;) {
      std::optional<ojson> v = python_value(s, depth + 1);
      if (!v) return std::nullopt;
      list.push_back(std::move(*v));
      skip_space(s);
      if (take(s, "]")) return list;
      if (!take(s, ",")) return std::nullopt;
      skip_space(s);
      if (take(s, "]")) return list;  // a trailing comma
    }
  }
  if (take(s, "{")) {
    ojson object = ojson::object();
    skip_space(s);
    if (take(s, "}")) return object;
    for (;;) {
      std::optional<ojson> key = python_value(s, depth + 1);
      if (!key || !key->is_string()) return std::nullopt;
      skip_space(s);
      if (!take(s, ":")) return std::nullopt;
      std::optional<ojson> v = python_value(s, depth + 1);
      if (!v) return std::nullopt;
      object[key->get<std::string>()] = std::move(*v);
      skip_space(s);
      if (take(s, "}")) return object;
      if (!take(s, ",")) return std::nullopt;
    }
  }
  size_t end = 0;
  while (end < s.size() && s[end] != ',' && s[end] != ')' && s[end] != ']' && s[end] != '}') ++end;
  const std::string_view word = trim(s.substr(0, end));
  if (word.empty()) return std::nullopt;
  s.remove_prefix(end);
  if (word == "True" || word == "true") return ojson(true);
  if (word == "False" || word == "false") return ojson(false);
  if (word == "None" || word == "null") return ojson(nullptr);
  ojson parsed = ojson::parse(word, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_number()) return std::nullopt;
  return parsed;
}

}  // namespace

std::string python_literal(const ojson& value) {
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  if (value.is_null()) return "None";
  if (value.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < value.size(); ++i) out += (i ? ", " : "") + python_literal(value[i]);
    return out + "]";
  }
  if (value.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [k, v] : value.items()) {
      out += (first ? "" : ", ") + ojson(k).dump() + ": " + python_literal(v);
      first = false;
    }
    return out + "}";
  }
  return value.dump();  // strings in double quotes with JSON's escapes (valid Python), numbers
}

std::optional<std::vector<BlockCall>> read_pythonic_calls(std::string_view body, const ojson& tools) {
  std::string_view s = trim(body);
  if (!take(s, "[")) return std::nullopt;
  std::vector<BlockCall> calls;
  for (;;) {
    skip_space(s);
    const size_t paren = s.find('(');
    if (paren == std::string_view::npos) return std::nullopt;
    BlockCall call{std::string(trim(s.substr(0, paren))), ojson::object()};
    if (!parameters_of(tools, call.name)) return std::nullopt;
    s.remove_prefix(paren + 1);
    skip_space(s);
    while (!take(s, ")")) {
      const size_t eq = s.find('=');
      if (eq == std::string_view::npos) return std::nullopt;
      const std::string key(trim(s.substr(0, eq)));
      if (key.empty() || key.find_first_of(",()[]{}\"'") != std::string::npos) return std::nullopt;
      s.remove_prefix(eq + 1);
      std::optional<ojson> v = python_value(s, 0);
      if (!v) return std::nullopt;
      call.arguments[key] = std::move(*v);
      skip_space(s);
      if (take(s, ",")) skip_space(s);
      else if (!s.starts_with(")")) return std::nullopt;
    }
    calls.push_back(std::move(call));
    skip_space(s);
    if (take(s, "]")) break;
    if (!take(s, ",")) return std::nullopt;
  }
  if (!trim(s).empty()) return std::nullopt;
  return calls;
}

namespace {

// One past the end of the JSON list or object `s` starts with (brackets
// balanced outside strings); 0 if it does not end.
size_t balanced_end(std::string_view s) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0 && --depth == 0) {
      return i + 1;
    }
  }
  return 0;
}

}  // namespace

std::optional<std::vector<BlockCall>> read_mistral_calls(std::string_view body, const ojson& tools) {
  constexpr std::string_view kOpen = "[TOOL_CALLS]", kArgs = "[ARGS]", kCallId = "[CALL_ID]";
  std::vector<BlockCall> calls;
  std::string_view s = body;
  for (bool first = true;; first = false) {
    if (!first) {
      skip_space(s);
      if (s.empty()) break;
      if (!take(s, kOpen)) return std::nullopt;
    }
    skip_space(s);
    if (s.starts_with('[')) {  // Nemo: a JSON list of calls
      // The list's end (the rest may be more blocks).
      const size_t end = balanced_end(s);
      if (!end) return std::nullopt;
      const ojson list = ojson::parse(s.substr(0, end), nullptr, /*allow_exceptions=*/false);
      if (!list.is_array()) return std::nullopt;
      for (const ojson& call : list) {
        if (!call.is_object() || !call.contains("name") || !call["name"].is_string()) return std::nullopt;
        BlockCall c{call["name"].get<std::string>(), call.value("arguments", ojson::object())};
        if (!parameters_of(tools, c.name) || !c.arguments.is_object()) return std::nullopt;
        calls.push_back(std::move(c));
      }
      s.remove_prefix(end);
      continue;
    }
    const size_t args = s.find(kArgs);
    if (args == std::string_view::npos) return std::nullopt;
    std::string_view name = s.substr(0, args);
    if (const size_t id = name.find(kCallId); id != std::string_view::npos) name = name.substr(0, id);
    BlockCall call{std::string(trim(name)), ojson::object()};
    if (!parameters_of(tools, call.name)) return std::nullopt;
    s.remove_prefix(args + kArgs.size());
    const size_t next = s.find(kOpen);
    const ojson arguments = ojson::parse(trim(s.substr(0, next)), nullptr, /*allow_exceptions=*/false);
    if (!arguments.is_object()) return std::nullopt;
    call.arguments = arguments;
    calls.push_back(std::move(call));
    if (next == std::string_view::npos) break;
    s.remove_prefix(next);
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

namespace {

// An XML call: `head` NAME `name_end`, then parameters `param_open` KEY
// `key_end` VALUE `value_end` with whitespace between them, up to
// `call_end` (the end of the text when empty). VALUE as xml_value reads it;
// `typed` (DeepSeek's DSML): KEY is followed by ` string="true">` (VALUE
// is the string, verbatim) or ` string="false">` (VALUE is JSON).
struct XmlCallShape {
  std::string_view head, name_end, param_open, key_end, call_end;
  bool padded;
  std::string_view value_end = "</parameter>";
  bool typed = false;
};

std::optional<BlockCall> read_xml_call(std::string_view body, const ojson& tools, const XmlCallShape& shape) {
  const std::string_view kValueEnd = shape.value_end;
  std::string_view s = trim(body);
  if (!take(s, shape.head)) return std::nullopt;
  const size_t name_end = s.find(shape.name_end);
  if (name_end == std::string_view::npos) return std::nullopt;
  BlockCall call{std::string(trim(s.substr(0, name_end))), ojson::object()};
  s.remove_prefix(name_end + shape.name_end.size());
  const ojson* parameters = parameters_of(tools, call.name);
  if (!parameters) return std::nullopt;
  const ojson* properties =
      parameters->is_object() && parameters->contains("properties") ? &(*parameters)["properties"] : nullptr;
  for (;;) {
    skip_space(s);
    if (shape.call_end.empty() ? s.empty() : take(s, shape.call_end)) break;
    if (!take(s, shape.param_open)) return std::nullopt;
    const size_t key_end = s.find(shape.key_end);
    if (key_end == std::string_view::npos) return std::nullopt;
    const std::string key(trim(s.substr(0, key_end)));
    s.remove_prefix(key_end + shape.key_end.size());
    int verbatim = -1;  // typed: 1 a string as written, 0 JSON
    if (shape.typed) {
      if (take(s, " string=\"true\">")) verbatim = 1;
      else if (take(s, " string=\"false\">")) verbatim = 0;
      else return std::nullopt;
    }
    const size_t value_end = s.find(kValueEnd);
    if (value_end == std::string_view::npos) return std::nullopt;
    const std::string_view raw = s.substr(0, value_end);
    const ojson* property = properties && properties->contains(key) ? &(*properties)[key] : nullptr;
    if (verbatim == 1) {
      call.arguments[key] = std::string(raw);
    } else if (verbatim == 0) {
      ojson value = ojson::parse(trim(raw), nullptr, /*allow_exceptions=*/false);
      if (value.is_discarded()) return std::nullopt;
      call.arguments[key] = std::move(value);
    } else {
      call.arguments[key] = xml_value(raw, property, shape.padded);
    }
    s.remove_prefix(value_end + kValueEnd.size());
  }
  if (!trim(s).empty()) return std::nullopt;
  return call;
}

}  // namespace

std::optional<BlockCall> read_qwen_xml_call(std::string_view body, const ojson& tools) {
  return read_xml_call(body, tools, {"<function=", ">", "<parameter=", ">", "</function>", /*padded=*/true});
}

std::optional<BlockCall> read_seed_xml_call(std::string_view body, const ojson& tools) {
  return read_xml_call(body, tools, {"<function=", ">", "<parameter=", ">", "</function>", /*padded=*/false});
}

namespace {

// A call written NAME `name_end` then pairs `key_open` KEY `key_close`
// `value_open` VALUE `value_close` with whitespace between the parts (GLM
// XML: no `name_end`; Hy3: <tool_sep:opensource>), VALUE as xml_value reads it.
struct KeyValueShape {
  std::string_view name_end, key_open, key_close, value_open, value_close;
};

std::optional<BlockCall> read_key_value_call(std::string_view body, const ojson& tools, const KeyValueShape& shape) {
  std::string_view s = trim(body);
  const size_t first_key = s.find(shape.key_open);
  std::string_view name = s.substr(0, first_key);
  if (!shape.name_end.empty()) {
    name = trim(name);
    if (!name.ends_with(shape.name_end)) return std::nullopt;
    name.remove_suffix(shape.name_end.size());
  }
  BlockCall call{std::string(trim(name)), ojson::object()};
  const ojson* parameters = parameters_of(tools, call.name);
  if (!parameters || call.name.empty()) return std::nullopt;
  const ojson* properties =
      parameters->is_object() && parameters->contains("properties") ? &(*parameters)["properties"] : nullptr;
  s.remove_prefix(first_key == std::string_view::npos ? s.size() : first_key);
  while (!s.empty()) {
    if (!take(s, shape.key_open)) return std::nullopt;
    const size_t key_end = s.find(shape.key_close);
    if (key_end == std::string_view::npos) return std::nullopt;
    const std::string key(trim(s.substr(0, key_end)));
    s.remove_prefix(key_end + shape.key_close.size());
    skip_space(s);
    if (!take(s, shape.value_open)) return std::nullopt;
    const size_t value_end = s.find(shape.value_close);
    if (value_end == std::string_view::npos) return std::nullopt;
    const ojson* property = properties && properties->contains(key) ? &(*properties)[key] : nullptr;
    call.arguments[key] = xml_value(s.substr(0, value_end), property, /*padded=*/false);
    s.remove_prefix(value_end + shape.value_close.size());
    skip_space(s);
  }
  return call;
}

}  // namespace

std::optional<BlockCall> read_glm_xml_call(std::string_view body, const ojson& tools) {
  return read_key_value_call(body, tools, {"", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"});
}

std::optional<ojson> read_gemma_value(std::string_view text) {
  std::optional<ojson> v = gemma_value(text, 0);
  if (!v || !trim(text).empty()) return std::nullopt;
  return v;
}

std::optional<BlockCall> read_gemma4_call(std::string_view body, const ojson& tools) {
  std::string_view s = trim(body);
  if (!take(s, "call:")) return std::nullopt;
  const size_t brace = s.find('{');
  if (brace == std::string_view::npos) return std::nullopt;
  BlockCall call{std::string(trim(s.substr(0, brace))), ojson::object()};
  if (!parameters_of(tools, call.name)) return std::nullopt;
  std::optional<ojson> arguments = read_gemma_value(s.substr(brace));
  if (!arguments || !arguments->is_object()) return std::nullopt;
  call.arguments = std::move(*arguments);
  return call;
}

namespace {

// A call's arguments written as one JSON object (surrounding whitespace allowed).
std::optional<ojson> json_object(std::string_view text) {
  ojson value = ojson::parse(trim(text), nullptr, /*allow_exceptions=*/false);
  if (!value.is_object()) return std::nullopt;
  return value;
}

// A call of `name` (surrounding whitespace allowed) whose arguments are
// the JSON object `arguments`; nullopt unless it names a tool and they parse.
std::optional<BlockCall> json_call(std::string_view name, std::string_view arguments, const ojson& tools) {
  BlockCall call{std::string(trim(name)), ojson::object()};
  std::optional<ojson> parsed = json_object(arguments);
  if (!parameters_of(tools, call.name) || !parsed) return std::nullopt;
  call.arguments = std::move(*parsed);
  return call;
}

std::optional<std::vector<BlockCall>> one_call(std::optional<BlockCall> call) {
  if (!call) return std::nullopt;
  return std::vector<BlockCall>{std::move(*call)};
}

// Calls written one after another, each between `begin` and `end`, with
// whitespace allowed around them; `read_one` reads what is between.
template <typename ReadOne>
std::optional<std::vector<BlockCall>> marked_calls(std::string_view body, std::string_view begin, std::string_view end,
                                                   ReadOne read_one) {
  std::vector<BlockCall> calls;
  std::string_view s = body;
  for (;;) {
    skip_space(s);
    if (s.empty()) break;
    if (!take(s, begin)) return std::nullopt;
    const size_t close = s.find(end);
    if (close == std::string_view::npos) return std::nullopt;
    std::optional<BlockCall> call = read_one(s.substr(0, close));
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    s.remove_prefix(close + end.size());
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

}  // namespace

std::optional<std::vector<BlockCall>> read_deepseek_calls(std::string_view body, const ojson& tools) {
  constexpr std::string_view kSep = "<｜tool▁sep｜>";
  return marked_calls(body, "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>",
                      [&](std::string_view s) -> std::optional<BlockCall> {
                        const size_t sep = s.find(kSep);
                        if (sep == std::string_view::npos) return std::nullopt;
                        std::string_view head = s.substr(0, sep), rest = s.substr(sep + kSep.size());
                        if (trim(head) == "function") {  // R1: NAME\n```json\n{...}\n```
                          const size_t newline = rest.find('\n');
                          if (newline == std::string_view::npos) return std::nullopt;
                          head = rest.substr(0, newline);
                          rest = trim(rest.substr(newline + 1));
                          if (!take(rest, "```json") || !rest.ends_with("```")) return std::nullopt;
                          rest.remove_suffix(3);
                        }
                        return json_call(head, rest, tools);
                      });
}

std::optional<std::vector<BlockCall>> read_kimi_calls(std::string_view body, const ojson& tools) {
  constexpr std::string_view kArguments = "<|tool_call_argument_begin|>";
  return marked_calls(body, "<|tool_call_begin|>", "<|tool_call_end|>",
                      [&](std::string_view s) -> std::optional<BlockCall> {
                        const size_t args = s.find(kArguments);
                        if (args == std::string_view::npos) return std::nullopt;
                        // functions.NAME:INDEX
                        std::string_view id = trim(s.substr(0, args));
                        if (!take(id, "functions.")) return std::nullopt;
                        const size_t colon = id.rfind(':');
                        if (colon == std::string_view::npos) return std::nullopt;
                        const std::string_view index = id.substr(colon + 1);
                        const auto digit = [](char c) { return c >= '0' && c <= '9'; };
                        if (index.empty() || !std::all_of(index.begin(), index.end(), digit)) return std::nullopt;
                        return json_call(id.substr(0, colon), s.substr(args + kArguments.size()), tools);
                      });
}

std::optional<std::vector<BlockCall>> read_minimax_xml_calls(std::string_view body, const ojson& tools) {
  return marked_calls(body, "<invoke name=\"", "</invoke>", [&](std::string_view s) {
    return read_xml_call(s, tools, {"", "\">", "<parameter name=\"", "\">", "", /*padded=*/false});
  });
}

std::optional<std::vector<BlockCall>> read_dsml_calls(std::string_view body, const ojson& tools) {
  return marked_calls(body, "<｜DSML｜invoke name=\"", "</｜DSML｜invoke>", [&](std::string_view s) {
    return read_xml_call(s, tools,
                         {"", "\">", "<｜DSML｜parameter name=\"", "\"", "", /*padded=*/false, "</｜DSML｜parameter>",
                          /*typed=*/true});
  });
}

std::optional<std::vector<BlockCall>> read_functionary_calls(std::string_view body, const ojson& tools) {
  const size_t name_end = body.find('>');
  if (name_end == std::string_view::npos) return std::nullopt;
  return one_call(json_call(body.substr(0, name_end), body.substr(name_end + 1), tools));
}

std::optional<std::vector<BlockCall>> read_functionary_v32_call(std::string_view body, const ojson& tools) {
  const size_t newline = body.find('\n');
  if (newline == std::string_view::npos) return std::nullopt;
  return one_call(json_call(body.substr(0, newline), body.substr(newline + 1), tools));
}

std::optional<BlockCall> read_harmony_call(std::string_view body, const ojson& tools) {
  // NAME, then the rest of the header (<|channel|>commentary json, or
  // <|constrain|>json), then <|message|> and the arguments.
  constexpr std::string_view kMessage = "<|message|>";
  std::string_view s = trim(body);
  size_t name_end = 0;
  while (name_end < s.size() && !is_space(s[name_end]) && s[name_end] != '<') ++name_end;
  const size_t message = s.find(kMessage, name_end);
  if (message == std::string_view::npos) return std::nullopt;
  return json_call(s.substr(0, name_end), s.substr(message + kMessage.size()), tools);
}

std::optional<std::vector<BlockCall>> read_solar_calls(std::string_view body, const ojson& tools) {
  constexpr std::string_view kName = "<|tool_call:name|>", kArgs = "<|tool_call:args|>";
  return marked_calls(body, "<|tool_call:begin|>", "<|tool_call:end|>",
                      [&](std::string_view s) -> std::optional<BlockCall> {
                        const size_t name = s.find(kName), args = s.find(kArgs);
                        if (name == std::string_view::npos || args == std::string_view::npos || args < name)
                          return std::nullopt;
                        return json_call(s.substr(name + kName.size(), args - name - kName.size()),
                                         s.substr(args + kArgs.size()), tools);
                      });
}

std::optional<std::vector<BlockCall>> read_hy3_calls(std::string_view body, const ojson& tools) {
  return marked_calls(body, "<tool_call:opensource>", "</tool_call:opensource>", [&](std::string_view s) {
    return read_key_value_call(s, tools,
                               {"<tool_sep:opensource>", "<arg_key:opensource>", "</arg_key:opensource>",
                                "<arg_value:opensource>", "</arg_value:opensource>"});
  });
}

std::optional<BlockCall> read_minicpm5_call(std::string_view body, const ojson& tools) {
  return read_xml_call(body, tools, {"", "\">", "<param name=\"", "\">", "", /*padded=*/false, "</param>"});
}

std::optional<std::vector<BlockCall>> read_atem_calls(std::string_view body, const ojson& tools) {
  return marked_calls(body, "<atem:invoke name=\"", "</atem:invoke>", [&](std::string_view s) {
    return read_xml_call(s, tools,
                         {"", "\">", "<atem:parameter name=\"", "\">", "", /*padded=*/false, "</atem:parameter>"});
  });
}

namespace {

// An attribute's value as Kimi K3 writes it (& and " escaped).
std::string xml_unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.substr(i).starts_with("&amp;")) out += '&', i += 4;
    else if (s.substr(i).starts_with("&quot;")) out += '"', i += 5;
    else out += s[i];
  }
  return out;
}

// Kimi K3's value of `type`: a string as written, anything else JSON.
std::optional<ojson> kimi_k3_value(std::string_view type, std::string_view raw) {
  if (type == "string") return ojson(std::string(raw));
  ojson v = ojson::parse(trim(raw), nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) return std::nullopt;
  return v;
}

// MiniMax M3's namespace token, written before every tag of its calls.
constexpr std::string_view kMiniMaxNs = "]<]minimax[>[";

// A MiniMax M3 element's content: child elements (NS<KEY>...NS</KEY>, a
// list's NS<item>) or text, typed by `schema` as an XML value.
std::optional<ojson> minimax_m3_value(std::string_view raw, const ojson* schema, int depth) {
  if (depth > 32) return std::nullopt;
  std::string_view s = trim(raw);
  if (!s.starts_with(std::string(kMiniMaxNs) + "<")) return xml_value(raw, schema, /*padded=*/false);
  ojson object = ojson::object(), list = ojson::array();
  while (!s.empty()) {
    if (!take(s, kMiniMaxNs) || !take(s, "<")) return std::nullopt;
    const size_t key_end = s.find('>');
    if (key_end == std::string_view::npos) return std::nullopt;
    const std::string key(s.substr(0, key_end));
    s.remove_prefix(key_end + 1);
    // The element's end: its own close tag at the same depth.
    const std::string open = std::string(kMiniMaxNs) + "<" + key + ">", close = std::string(kMiniMaxNs) + "</" + key + ">";
    size_t at = 0, nested = 0, end = std::string_view::npos;
    for (;;) {
      const size_t o = s.find(open, at), c = s.find(close, at);
      if (c == std::string_view::npos) return std::nullopt;
      if (o != std::string_view::npos && o < c) {
        ++nested, at = o + open.size();
      } else if (nested > 0) {
        --nested, at = c + close.size();
      } else {
        end = c;
        break;
      }
    }
    const ojson* child = nullptr;
    if (schema && schema->is_object()) {
      if (key == "item" && schema->contains("items")) child = &(*schema)["items"];
      else if (schema->contains("properties") && (*schema)["properties"].contains(key)) child = &(*schema)["properties"][key];
    }
    std::optional<ojson> v = minimax_m3_value(s.substr(0, end), child, depth + 1);
    if (!v) return std::nullopt;
    (key == "item" ? list.emplace_back(std::move(*v)) : object[key] = std::move(*v));
    s.remove_prefix(end + close.size());
    s = trim(s);
  }
  if (!list.empty() && object.empty()) return list;
  if (!object.empty() && list.empty()) return object;
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<BlockCall>> read_kimi_k3_calls(std::string_view body, const ojson& tools) {
  constexpr std::string_view kSep = "<|sep|>";
  return marked_calls(
      body, "<|open|>call tool=\"", "<|close|>call<|sep|>", [&](std::string_view s) -> std::optional<BlockCall> {
        // NAME" index="N"<|sep|>, then the arguments one by one, or one JSON object.
        const size_t quote = s.find('"');
        if (quote == std::string_view::npos) return std::nullopt;
        BlockCall call{xml_unescape(s.substr(0, quote)), ojson::object()};
        if (!parameters_of(tools, call.name)) return std::nullopt;
        const size_t head_end = s.find(kSep, quote);
        if (head_end == std::string_view::npos) return std::nullopt;
        s.remove_prefix(head_end + kSep.size());
        if (take(s, "<|open|>json type=\"object\"<|sep|>")) {
          const size_t end = s.find("<|close|>json<|sep|>");
          if (end == std::string_view::npos) return std::nullopt;
          std::optional<ojson> arguments = json_object(s.substr(0, end));
          if (!arguments || !trim(s.substr(end + 20)).empty()) return std::nullopt;
          call.arguments = std::move(*arguments);
          return call;
        }
        for (;;) {
          skip_space(s);
          if (s.empty()) return call;
          if (!take(s, "<|open|>argument key=\"")) return std::nullopt;
          const size_t key_end = s.find("\" type=\"");
          if (key_end == std::string_view::npos) return std::nullopt;
          const std::string key = xml_unescape(s.substr(0, key_end));
          s.remove_prefix(key_end + 8);
          const size_t type_end = s.find("\"<|sep|>");
          if (type_end == std::string_view::npos) return std::nullopt;
          const std::string_view type = s.substr(0, type_end);
          s.remove_prefix(type_end + 8);
          const size_t value_end = s.find("<|close|>argument<|sep|>");
          if (value_end == std::string_view::npos) return std::nullopt;
          std::optional<ojson> value = kimi_k3_value(type, s.substr(0, value_end));
          if (!value) return std::nullopt;
          call.arguments[key] = std::move(*value);
          s.remove_prefix(value_end + 24);
        }
      });
}

std::optional<std::vector<BlockCall>> read_minimax_m3_calls(std::string_view body, const ojson& tools) {
  const std::string invoke = std::string(kMiniMaxNs) + "<invoke name=\"", end = std::string(kMiniMaxNs) + "</invoke>";
  return marked_calls(body, invoke, end, [&](std::string_view s) -> std::optional<BlockCall> {
    const size_t quote = s.find("\">");
    if (quote == std::string_view::npos) return std::nullopt;
    BlockCall call{std::string(s.substr(0, quote)), ojson::object()};
    const ojson* parameters = parameters_of(tools, call.name);
    if (!parameters) return std::nullopt;
    const std::string_view rest = trim(s.substr(quote + 2));
    if (rest.empty()) return call;
    std::optional<ojson> arguments = minimax_m3_value(rest, parameters, 0);
    if (!arguments || !arguments->is_object()) return std::nullopt;
    call.arguments = std::move(*arguments);
    return call;
  });
}

std::optional<std::vector<BlockCall>> read_json_list_calls(std::string_view body, const ojson& tools) {
  std::string_view s = trim(body);
  const size_t end = s.starts_with('[') ? balanced_end(s) : 0;
  if (!end || !trim(s.substr(end)).empty()) return std::nullopt;
  const ojson list = ojson::parse(s.substr(0, end), nullptr, /*allow_exceptions=*/false);
  if (!list.is_array() || list.empty()) return std::nullopt;
  std::vector<BlockCall> calls;
  for (const ojson& call : list) {
    if (!call.is_object()) return std::nullopt;
    if (call.size() == 1 && !call.contains("name") && !call.contains("tool_name")) {  // Apertus: {NAME: {...}}
      BlockCall c{call.begin().key(), call.begin().value()};
      if (!parameters_of(tools, c.name) || !c.arguments.is_object()) return std::nullopt;
      calls.push_back(std::move(c));
      continue;
    }
    const char* name_key = call.contains("tool_name") ? "tool_name" : "name";
    const char* arguments_key = call.contains("parameters") ? "parameters" : "arguments";
    if (!call.contains(name_key) || !call[name_key].is_string()) return std::nullopt;
    BlockCall c{call[name_key].get<std::string>(), call.value(arguments_key, ojson::object())};
    if (!parameters_of(tools, c.name) || !c.arguments.is_object()) return std::nullopt;
    calls.push_back(std::move(c));
  }
  return calls;
}

std::optional<std::vector<BlockCall>> read_json_calls(std::string_view body, const ojson& tools) {
  std::vector<BlockCall> calls;
  std::string_view s = body;
  for (;;) {
    skip_space(s);
    if (s.empty()) break;
    const size_t end = s.starts_with('{') ? balanced_end(s) : 0;
    if (!end) return std::nullopt;
    const ojson call = ojson::parse(s.substr(0, end), nullptr, /*allow_exceptions=*/false);
    if (!call.is_object() || !call.contains("name") || !call["name"].is_string()) return std::nullopt;
    BlockCall c{call["name"].get<std::string>(), call.value("arguments", ojson::object())};
    if (!parameters_of(tools, c.name) || !c.arguments.is_object()) return std::nullopt;
    calls.push_back(std::move(c));
    s.remove_prefix(end);
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

}  // namespace tessera
