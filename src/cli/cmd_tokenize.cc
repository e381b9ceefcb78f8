// tessera tokenize MODEL "text" [--json] [--no-special]
//
// Prints the token ids of the text and their pieces, one per line. With
// --json the text is read from stdin (so any bytes, newlines and a 100 MB
// input pass unharmed) and one JSON object {"ids": [...]} is printed: the ids
// Hugging Face's encode(text) gives (special tokens such as BOS only when the
// model's tokenizer adds them). MODEL is a GGUF file, a tokenizer.json, a
// directory holding tokenizer.json, or a pulled model name.
//
// `--jsonl` reads one JSON string per line from stdin and prints one JSON list
// of ids per line, in order: many texts through one loaded tokenizer (the
// llama.cpp vocabulary suite runs this way).
//
// `--chat FILE.json` renders a conversation with the model's chat template
// (src/tokenizer/chat_template*) and prints the text; with --json it prints
// {"text": ..., "ids": [...]}, the ids of the rendered text tokenized without
// adding special tokens again (apply_chat_template(tokenize=True)).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "bundle/bundle_summary.h"
#include "core/error.h"
#include "sources/model_registry.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tessera::cli {

// A path as given, or a pulled model's GGUF. Lighter than open_model_source:
// no tensors, no spec, and an HF directory needs only its tokenizer.json.
std::string resolve_tokenizer_path(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (Bundle::is_bundle(name_or_path)) return bundle_tokenizer_path(Bundle::read_manifest(name_or_path), name_or_path);
  if (fs::exists(name_or_path, ec)) return name_or_path;
  if (const RegisteredModel* m = find_registered_model(name_or_path)) {
    const std::string path = pulled_model_path(*m, tessera_home());
    if (!fs::is_regular_file(path, ec))
      fail(name_or_path, "", "model is not pulled yet: run `tessera pull {}`", m->name);
    return path;
  }
  fail(name_or_path, "", "no such file or directory, and not a known model name");
}

namespace {

// Renders the conversation in `chat_file` with the model's own chat template
// (tokenizer/chat_template.h), as transformers' apply_chat_template(tokenize=False).
// The file holds a JSON list of OpenAI-style messages, or an object
// {"messages": [...], "add_generation_prompt": bool, "tools": [...], ...} whose
// other keys become template variables (enable_thinking, ...).
// add_generation_prompt defaults to false, as in transformers.
std::string render_chat(const std::string& model_path, const std::string& chat_file,
                        const tok::Tokenizer& tok) {
  namespace fs = std::filesystem;
  std::optional<std::string> source = find_chat_template(model_path);
  std::string origin = model_path;
  std::error_code ec;
  if (!source && fs::is_regular_file(model_path, ec)) {  // tokenizer.json: its directory
    const fs::path dir = fs::path(model_path).parent_path();
    source = find_chat_template(dir.empty() ? "." : dir.string());
    origin = dir.string();
  }
  if (!source) fail(model_path, "chat template", "the model has no chat template");
  const ChatTemplate tpl = ChatTemplate::parse(*source, origin + ": chat template");
  nlohmann::ordered_json chat;
  try {
    std::ifstream in(chat_file, std::ios::binary);
    if (!in) fail(chat_file, "--chat", "cannot open for reading");
    chat = nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail(chat_file, "--chat", "invalid JSON: {}", e.what());
  }
  ChatTemplateOptions opt;
  if (tok.bos_id()) opt.bos_token = std::string(tok.token_to_piece(*tok.bos_id()));
  if (tok.eos_id()) opt.eos_token = std::string(tok.token_to_piece(*tok.eos_id()));
  nlohmann::ordered_json messages = chat;
  if (chat.is_object()) {
    if (!chat.contains("messages")) fail(chat_file, "--chat", "expected a list of messages or an object with \"messages\"");
    messages = chat["messages"];
    for (const auto& [k, v] : chat.items()) {
      if (k == "messages") continue;
      if (k == "add_generation_prompt") opt.add_generation_prompt = v.is_boolean() && v.get<bool>();
      else opt.extra[k] = v;
    }
  }
  return tpl.render(messages, opt);
}

std::string printable(const std::string& piece) {
  // Pieces are printed JSON-quoted so spaces, newlines and control bytes show.
  return nlohmann::json(piece).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void register_tokenize(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenize", "Token ids of a text (HF-exact): GGUF, tokenizer.json / HF dir, or pulled name");
  static std::string model, text, chat;
  static bool json = false, jsonl = false, no_special = false;
  cmd->add_option("model", model, "GGUF path, tokenizer.json or HF directory, or pulled model name")->required();
  cmd->add_option("text", text, "Text to tokenize (with --json: read from stdin instead)");
  cmd->add_flag("--json", json, "Read the text from stdin, print {\"ids\": [...]}");
  cmd->add_flag("--jsonl", jsonl, "Read one JSON string per line from stdin, print one JSON list of ids per line");
  cmd->add_flag("--no-special", no_special, "Do not add BOS/EOS (add_special_tokens=False)");
  cmd->add_option("--chat", chat, "Render this conversation JSON (OpenAI-style messages) with the model's chat template and print the text (with --json: text and ids)");
  cmd->callback([] {
    const std::string path = resolve_tokenizer_path(model);
    const auto tok = tok::Tokenizer::from_file(path);
    if (jsonl) {
      if (!chat.empty() || json) fail("--jsonl", "", "cannot be combined with --json or --chat");
      std::string line;
      for (size_t n = 1; std::getline(std::cin, line); ++n) {
        if (line.empty()) continue;
        std::string t;
        try {
          const auto j = nlohmann::json::parse(line);
          if (!j.is_string()) fail("--jsonl", fmt::format("line {}", n), "expected a JSON string");
          t = j.get<std::string>();
        } catch (const nlohmann::json::exception& e) {
          fail("--jsonl", fmt::format("line {}", n), "invalid JSON: {}", e.what());
        }
        fmt::print("{}\n", nlohmann::json(tok.encode(t, !no_special)).dump());
      }
      std::fflush(stdout);
      return;
    }
    std::string input = text;
    if (!chat.empty()) {
      input = render_chat(path, chat, tok);
      if (!json) {  // the rendered conversation itself
        fmt::print("{}", input);
        return;
      }
    } else if (json) {
      input.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    }
    // A rendered chat already holds its special tokens: apply_chat_template
    // tokenizes it with add_special_tokens=False.
    const auto ids = tok.encode(input, !no_special && chat.empty());
    if (json) {
      nlohmann::json out = {{"ids", ids}};
      if (!chat.empty()) out["text"] = input;
      fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      return;
    }
    for (int32_t id : ids) fmt::print("{:>8}  {}\n", id, printable(std::string(tok.token_to_piece(id))));
    fmt::print("{} tokens\n", ids.size());
  });
}

}  // namespace tessera::cli
