// tessera chat MODEL [--system S] [sampling flags]
//
// Interactive multi-turn chat on stdin/stdout: one user message per line
// (a line ending in "\" continues on the next), the reply streamed back. The
// KV cache of earlier turns is reused (generation/chat.h). Commands: /reset
// starts over, /exit (or end of input) quits. Speeds go to stderr per turn.
#include <cstdio>
#include <iostream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "core/error.h"
#include "load/draft_models.h"
#include "generation/chat.h"
#include "runtime/session.h"

namespace tessera::cli {

void register_chat(CLI::App& app) {
  auto* cmd = app.add_subcommand("chat", "Interactive multi-turn chat");
  static GenerationFlags flags;
  static bool no_kv_reuse = false;
  flags.settings.max_tokens = 512;
  flags.add_to(*cmd);
  cmd->add_flag("--no-kv-reuse", no_kv_reuse, "Recompute the whole conversation every turn (same output, slower)");
  cmd->callback([] {
    GenerateOptions options = flags.options();
    auto model = flags.load_model();
    load_draft_model(options, *model);
    if (!model->chat_template()) fail(model->path(), "chat template", "the model has no chat template");
    Session session(*model, flags.ctx);
    Chat chat(session, options, flags.system, !no_kv_reuse);
    std::string line, message;
    for (;;) {
      fmt::print(stderr, "{}", message.empty() ? "> " : ". ");
      if (!std::getline(std::cin, line)) break;
      if (!line.empty() && line.back() == '\\') {
        message += line.substr(0, line.size() - 1) + "\n";
        continue;
      }
      message += line;
      if (message == "/exit") break;
      if (message == "/reset") {
        chat.reset();
        message.clear();
        fmt::print(stderr, "(conversation reset)\n");
        continue;
      }
      if (message.empty()) continue;
      try {
        const GenerateResult r = chat.turn(message, print_text);
        fmt::print("\n");
        std::fflush(stdout);
        print_speed(r);
        fmt::print(stderr, "(reused {} cached tokens)\n", chat.reused_tokens());
      } catch (const Error& e) {
        fmt::print(stderr, "error: {}\n", e.what());
      }
      message.clear();
    }
  });
}

}  // namespace tessera::cli
