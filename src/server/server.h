// `tessera serve`: an OpenAI-compatible HTTP server over one Engine
// (cpp-httplib). Routes:
//   POST /v1/chat/completions, POST /v1/completions  (stream: server-sent events)
//   GET  /v1/models, GET /health (503 "loading" until the model is
//   attached), GET /metrics (Prometheus text, server/metrics.h), GET / (the
//   web chat page)
// Protections, in the order a request meets them (before its body is read):
// the API key on /v1/* (401), a body without Content-Length (411), a
// Content-Length over max_body_bytes (413, answered from the headers; the
// connection is then closed rather than drained). Then malformed JSON and
// wrong fields get 400, an unknown model 404, a full engine queue 503; every
// error body is OpenAI's {"error": {...}} shape. A client that goes away
// cancels its generation: a streamed one at the next token it fails to take,
// a non-streamed one within two seconds (its JSON is sent chunked after a
// space a second, whose write then fails).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/engine.h"

namespace tessera::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;               // 0: any free port (bind() says which)
  std::string api_key;           // empty: no key required
  std::string model_name;        // what /v1/models lists and requests must name (or omit)
  size_t max_body_bytes = 4 << 20;
  int64_t max_tokens_cap = 2048; // max_tokens above this is clamped; absent means this
  int http_threads = 0;          // 0: kDefaultHttpThreads (tessera serve: engine queue capacity + slots + 4)
  int io_timeout_s = 10;         // a client that sends or reads nothing for this long is dropped
  std::string draft_model;       // what "speculative": "draft" runs (generation/model_drafter.h); empty: refused
};

// http_threads' default (the server starts before the engine that would size it).
constexpr int kDefaultHttpThreads = 32;

class Server {
 public:
  // Answers from listen() on, before an engine is attached (while the
  // model loads): GET /health answers 503
  // {"status": "loading"} and /v1/* 503 (code "model_loading") until
  // attach(); /metrics says tessera_ready 0.
  explicit Server(ServerOptions options);
  // From now on requests run on `engine`, which must outlive the server
  // (the metrics observe it until the server is destroyed).
  void attach(engine::Engine& engine);
  ~Server();

  // Binds the listening socket; returns the port. Throws Error when it cannot.
  int bind();
  // Serves until stop() (from another thread or a signal handler).
  void listen();
  // Ends listen(), or makes a later listen() return at once; callable from
  // any thread, before or while listen() runs.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::server
