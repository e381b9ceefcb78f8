// tessera run MODEL -p "prompt" [-n N] [--temp T ...] [--seed S] [--threads N] [--chat] [--json]
//
// Generates a continuation of the prompt and streams it to stdout; prefill and
// decode speeds go to stderr. --chat renders the prompt as a user message
// (after --system) with the model's chat template. --prompt-ids 1,2,3 feeds
// token ids directly. --json prints one object instead of streaming:
// {"prompt_ids", "ids", "text", "finish_reason", "prefill_tok_s", "decode_tok_s", "ttft_ms", "decode_tokens",
// "decode_seconds", "speculative": {"mode", "drafted", "accepted", "verify_calls", "refeeds"}}.
// --speculative lookup|auto: speculative decoding (generation/speculative.h).
// --image PATH (repeatable): an image file (JPEG / PNG) for a multimodal
// Hugging Face checkpoint directory; with --chat each image goes before the
// prompt in the user message, without it the prompt marks where each goes
// with the model's image mark (Gemma 3: <start_of_image>).
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "core/error.h"
#include "engine/prompt_images.h"
#include "load/draft_models.h"
#include "generation/chat.h"
#include "runtime/session.h"

namespace tessera::cli {

namespace {

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    int32_t v = 0;
    const char* b = text.data() + i;
    const char* e = text.data() + j;
    while (b < e && *b == ' ') ++b;
    auto [ptr, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || ptr != e) fail("--prompt-ids", text.substr(i, j - i), "not a token id");
    ids.push_back(v);
    i = j + 1;
  }
  if (ids.empty()) fail("--prompt-ids", "", "no token ids given");
  return ids;
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("--image", path, "cannot open the file");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

void register_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Generate text from a prompt");
  static GenerationFlags flags;
  static std::string prompt, prompt_ids;
  static bool chat = false, json = false;
  static std::vector<std::string> image_paths;
  static std::string mmproj;
  flags.add_to(*cmd);
  cmd->add_option("-p,--prompt", prompt, "Prompt text");
  cmd->add_option("--prompt-ids", prompt_ids, "Prompt as comma-separated token ids (instead of -p)");
  cmd->add_flag("--chat", chat, "Apply the model's chat template to the prompt");
  cmd->add_flag("--json", json, "Print one JSON object (ids, text, speeds) instead of streaming");
  cmd->add_option("--mmproj", mmproj, "The vision projector GGUF (llama.cpp's mmproj file) for --image");
  cmd->add_option("--image", image_paths,
                  "An image file (JPEG / PNG) for a multimodal HF checkpoint; repeatable. With --chat it goes "
                  "before the prompt, else the prompt marks its place with the model's image mark");
  cmd->callback([] {
    if (prompt.empty() == prompt_ids.empty()) fail("options", "prompt", "give exactly one of -p/--prompt and --prompt-ids");
    GenerateOptions options = flags.options();
    auto model = flags.load_model();
    load_draft_model(options, *model);
    Session session(*model, flags.ctx);
    std::vector<int32_t> ids;
    engine::PromptWithImages with_images;
    if (!image_paths.empty()) {
      if (!prompt_ids.empty()) fail("options", "--image", "needs a text prompt (-p), not --prompt-ids");
      const std::string source = flags.model;
      const std::unique_ptr<ImageEncoder> encoder =
          engine::open_image_encoder(source, mmproj, mmproj.empty() ? nullptr : &model->require_tokenizer(), {},
                                     flags.reference);
      if (!encoder)
        fail("--image", source,
             "images need a vision tower: the model's Hugging Face checkpoint directory (config.json: "
             "vision_config), or --mmproj FILE");
      std::vector<std::string> images;
      for (const std::string& path : image_paths) images.push_back(read_file_bytes(path));
      std::string text = prompt;
      if (chat) {
        nlohmann::ordered_json content = nlohmann::ordered_json::array();
        for (size_t i = 0; i < images.size(); ++i) content.push_back({{"type", "image"}});
        content.push_back({{"type", "text"}, {"text", prompt}});
        nlohmann::ordered_json messages = nlohmann::ordered_json::array();
        if (!flags.system.empty()) messages.push_back({{"role", "system"}, {"content", flags.system}});
        messages.push_back({{"role", "user"}, {"content", content}});
        text = chat_prompt_text(*model, messages);
      }
      with_images = engine::prompt_with_images(model->require_tokenizer(), *encoder, std::move(text), !chat, images,
                                               static_cast<int64_t>(images.size()), session.context_length() - 1);
      ids = with_images.ids;
      options.media =
          engine::image_spans(with_images, *encoder, images, 0, static_cast<int64_t>(with_images.ids.size()));
    } else if (!prompt_ids.empty()) {
      if (chat) fail("options", "--chat", "cannot be combined with --prompt-ids");
      ids = parse_ids(prompt_ids);
    } else if (chat) {
      nlohmann::ordered_json messages = nlohmann::ordered_json::array();
      if (!flags.system.empty()) messages.push_back({{"role", "system"}, {"content", flags.system}});
      messages.push_back({{"role", "user"}, {"content", prompt}});
      ids = chat_prompt_ids(*model, messages);
    } else {
      ids = model->require_tokenizer().encode(prompt, true);
    }
    if (json) {
      const GenerateResult r = generate(session, ids, options);
      nlohmann::ordered_json out;
      out["prompt_ids"] = ids;
      out["ids"] = r.ids;
      out["text"] = r.text;
      out["finish_reason"] = r.finish_reason;
      out["prefill_tok_s"] = r.prefill_tok_s();
      out["decode_tok_s"] = r.decode_tok_s();
      out["ttft_ms"] = r.ttft_ms;
      out["decode_tokens"] = r.decode_steps;
      out["decode_seconds"] = r.decode_seconds;
      out["speculative"] = {{"mode", speculative_mode_name(options.speculative.mode)},
                            {"drafted", r.speculative.drafted},
                            {"accepted", r.speculative.accepted},
                            {"verify_calls", r.speculative.verify_calls},
                            {"refeeds", r.speculative.refeeds}};
      fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      return;
    }
    const GenerateResult r = generate(session, ids, options, print_text);
    fmt::print("\n");
    std::fflush(stdout);
    print_speed(r);
  });
}

}  // namespace tessera::cli
