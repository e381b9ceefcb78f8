// include/tessera/tessera.hpp over the engine (engine/engine.h).
#include <tessera/tessera.hpp>

#include "engine/engine.h"

namespace tessera {

struct Engine::Impl {
  std::unique_ptr<engine::Engine> engine;
};

namespace {

engine::Request to_engine_request(const Request& r) {
  engine::Request e;
  const int given = !r.prompt.empty() + !r.messages.empty() + !r.prompt_ids.empty();
  if (given != 1) fail("request", "prompt", "give exactly one of prompt, messages and prompt_ids (got {})", given);
  if (!r.prompt.empty()) e.prompt = r.prompt;
  if (!r.prompt_ids.empty()) e.prompt_ids = r.prompt_ids;
  auto add_image = [&](const Media& m) {
    if (!m.mime_type.empty() && m.mime_type != "image/jpeg" && m.mime_type != "image/png")
      fail("request", "images", "MIME type '{}' is not an image type Tessera reads (image/jpeg, image/png)",
           m.mime_type);
    e.images.push_back(m.bytes);
  };
  for (const Media& m : r.images) add_image(m);
  if (!r.messages.empty()) {
    e.messages = nlohmann::ordered_json::array();
    for (const ChatMessage& m : r.messages) {
      if (m.images.empty()) {
        e.messages->push_back({{"role", m.role}, {"content", m.content}});
        continue;
      }
      nlohmann::ordered_json parts = nlohmann::ordered_json::array();
      for (const Media& image : m.images) {
        add_image(image);
        parts.push_back({{"type", "image"}});
      }
      parts.push_back({{"type", "text"}, {"text", m.content}});
      e.messages->push_back({{"role", m.role}, {"content", parts}});
    }
  }
  e.settings = r;  // every setting: Request is a GenerationSettings
  return e;
}

Result from_engine_result(const engine::Result& e) {
  Result r;
  r.ids = e.generation.ids;
  r.text = e.generation.text;
  r.finish_reason = e.generation.finish_reason;
  r.prompt_tokens = e.prompt_tokens;
  r.reused_tokens = e.reused_tokens;
  r.reuse_note = e.reuse_note;
  r.reused_from = e.reused_from;
  r.ttft_ms = e.generation.ttft_ms;
  r.prefill_tok_s = e.generation.prefill_tok_s();
  r.decode_tok_s = e.generation.decode_tok_s();
  return r;
}

}  // namespace

Engine Engine::load(const std::string& model, const LoadConfig& config) {
  engine::EngineOptions o;
  o.load.threads = config.threads;
  o.load.kv_type = parse_kv_type(config.kv_type);
  o.load.arithmetic = parse_arithmetic(config.arithmetic);
  o.reference = config.reference;
  o.slots = config.slots;
  o.queue_capacity = config.queue_capacity;
  o.context_length = config.context_length;
  o.prefix_cache_bytes = config.prefix_cache_bytes;
  o.prefix_cache_disk_bytes = config.prefix_cache_disk_bytes;
  o.prefix_cache_dir = config.prefix_cache_dir;
  auto impl = std::make_unique<Impl>();
  impl->engine = engine::Engine::load(model, o);
  return Engine(std::move(impl));
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;
Engine::~Engine() = default;

Result Engine::generate(const Request& request) { return stream(request, {}); }

Result Engine::stream(const Request& request, const std::function<bool(std::string_view)>& on_text) {
  engine::Request e = to_engine_request(request);
  e.on_text = on_text;
  return from_engine_result(impl_->engine->run(std::move(e)));
}

void Engine::reset() { impl_->engine->reset(); }

std::string Engine::model_path() const { return impl_->engine->model().path(); }

}  // namespace tessera
