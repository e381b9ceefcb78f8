// What one generation request says and what it gets back, as every front door
// (C++ / C API, Python, the HTTP server) hands it to the engine (engine.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "generation/generate.h"

namespace tessera::engine {

struct Request {
  // The prompt: exactly one of these three.
  std::vector<int32_t> prompt_ids;                 // token ids as given
  std::optional<std::string> prompt;               // text, tokenized with the model's BOS / EOS rules
  std::optional<nlohmann::ordered_json> messages;  // chat messages, rendered with the model's chat template
  // Image files (JPEG / PNG bytes), one per image mark of the prompt or the
  // messages (the chat template writes one for each {"type": "image"}
  // content part), in order; only for a model with an image encoder.
  std::vector<std::string> images;
  // Further variables of the chat template (tools, ...): an object.
  nlohmann::ordered_json template_extra = nlohmann::ordered_json::object();

  GenerationSettings settings;  // checked by make_generate_options when the request is submitted

  // Text as it becomes final (generate()'s on_text); returning false cancels.
  // Called on the engine's scheduler thread: it must not block for long, or
  // it holds up every request behind it.
  std::function<bool(std::string_view)> on_text;
  // Set from any thread to cancel: a queued request then never runs, a
  // running one stops at its next token with finish_reason "cancelled".
  std::shared_ptr<std::atomic<bool>> cancel;
  // Called on the scheduler thread once the prompt has been rendered and
  // checked and the request is about to prefill: a front door that must
  // choose a status before streaming (the server) waits for it or for an error.
  std::function<void()> on_started;
};

struct Result {
  GenerateResult generation;  // ids, text, finish reason, timings; prompt_tokens there = tokens prefilled
  int64_t prompt_tokens = 0;  // the whole prompt
  // Prompt tokens whose KV came from the slot (not prefilled again).
  int64_t reused_tokens = 0;
  // Empty when every token the slot shared with the prompt was reused; else
  // why fewer were (e.g. a sliding-window layer's ring no longer held what
  // the cut needed, so the whole prompt was prefilled).
  std::string reuse_note;
  // Where the reused state came from: "slot" (this conversation's slot),
  // "prefix cache" (a state another conversation left), or "" (none).
  std::string reused_from;
  size_t slot = 0;
  double queue_ms = 0;  // submitted to started
};

}  // namespace tessera::engine
