#include "tokenizer/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "jinja/parser.h"
#include "sources/gguf.h"

namespace tessera {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

ChatTemplate ChatTemplate::parse(std::string source, std::string origin) {
  ChatTemplate t;
  auto tpl = std::make_shared<jinja::Template>(jinja::parse_template(source, origin));
  jinja::validate(*tpl);
  t.tpl_ = std::move(tpl);
  t.source_ = std::move(source);
  t.origin_ = std::move(origin);
  return t;
}

namespace {

// transformers' _alias_reasoning_fields: the first of reasoning_content,
// thinking, reasoning that is set (not null) becomes
// {"thinking": r, **message, "reasoning_content": r}.
jinja::Value alias_reasoning(const jinja::Value& message) {
  if (!message.is_dict()) return message;
  const jinja::Dict& d = message.as_dict();
  const jinja::Value* reasoning = nullptr;
  for (const char* key : {"reasoning_content", "thinking", "reasoning"}) {
    const jinja::Value* v = d.find(std::string_view(key));
    if (v && !v->is_none()) {
      reasoning = v;
      break;
    }
  }
  if (!reasoning) return message;
  jinja::Dict out;
  out.set(jinja::Value::string("thinking"), *reasoning);
  for (const auto& [k, v] : d.items()) out.set(k, v);
  out.set(jinja::Value::string("thinking"), *reasoning);
  out.set(jinja::Value::string("reasoning_content"), *reasoning);
  return jinja::Value::dict(std::move(out));
}

}  // namespace

std::string ChatTemplate::render(const ojson& messages, const ChatTemplateOptions& options) const {
  if (!messages.is_array()) fail(origin_, "messages", "messages must be a JSON array, got {}", messages.type_name());
  jinja::List chat;
  for (const auto& m : messages) {
    if (!m.is_object()) fail(origin_, "messages", "chat messages must be JSON objects, got {}", m.type_name());
    chat.push_back(alias_reasoning(jinja::Value::from_json(m)));
  }
  if (!options.extra.is_object()) fail(origin_, "extra", "template variables must be a JSON object");

  jinja::Dict ctx;
  ctx.set(jinja::Value::string("messages"), jinja::Value::list(std::move(chat)));
  ctx.set(jinja::Value::string("tools"), jinja::Value::none());
  ctx.set(jinja::Value::string("documents"), jinja::Value::none());
  ctx.set(jinja::Value::string("add_generation_prompt"), jinja::Value::boolean(options.add_generation_prompt));
  if (options.bos_token) ctx.set(jinja::Value::string("bos_token"), jinja::Value::string(*options.bos_token));
  if (options.eos_token) ctx.set(jinja::Value::string("eos_token"), jinja::Value::string(*options.eos_token));
  for (const auto& [k, v] : options.extra.items()) {
    if (k == "messages" || k == "add_generation_prompt")
      fail(origin_, "extra", "'{}' cannot be passed as an extra template variable", k);
    ctx.set(jinja::Value::string(k), jinja::Value::from_json(v));
  }
  return jinja::render(*tpl_, ctx, options.limits);
}

std::string ChatTemplate::render_json(const std::string& messages_json, const ChatTemplateOptions& options) const {
  ojson messages;
  try {
    messages = ojson::parse(messages_json);
  } catch (const nlohmann::json::exception& e) {
    fail(origin_, "messages", "invalid JSON: {}", e.what());
  }
  return render(messages, options);
}

namespace {

constexpr uintmax_t kMaxConfigBytes = uintmax_t{64} << 20;

std::string read_text(const fs::path& p) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(p, ec);
  if (ec) fail(p.string(), "", "cannot read: {}", ec.message());
  if (size > kMaxConfigBytes) fail(p.string(), "", "file is {} bytes, more than the {} allowed", size, kMaxConfigBytes);
  std::ifstream in(p, std::ios::binary);
  if (!in) fail(p.string(), "", "cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ojson read_json(const fs::path& p) {
  try {
    return ojson::parse(read_text(p));
  } catch (const nlohmann::json::exception& e) {
    fail(p.string(), "", "invalid JSON: {}", e.what());
  }
}

// tokenizer_config.json / chat_template.json "chat_template": a string, or a
// list of {"name", "template"} of which "default" is the one apply_chat_template uses.
std::optional<std::string> template_from_json(const fs::path& p) {
  const ojson j = read_json(p);
  if (!j.is_object()) fail(p.string(), "", "expected a JSON object");
  auto it = j.find("chat_template");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    for (const auto& e : *it) {
      if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
        return e["template"].get<std::string>();
    }
    return std::nullopt;
  }
  fail(p.string(), "chat_template", "expected a string or a list of named templates, got {}", it->type_name());
}

}  // namespace

std::optional<std::string> find_chat_template(const std::string& model_path_or_dir) {
  const fs::path p(model_path_or_dir);
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    if (fs::is_regular_file(p / "chat_template.jinja", ec)) return read_text(p / "chat_template.jinja");
    if (fs::is_regular_file(p / "chat_template.json", ec))
      if (auto t = template_from_json(p / "chat_template.json")) return t;
    if (fs::is_regular_file(p / "tokenizer_config.json", ec)) return template_from_json(p / "tokenizer_config.json");
    return std::nullopt;
  }
  if (!fs::is_regular_file(p, ec)) fail(model_path_or_dir, "", "no such file or directory");
  const std::string ext = p.extension().string();
  if (ext == ".jinja") return read_text(p);
  if (ext == ".json") return template_from_json(p);
  const GgufFile gguf = GgufFile::open(model_path_or_dir);
  return gguf.get_string("tokenizer.chat_template");
}

}  // namespace tessera
