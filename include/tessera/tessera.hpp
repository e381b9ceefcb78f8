// Tessera's C++ API: load a model, generate or stream text, reset.
//
//   tessera::Engine engine = tessera::Engine::load("smollm2-135m-instruct", {.threads = 2});
//   tessera::Request request;
//   request.messages = {{"user", "Why is the sky blue?"}};
//   tessera::Result r = engine.stream(request, [](std::string_view piece) {
//     std::cout << piece << std::flush;
//     return true;  // false cancels
//   });
//
// An Engine keeps the KV state of the last `slots` conversations: a request
// whose prompt starts with tokens a slot already holds (the earlier turns of
// a chat, a shared system prompt) prefills only the rest; Result says how
// many tokens were reused and, when fewer than shared, why. Requests from
// several threads are queued and run together, their decode steps batched
// (as many at once as the engine has slots). Errors are thrown as
// std::runtime_error whose message names the input and the problem.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <tessera/generation_settings.hpp>

namespace tessera {

struct LoadConfig {
  int threads = 0;               // 0: this machine's physical cores; results are identical for any count
  int slots = 1;                 // conversations whose KV state is kept
  int queue_capacity = 16;       // requests waiting beyond the running one
  int64_t context_length = 0;    // per conversation; 0: the model's
  std::string kv_type = "f32";   // or "f16"
  std::string arithmetic = "fast";  // or "exact": two int8 activation passes instead of one (docs/QUANTIZATION.md)
  bool reference = false;        // GGUF / HF sources: the f32 reference path, not the cached bundle
  uint64_t prefix_cache_bytes = 256ull << 20;  // state kept for shared prompt prefixes (0: off)
  uint64_t prefix_cache_disk_bytes = 0;  // its disk tier, kept across runs (0: off)
  std::string prefix_cache_dir;          // empty: $TESSERA_HOME/prefix-cache/<model>
};

// A media file as bytes, with its MIME type ("image/jpeg", "image/png"; ""
// lets the bytes' signature say).
struct Media {
  std::string mime_type;
  std::string bytes;
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
  // Images shown with the message, before its text (a model with an image
  // encoder only: a multimodal Hugging Face checkpoint directory).
  std::vector<Media> images = {};
};

// A request: its prompt and every generation setting (the list, with
// defaults and ranges, is tessera/generation_settings.hpp), set as fields of
// the request:
//
//   request.max_tokens = 64;
//   request.speculative = "auto";  // prompt-lookup drafts; greedy output unchanged
struct Request : GenerationSettings {
  // The prompt: exactly one of these.
  std::string prompt;                 // plain text (the tokenizer adds BOS where the model wants it)
  std::vector<ChatMessage> messages;  // rendered with the model's chat template
  std::vector<int32_t> prompt_ids;    // token ids
  // With `prompt`: one image per image mark in it (Gemma 3: <start_of_image>), in order.
  std::vector<Media> images;
};

struct Result {
  std::vector<int32_t> ids;   // generated tokens (a final stop token included)
  std::string text;           // their text, cut before a stop string
  std::string finish_reason;  // "eos" | "stop" | "length" | "context" | "cancelled"
  int64_t prompt_tokens = 0;  // the whole prompt
  int64_t reused_tokens = 0;  // of which the KV came from an earlier request
  std::string reuse_note;     // empty, or why fewer tokens were reused than were shared
  std::string reused_from;    // "slot", "prefix cache", "disk" or "" (nothing reused)
  double ttft_ms = 0, prefill_tok_s = 0, decode_tok_s = 0;
};

class Engine {
 public:
  // `model`: a bundle directory, GGUF file, HF checkpoint directory or pulled
  // model name (converted once into the bundle cache, as `tessera run` does).
  static Engine load(const std::string& model, const LoadConfig& config = {});

  Result generate(const Request& request);
  // `on_text` receives text as it becomes final; returning false cancels
  // (finish_reason "cancelled"). It runs on the engine's thread.
  Result stream(const Request& request, const std::function<bool(std::string_view)>& on_text);
  // Forgets every conversation's KV state.
  void reset();
  // The path of what was loaded (for a pulled name, its bundle).
  std::string model_path() const;

  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;
  ~Engine();

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
