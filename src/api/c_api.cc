// include/tessera/tessera.h over the C++ API. Every entry point catches
// everything: a C caller sees a NULL / negative return and tessera_last_error().
#include <tessera/tessera.h>

#include <exception>
#include <string>
#include <tessera/tessera.hpp>

#include "api/c_settings.h"

struct tessera_engine {
  tessera::Engine engine;
};
struct tessera_request {
  tessera::Request request;
};
struct tessera_result {
  tessera::Result result;
};

namespace {

thread_local std::string g_last_error;

// Runs f; on an exception records its message and returns `failed`.
template <typename F, typename R>
R guarded(F&& f, R failed) {
  try {
    g_last_error.clear();
    return f();
  } catch (const std::exception& e) {
    g_last_error = e.what();
  } catch (...) {
    g_last_error = "unknown error";
  }
  return failed;
}

int null_argument(const char* what) {
  g_last_error = std::string(what) + " is NULL";
  return -1;
}

}  // namespace

extern "C" {

const char* tessera_last_error(void) { return g_last_error.c_str(); }

void tessera_engine_options_init(tessera_engine_options* options) {
  if (!options) return;
  options->threads = 0;
  options->slots = 1;
  options->queue_capacity = 16;
  options->context_length = 0;
  options->prefix_cache_bytes = tessera::LoadConfig{}.prefix_cache_bytes;
  options->prefix_cache_disk_bytes = 0;
  options->prefix_cache_dir = nullptr;
  options->arithmetic = nullptr;
  options->kv_type = nullptr;
}

tessera_engine* tessera_engine_create(const char* model, const tessera_engine_options* options) {
  if (!model) return null_argument("model"), nullptr;
  return guarded(
      [&]() -> tessera_engine* {
        tessera::LoadConfig c;
        if (options) {
          c.threads = options->threads;
          c.slots = options->slots;
          c.queue_capacity = options->queue_capacity;
          c.context_length = options->context_length;
          c.prefix_cache_bytes = options->prefix_cache_bytes;
          c.prefix_cache_disk_bytes = options->prefix_cache_disk_bytes;
          if (options->prefix_cache_dir) c.prefix_cache_dir = options->prefix_cache_dir;
          if (options->arithmetic) c.arithmetic = options->arithmetic;
          if (options->kv_type) c.kv_type = options->kv_type;
        }
        return new tessera_engine{tessera::Engine::load(model, c)};
      },
      static_cast<tessera_engine*>(nullptr));
}

void tessera_engine_free(tessera_engine* engine) { delete engine; }

int tessera_engine_reset(tessera_engine* engine) {
  if (!engine) return null_argument("engine");
  return guarded([&] { return engine->engine.reset(), 0; }, -1);
}

tessera_result* tessera_engine_generate(tessera_engine* engine, const tessera_request* request,
                                        tessera_text_callback on_text, void* user_data) {
  if (!engine) return null_argument("engine"), nullptr;
  if (!request) return null_argument("request"), nullptr;
  return guarded(
      [&]() -> tessera_result* {
        std::function<bool(std::string_view)> forward;
        if (on_text)
          forward = [&](std::string_view text) { return on_text(text.data(), text.size(), user_data) != 0; };
        return new tessera_result{engine->engine.stream(request->request, forward)};
      },
      static_cast<tessera_result*>(nullptr));
}

tessera_request* tessera_request_create(void) {
  return guarded([] { return new tessera_request{}; }, static_cast<tessera_request*>(nullptr));
}

void tessera_request_free(tessera_request* request) { delete request; }

int tessera_request_set_prompt(tessera_request* request, const char* text) {
  if (!request) return null_argument("request");
  if (!text) return null_argument("text");
  return guarded([&] { return request->request.prompt = text, 0; }, -1);
}

int tessera_request_add_message(tessera_request* request, const char* role, const char* content) {
  if (!request) return null_argument("request");
  if (!role || !content) return null_argument(!role ? "role" : "content");
  return guarded([&] { return request->request.messages.push_back({role, content}), 0; }, -1);
}

int tessera_request_set_prompt_ids(tessera_request* request, const int32_t* ids, size_t count) {
  if (!request) return null_argument("request");
  if (!ids && count) return null_argument("ids");
  return guarded([&] { return request->request.prompt_ids.assign(ids, ids + count), 0; }, -1);
}

int tessera_request_add_image(tessera_request* request, const char* mime_type, const void* bytes, size_t size) {
  if (!request) return null_argument("request");
  if (!bytes && size) return null_argument("bytes");
  return guarded(
      [&] {
        tessera::Media m{mime_type ? mime_type : "", std::string(static_cast<const char*>(bytes), size)};
        auto& messages = request->request.messages;
        (messages.empty() ? request->request.images : messages.back().images).push_back(std::move(m));
        return 0;
      },
      -1);
}

void tessera_generation_settings_init(tessera_generation_settings* settings) {
  if (settings) *settings = tessera::api::default_c_settings();
}

int tessera_request_set_settings(tessera_request* request, const tessera_generation_settings* settings) {
  if (!request) return null_argument("request");
  if (!settings) return null_argument("settings");
  return guarded(
      [&] {
        static_cast<tessera::GenerationSettings&>(request->request) = tessera::api::settings_from_c(*settings);
        return 0;
      },
      -1);
}

int tessera_request_set_max_tokens(tessera_request* request, int64_t max_tokens) {
  if (!request) return null_argument("request");
  request->request.max_tokens = max_tokens;
  return 0;
}

int tessera_request_set_temperature(tessera_request* request, float temperature) {
  if (!request) return null_argument("request");
  request->request.temperature = temperature;
  return 0;
}

int tessera_request_set_top_p(tessera_request* request, float top_p) {
  if (!request) return null_argument("request");
  request->request.top_p = top_p;
  return 0;
}

int tessera_request_set_seed(tessera_request* request, uint64_t seed) {
  if (!request) return null_argument("request");
  request->request.seed = seed;
  return 0;
}

int tessera_request_add_stop(tessera_request* request, const char* stop) {
  if (!request) return null_argument("request");
  if (!stop) return null_argument("stop");
  return guarded([&] { return request->request.stop.push_back(stop), 0; }, -1);
}

void tessera_result_free(tessera_result* result) { delete result; }
const char* tessera_result_text(const tessera_result* r) { return r ? r->result.text.c_str() : ""; }
const char* tessera_result_finish_reason(const tessera_result* r) { return r ? r->result.finish_reason.c_str() : ""; }
size_t tessera_result_token_count(const tessera_result* r) { return r ? r->result.ids.size() : 0; }
const int32_t* tessera_result_tokens(const tessera_result* r) { return r ? r->result.ids.data() : nullptr; }
int64_t tessera_result_prompt_tokens(const tessera_result* r) { return r ? r->result.prompt_tokens : 0; }
int64_t tessera_result_reused_tokens(const tessera_result* r) { return r ? r->result.reused_tokens : 0; }
double tessera_result_ttft_ms(const tessera_result* r) { return r ? r->result.ttft_ms : 0; }
double tessera_result_prefill_tok_s(const tessera_result* r) { return r ? r->result.prefill_tok_s : 0; }
double tessera_result_decode_tok_s(const tessera_result* r) { return r ? r->result.decode_tok_s : 0; }

}  // extern "C"
