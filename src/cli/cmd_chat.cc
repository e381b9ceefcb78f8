// tessera chat MODEL [--system S] [sampling flags]
//
// Interactive multi-turn chat on stdin/stdout: one user message per line
// (a line ending in "\" continues on the next), the reply streamed back. The
// KV cache of earlier turns is reused (generation/chat.h). Commands: /reset
// starts over, /exit (or end of input) quits, /image PATH attaches an image
// file to the next message (a multimodal HF checkpoint directory: its images
// of earlier turns are reused with the KV, not encoded again). Speeds go to
// stderr per turn.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "core/error.h"
#include "engine/prompt_images.h"
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
  static std::string mmproj;
  cmd->add_option("--mmproj", mmproj, "The vision projector GGUF (llama.cpp's mmproj file) for /image");
  cmd->callback([] {
    GenerateOptions options = flags.options();
    auto model = flags.load_model();
    load_draft_model(options, *model);
    if (!model->chat_template()) fail(model->path(), "chat template", "the model has no chat template");
    Session session(*model, flags.ctx);
    std::unique_ptr<ImageEncoder> encoder;
    std::unique_ptr<engine::EncoderImagePrompter> prompter;
    encoder = engine::open_image_encoder(flags.model, mmproj, mmproj.empty() ? nullptr : &model->require_tokenizer(), {},
                                         flags.reference);
    if (encoder)
      prompter = std::make_unique<engine::EncoderImagePrompter>(model->require_tokenizer(), *encoder, 32,
                                                                session.context_length() - 1);
    Chat chat(session, options, flags.system, !no_kv_reuse, prompter.get());
    std::vector<std::string> pending;  // image files for the next message
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
        pending.clear();
        message.clear();
        fmt::print(stderr, "(conversation reset)\n");
        continue;
      }
      if (message.rfind("/image ", 0) == 0) {
        const std::string path = message.substr(7);
        message.clear();
        if (!encoder) {
          fmt::print(stderr, "error: this model takes no images (a multimodal HF checkpoint directory does)\n");
          continue;
        }
        std::ifstream in(path, std::ios::binary);
        if (!in) {
          fmt::print(stderr, "error: --image: {}: cannot open the file\n", path);
          continue;
        }
        std::ostringstream bytes;
        bytes << in.rdbuf();
        pending.push_back(bytes.str());
        fmt::print(stderr, "(image attached to the next message: {})\n", path);
        continue;
      }
      if (message.empty()) continue;
      try {
        const GenerateResult r = chat.turn(message, print_text, pending);
        fmt::print("\n");
        std::fflush(stdout);
        print_speed(r);
        fmt::print(stderr, "(reused {} cached tokens)\n", chat.reused_tokens());
      } catch (const Error& e) {
        fmt::print(stderr, "error: {}\n", e.what());
      }
      pending.clear();  // sent with this message, or refused with it
      message.clear();
    }
  });
}

}  // namespace tessera::cli
