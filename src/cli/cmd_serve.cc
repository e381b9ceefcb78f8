// tessera serve MODEL [--host 127.0.0.1] [--port 8080] [--api-key K] [--parallel N] [--threads N]
//
// An OpenAI-compatible HTTP server (server/server.h) with a web chat page at /.
// --parallel N keeps N conversations' KV states (session slots); requests take
// turns on the model, one generation at a time, from a queue of --queue
// requests (503 beyond it). The port answers while the model loads (GET
// /health: 503 "loading"); "listening on http://HOST:PORT" goes to stdout
// once requests are served; SIGINT / SIGTERM stop it.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <atomic>
#include <exception>
#include <filesystem>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "core/error.h"
#include "engine/engine.h"
#include "server/server.h"

namespace tessera::cli {

namespace {

// SIGINT / SIGTERM are blocked in every thread and taken by one waiting
// thread with sigwait, which may then call anything: it cancels the running
// generation and stops the server. SIGUSR1 wakes it when the server ends
// on its own.
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  return set;
}

// The name clients use for the model: a pulled name as given, a path's last
// component without a .gguf extension.
std::string served_model_name(const std::string& model) {
  std::filesystem::path p(model);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();  // "dir/"
  std::string name = p.filename().string();
  if (p.extension() == ".gguf") name = p.stem().string();
  return name.empty() ? model : name;
}

}  // namespace

void register_serve(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API, with a web chat at /");
  static std::string model;
  static server::ServerOptions options;
  static engine::EngineOptions engine_options;
  static KernelFlags kernels;
  static bool reference = false;
  cmd->add_option("model", model, "GGUF path, HF checkpoint directory, bundle or pulled model name")->required();
  cmd->add_option("--host", options.host, "Address to listen on (127.0.0.1: this machine only)")->capture_default_str();
  cmd->add_option("--port", options.port, "Port (0: any free port, printed)")->capture_default_str();
  cmd->add_option("--api-key", options.api_key, "Require 'Authorization: Bearer KEY' on /v1/* (default: none)");
  cmd->add_option("--model-name", options.model_name, "Model id clients see (default: from MODEL)");
  cmd->add_option("--parallel", engine_options.slots,
                  "Conversations whose KV state is kept (session slots); their decode steps run batched")
      ->capture_default_str();
  cmd->add_option("--queue", engine_options.queue_capacity, "Requests waiting beyond the running one (503 beyond)")
      ->capture_default_str();
  static uint64_t prefix_cache_mb = engine_options.prefix_cache_bytes >> 20;
  cmd->add_option("--prefix-cache-mb", prefix_cache_mb,
                  "MiB of session state kept for shared prompt prefixes, e.g. system prompts (0 = off)")
      ->capture_default_str();
  static uint64_t prefix_cache_disk_mb = 0;
  cmd->add_option("--prefix-cache-disk-mb", prefix_cache_disk_mb,
                  "MiB of prefix-cache states also kept on disk, reused after a restart (0 = off)")
      ->capture_default_str();
  cmd->add_option("--prefix-cache-dir", engine_options.prefix_cache_dir,
                  "Directory of the disk tier (default: $TESSERA_HOME/prefix-cache/<model>)");
  cmd->add_option("--draft", options.draft_model,
                  "Draft model for requests with \"speculative\": \"draft\" (a bundle or model sharing the tokenizer)");
  cmd->add_option("-c,--ctx", engine_options.context_length, "Context length per slot (0 = the model's)")
      ->capture_default_str();
  cmd->add_option("--max-tokens", options.max_tokens_cap, "Cap on a request's max_tokens (and its default)")
      ->capture_default_str();
  cmd->add_option("--max-body", options.max_body_bytes, "Largest request body in bytes (413 beyond)")
      ->capture_default_str();
  cmd->add_option("--timeout", options.io_timeout_s, "Seconds a client may stall reading or sending")
      ->capture_default_str();
  cmd->add_option("--mmproj", engine_options.mmproj,
                  "The vision projector GGUF (llama.cpp's mmproj file) that lets a GGUF text model take images");
  cmd->add_option("--max-images", engine_options.max_images_per_request, "Images one request may hold (400 beyond)")
      ->capture_default_str();
  static int64_t max_image_pixels = engine_options.image_limits.max_pixels;
  cmd->add_option("--max-image-pixels", max_image_pixels,
                  "Largest image (width × height, read from its header before decoding; 400 beyond)")
      ->capture_default_str();
  cmd->add_flag("--reference", reference, kReferenceHelp);
  kernels.add_to(*cmd);
  cmd->callback([] {
    if (engine_options.max_images_per_request < 0) fail("options", "--max-images", "must be >= 0");
    if (max_image_pixels < 1) fail("options", "--max-image-pixels", "must be at least 1");
    engine_options.image_limits.max_pixels = max_image_pixels;
    if (options.max_tokens_cap < 1) fail("options", "--max-tokens", "must be at least 1");
    if (options.io_timeout_s < 1) fail("options", "--timeout", "must be at least 1");
    if (options.model_name.empty()) options.model_name = served_model_name(model);
    engine_options.prefix_cache_bytes = prefix_cache_mb << 20;
    engine_options.prefix_cache_disk_bytes = prefix_cache_disk_mb << 20;
    engine_options.reference = reference;
    kernels.apply(engine_options.load);

    // Before any other thread starts (the engine's, the thread pool's, the
    // server's): they inherit the mask, so only `stopper` receives these.
    const sigset_t signals = stop_signals();
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    std::atomic<engine::Engine*> running_engine{nullptr};
    std::atomic<server::Server*> running_server{nullptr};
    std::thread stopper([&] {
      int signal = 0;
      sigwait(&signals, &signal);
      if (signal == SIGUSR1) return;
      server::Server* server = running_server.load();
      if (!server) std::_Exit(128 + signal);  // still loading: nothing to wind down
      fmt::print(stderr, "tessera serve: stopping (signal {})\n", signal);
      running_engine.load()->stop();  // the running generation ends at its next token, queued ones fail
      server->stop();
    });
    struct WakeAndJoin {  // also when loading throws
      std::thread& t;
      ~WakeAndJoin() {
        pthread_kill(t.native_handle(), SIGUSR1);
        t.join();
      }
    } wake_and_join{stopper};

    // The port is bound and served while the model loads: GET /health
    // answers 503 {"status": "loading"} until it is ready. The engine outlives
    // the server (declared first), which observes it for /metrics.
    std::unique_ptr<engine::Engine> engine;
    if (options.http_threads == 0) options.http_threads = engine_options.queue_capacity + engine_options.slots + 4;
    server::Server server(options);
    const int port = server.bind();
    std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is a failed write, not a dead server
    fmt::print("tessera serve: loading {} (GET /health on http://{}:{} answers 503 until it is ready)\n", model,
               options.host, port);
    std::fflush(stdout);
    std::exception_ptr load_error;
    std::thread loader([&] {
      try {
        engine = engine::Engine::load(model, engine_options);
        server.attach(*engine);
        running_engine = engine.get();
        running_server = &server;
        const Model& served = engine->model();
        fmt::print("tessera serve: {} threads ({} physical cores here), isa {}, arithmetic {}, {} slots\n",
                   served.pool().threads(), physical_core_count(), served.backend().info().level,
                   arithmetic_name(served.arithmetic()), engine_options.slots);
        fmt::print("tessera serve: {} listening on http://{}:{}\n", options.model_name, options.host, port);
        std::fflush(stdout);
      } catch (...) {
        load_error = std::current_exception();
        server.stop();
      }
    });
    server.listen();
    loader.join();
    running_server = nullptr;
    if (load_error) std::rethrow_exception(load_error);
    fmt::print(stderr, "tessera serve: stopped\n");
  });
}

}  // namespace tessera::cli
