#include "server/completion_request.h"

#include <limits>
#include <random>
#include <string_view>

#include <fmt/format.h>

#include "core/base64.h"
#include "core/error.h"
#include "server/api_error.h"

namespace tessera::server {

namespace {

using json = nlohmann::ordered_json;  // key order kept: schemas and tools keep their properties' order

const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::optional<int64_t> integer(const json& body, const char* name, int64_t min, int64_t max) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) throw wrong_type(name, "an integer");
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(max))
    throw bad_request(fmt::format("'{}' must be at most {}", name, max), name);
  const int64_t x = v->get<int64_t>();
  if (x < min || x > max) throw bad_request(fmt::format("'{}' must be in [{}, {}], got {}", name, min, max, x), name);
  return x;
}

std::optional<double> number(const json& body, const char* name, double min, double max) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw wrong_type(name, "a number");
  const double x = v->get<double>();
  if (!(x >= min && x <= max)) throw bad_request(fmt::format("'{}' must be in [{}, {}], got {}", name, min, max, x), name);
  return x;
}

std::optional<bool> boolean(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw wrong_type(name, "a boolean");
  return v->get<bool>();
}

// A message's content: a string, or a list of parts. Text parts alone
// become one string; with images (image_url parts holding data: URLs, the
// server never fetches a remote one) the parts stay a list, each image as
// {"type": "image"} (what chat templates mark), its bytes appended to
// `images` in order.
nlohmann::ordered_json message_content(const json& content, size_t index, std::vector<std::string>& images) {
  const std::string param = fmt::format("messages[{}].content", index);
  if (content.is_null()) return "";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw wrong_type(param, "a string or a list of content parts");
  std::string text;
  nlohmann::ordered_json parts = nlohmann::ordered_json::array();
  bool with_images = false;
  for (const json& part : content) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      throw wrong_type(param, "a list of objects with a 'type'");
    const std::string type = part["type"].get<std::string>();
    if (type == "image_url") {
      const json* url = part.contains("image_url") ? &part["image_url"] : nullptr;
      if (url && url->is_object() && url->contains("url")) url = &(*url)["url"];
      if (!url || !url->is_string()) throw wrong_type(param + ".image_url", "{\"url\": a data: URL}");
      const std::string& u = url->get_ref<const std::string&>();
      if (u.rfind("data:", 0) != 0)
        throw bad_request("image URLs are not fetched: send the image inline as a data: URL (data:image/png;base64,...)",
                          param + ".image_url", "unsupported_content");
      try {
        images.push_back(parse_data_url(u).bytes);
      } catch (const Error& e) {
        throw bad_request(e.what(), param + ".image_url", "invalid_image_url");
      }
      parts.push_back({{"type", "image"}});
      with_images = true;
      continue;
    }
    if (type != "text")
      throw bad_request(fmt::format("content part type '{}' is not supported (text and image_url)", type), param,
                        "unsupported_content");
    if (!part.contains("text") || !part["text"].is_string()) throw wrong_type(param + ".text", "a string");
    text += part["text"].get<std::string>();
    parts.push_back({{"type", "text"}, {"text", part["text"]}});
  }
  if (with_images) return parts;
  return text;
}

nlohmann::ordered_json messages_of(const json& body, std::vector<std::string>& images) {
  const json* v = field(body, "messages");
  if (!v) throw bad_request("'messages' is required", "messages", "missing_required_parameter");
  if (!v->is_array()) throw wrong_type("messages", "a list of messages");
  if (v->empty()) throw bad_request("'messages' must not be empty", "messages");
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    if (!m.is_object()) throw wrong_type(fmt::format("messages[{}]", i), "an object");
    if (!m.contains("role") || !m["role"].is_string())
      throw wrong_type(fmt::format("messages[{}].role", i), "a string");
    nlohmann::ordered_json message = {{"role", m["role"].get<std::string>()},
                                      {"content", message_content(m.contains("content") ? m["content"] : json(), i, images)}};
    // Tool calling: an assistant's calls and a tool's result (generation/tool_calls.h).
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      const std::string param = fmt::format("messages[{}].tool_calls", i);
      if (!m["tool_calls"].is_array()) throw wrong_type(param, "a list of tool calls");
      for (const json& call : m["tool_calls"])
        if (!call.is_object() || !call.contains("function") || !call["function"].is_object() ||
            !call["function"].contains("name") || !call["function"]["name"].is_string() ||
            !call["function"].contains("arguments") ||
            !(call["function"]["arguments"].is_string() || call["function"]["arguments"].is_object()))
          throw wrong_type(param, "a list of {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
      message["tool_calls"] = m["tool_calls"];
    }
    for (const char* key : {"tool_call_id", "name", "reasoning_content"})
      if (m.contains(key)) {
        if (!m[key].is_string()) throw wrong_type(fmt::format("messages[{}].{}", i, key), "a string");
        message[key] = m[key];
      }
    out.push_back(std::move(message));
  }
  return out;
}

void read_prompt(const json& body, engine::Request& r) {
  const json* v = field(body, "prompt");
  if (!v) throw bad_request("'prompt' is required", "prompt", "missing_required_parameter");
  if (v->is_string()) {
    r.prompt = v->get<std::string>();
    if (r.prompt->empty()) throw bad_request("'prompt' must not be empty", "prompt");
    return;
  }
  if (!v->is_array() || v->empty()) throw wrong_type("prompt", "a string or a non-empty list of token ids");
  for (const json& id : *v) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > std::numeric_limits<int32_t>::max())
      throw wrong_type("prompt", "a string or a list of token ids");
    r.prompt_ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
}

std::vector<std::string> stop_strings(const json& body) {
  const json* v = field(body, "stop");
  if (!v) return {};
  std::vector<std::string> out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (v->size() > 4) throw bad_request("'stop' takes at most 4 strings", "stop");
    for (const json& s : *v) {
      if (!s.is_string()) throw wrong_type("stop", "a string or a list of strings");
      out.push_back(s.get<std::string>());
    }
  } else {
    throw wrong_type("stop", "a string or a list of strings");
  }
  for (const std::string& s : out)
    if (s.empty()) throw bad_request("stop strings must not be empty", "stop");
  return out;
}

// A string setting that may also come as JSON (json_schema: a schema
// object, as llama-server takes it, or its text; structural_tag likewise).
std::string text_or_json(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return "";
  if (v->is_string()) return v->get<std::string>();
  const bool json_valued = std::string_view(name) == "json_schema" || std::string_view(name) == "structural_tag";
  if (json_valued && v->is_object()) return v->dump();
  throw wrong_type(name, json_valued ? "an object or its JSON text" : "a string");
}

// OpenAI's response_format: {"type": "text"}, {"type": "json_object"} (any
// JSON object), {"type": "json_schema", "json_schema": {"name": ...,
// "schema": {...}, "strict": ...}} (outputs are always held to the schema,
// strict or not) or, as vLLM and SGLang take it, {"type": "structural_tag",
// "format": {...}}. Sets json_schema or structural_tag.
void apply_response_format(const json& body, GenerationSettings& s) {
  const json* v = field(body, "response_format");
  if (!v) return;
  if (!v->is_object() || !v->contains("type") || !(*v)["type"].is_string())
    throw wrong_type("response_format", "an object with a 'type'");
  const std::string type = (*v)["type"].get<std::string>();
  std::string* setting = &s.json_schema;
  std::string text;
  if (type == "text") {
    return;
  } else if (type == "json_object") {
    text = R"({"type": "object"})";
  } else if (type == "json_schema") {
    const auto spec = v->find("json_schema");
    if (spec == v->end() || !spec->is_object())
      throw bad_request("response_format.json_schema must be an object with a 'schema'", "response_format.json_schema",
                        "missing_required_parameter");
    const auto schema = spec->find("schema");
    if (schema == spec->end()) {
      text = R"({"type": "object"})";  // OpenAI: no schema, any object
    } else {
      if (!schema->is_object() && !schema->is_boolean())
        throw wrong_type("response_format.json_schema.schema", "a JSON Schema (an object)");
      text = schema->dump();
    }
  } else if (type == "structural_tag") {
    if (!v->contains("format") || !(*v)["format"].is_object())
      throw bad_request("response_format.format must be a structural tag format object", "response_format.format",
                        "missing_required_parameter");
    setting = &s.structural_tag;
    text = json{{"type", "structural_tag"}, {"format", (*v)["format"]}}.dump();
  } else {
    throw bad_request(
        fmt::format("response_format type '{}' is not supported (text, json_object, json_schema or structural_tag)", type),
        "response_format.type");
  }
  if (!setting->empty())
    throw bad_request(fmt::format("give response_format or {}, not both", setting == &s.json_schema ? "json_schema" : "structural_tag"),
                      "response_format");
  *setting = std::move(text);
}

constexpr SettingField kSettingFields[] = {
    {"max_tokens", "max_tokens", false, nullptr},  // max_completion_tokens, OpenAI's newer name, wins
    {"temperature", "temperature", false, nullptr},
    {"top_p", "top_p", false, nullptr},
    {"min_p", "min_p", true, nullptr},
    {"repeat_penalty", "repeat_penalty", true, nullptr},
    {"top_k", "top_k", true, nullptr},
    {"repeat_last_n", "repeat_last_n", true, nullptr},
    {"seed", "seed", false, nullptr},
    {"stop", "stop", false, nullptr},
    {"ignore_eos", "ignore_eos", true, nullptr},
    {"max_tokens_per_call", nullptr, false,
     "the size of prefill calls is the host's choice: a client asking for one-token calls would slow every "
     "request the engine runs beside it (the engine splits long prompts itself while others generate)"},
    {"speculative", "speculative", true, nullptr},
    {"draft_max", "draft_max", true, nullptr},
    // llama-server's names; OpenAI's response_format also sets json_schema.
    {"json_schema", "json_schema", true, nullptr},
    {"grammar", "grammar", true, nullptr},
    {"regex", "regex", true, nullptr},
    {"structural_tag", "structural_tag", true, nullptr},  // also response_format {"type": "structural_tag"}
};

}  // namespace

std::span<const SettingField> setting_fields() { return kSettingFields; }

CompletionRequest parse_completion_request(const json& body, Endpoint endpoint, int64_t max_tokens_cap) {
  if (!body.is_object()) throw bad_request("the request body must be a JSON object", "", "invalid_json");
  CompletionRequest c;
  if (const json* m = field(body, "model")) {
    if (!m->is_string()) throw wrong_type("model", "a string");
    c.model = m->get<std::string>();
  }
  engine::Request& r = c.request;
  if (endpoint == Endpoint::Chat) {
    r.messages = messages_of(body, r.images);
    if (const json* tools = field(body, "tools"); tools && !tools->is_null()) {
      try {
        c.tools = ToolRequest::parse(*tools, field(body, "tool_choice"), field(body, "parallel_tool_calls"));
      } catch (const Error& e) {
        throw bad_request(e.problem(), e.subject());
      }
    }
    // Variables for the template (vLLM's and llama-server's field), such
    // as {"enable_thinking": false}.
    if (const json* kw = field(body, "chat_template_kwargs"); kw && !kw->is_null()) {
      if (!kw->is_object()) throw wrong_type("chat_template_kwargs", "an object");
      for (const auto& [key, value] : kw->items()) r.template_extra[key] = value;
    }
    if (const json* f = field(body, "reasoning_format"); f && !f->is_null()) {
      if (!f->is_string() || (*f != "auto" && *f != "none" && *f != "deepseek"))
        throw bad_request("'reasoning_format' must be \"auto\", \"deepseek\" (reasoning_content apart) or \"none\" "
                          "(reasoning left in content)",
                          "reasoning_format");
      c.split_reasoning = *f != "none";
    }
  } else {
    read_prompt(body, r);
  }

  GenerationSettings& s = r.settings;
  const int64_t big = std::numeric_limits<int32_t>::max();
  std::optional<int64_t> max_tokens = integer(body, "max_completion_tokens", 1, big);
  if (!max_tokens) max_tokens = integer(body, "max_tokens", 1, big);
  s.max_tokens = std::min(max_tokens.value_or(max_tokens_cap), max_tokens_cap);
  s.temperature = static_cast<float>(number(body, "temperature", 0, 2).value_or(1.0));
  s.top_p = static_cast<float>(number(body, "top_p", 0, 1).value_or(1.0));
  if (s.top_p <= 0) throw bad_request("'top_p' must be greater than 0", "top_p");
  s.top_k = integer(body, "top_k", 0, big).value_or(0);
  s.min_p = static_cast<float>(number(body, "min_p", 0, 1).value_or(0.0));
  s.repeat_penalty = static_cast<float>(number(body, "repeat_penalty", 0.01, 100).value_or(1.0));
  s.repeat_last_n = integer(body, "repeat_last_n", -1, big).value_or(s.repeat_last_n);
  // Without a seed, sampling differs from request to request, as OpenAI's does.
  if (std::optional<int64_t> seed = integer(body, "seed", std::numeric_limits<int64_t>::min(),
                                            std::numeric_limits<int64_t>::max()))
    s.seed = static_cast<uint64_t>(*seed);
  else
    s.seed = (static_cast<uint64_t>(std::random_device{}()) << 32) | std::random_device{}();
  s.stop = stop_strings(body);
  s.ignore_eos = boolean(body, "ignore_eos").value_or(false);
  if (const json* v = field(body, "speculative")) {
    if (!v->is_string())
      throw wrong_type("speculative", "a string (\"off\", \"lookup\", \"auto\", \"draft\" or \"lookup+draft\")");
    s.speculative = v->get<std::string>();  // checked with the other settings by make_generate_options
    // Clients name no files: "draft" and "lookup+draft" use the server's own draft model (--draft).
    if (s.speculative.find(':') != std::string::npos)
      throw bad_request("\"speculative\": \"draft\" uses the server's draft model (tessera serve --draft PATH); "
                        "clients cannot name one",
                        "speculative");
  }
  s.draft_max = integer(body, "draft_max", 1, 32).value_or(s.draft_max);
  s.json_schema = text_or_json(body, "json_schema");
  s.structural_tag = text_or_json(body, "structural_tag");
  apply_response_format(body, s);
  s.grammar = text_or_json(body, "grammar");
  s.regex = text_or_json(body, "regex");  // more than one constraint: make_generate_options says so
  if (integer(body, "n", 1, 1).value_or(1) != 1) throw bad_request("only n = 1 is supported", "n");

  c.stream = boolean(body, "stream").value_or(false);
  if (const json* o = field(body, "stream_options")) {
    if (!o->is_object()) throw wrong_type("stream_options", "an object");
    c.include_usage = boolean(*o, "include_usage").value_or(false);
  }
  return c;
}

}  // namespace tessera::server
