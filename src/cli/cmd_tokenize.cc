// tessera tokenize MODEL "text" [--json] [--no-special]
//
// Prints the token ids of the text and their pieces, one per line. With
// --json the text is read from stdin (so any bytes, newlines and a 100 MB
// input pass unharmed) and one JSON object {"ids": [...]} is printed: the ids
// Hugging Face's encode(text) gives (special tokens such as BOS only when the
// model's tokenizer adds them). MODEL is a GGUF file, a tokenizer.json, a
// directory holding tokenizer.json, or a pulled model name.
//
// Hook for chat templates: `--chat FILE.json` is reserved for rendering a
// conversation with the model's chat template (src/tokenizer/chat_template*)
// before tokenizing; see render_chat_hook below.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "sources/model_registry.h"
#include "tokenizer/tokenizer.h"

namespace tessera::cli {

// A path as given, or a pulled model's GGUF. Lighter than open_model_source:
// no tensors, no spec, and an HF directory needs only its tokenizer.json.
std::string resolve_tokenizer_path(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
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

// The chat-template engineer fills this in: given the model path and a JSON
// conversation file, return the rendered prompt text (or nullopt when chat
// templates are not available yet).
std::optional<std::string> render_chat_hook(const std::string& /*model_path*/, const std::string& /*chat_file*/) {
  return std::nullopt;
}

std::string printable(const std::string& piece) {
  // Pieces are printed JSON-quoted so spaces, newlines and control bytes show.
  return nlohmann::json(piece).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void register_tokenize(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenize", "Token ids of a text (HF-exact): GGUF, tokenizer.json / HF dir, or pulled name");
  static std::string model, text, chat;
  static bool json = false, no_special = false;
  cmd->add_option("model", model, "GGUF path, tokenizer.json or HF directory, or pulled model name")->required();
  cmd->add_option("text", text, "Text to tokenize (with --json: read from stdin instead)");
  cmd->add_flag("--json", json, "Read the text from stdin, print {\"ids\": [...]}");
  cmd->add_flag("--no-special", no_special, "Do not add BOS/EOS (add_special_tokens=False)");
  cmd->add_option("--chat", chat, "Conversation JSON to render with the chat template first");
  cmd->callback([] {
    const std::string path = resolve_tokenizer_path(model);
    const auto tok = tok::Tokenizer::from_file(path);
    std::string input = text;
    if (!chat.empty()) {
      auto rendered = render_chat_hook(path, chat);
      if (!rendered) fail(chat, "--chat", "chat templates are not available in this build yet");
      input = *rendered;
    } else if (json) {
      input.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    }
    const auto ids = tok.encode(input, !no_special);
    if (json) {
      fmt::print("{}\n", nlohmann::json{{"ids", ids}}.dump());
      return;
    }
    for (int32_t id : ids) fmt::print("{:>8}  {}\n", id, printable(tok.token_to_piece(id)));
    fmt::print("{} tokens\n", ids.size());
  });
}

}  // namespace tessera::cli
