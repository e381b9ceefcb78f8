#include "server/server.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "engine/generation_channel.h"
#include "engine/chat_reply_format.h"
#include "server/api_error.h"
#include "server/chat_page.h"
#include "server/client_connection.h"
#include "server/completion_request.h"
#include "server/completion_response.h"
#include "server/metrics.h"

namespace tessera::server {

namespace {

using json = nlohmann::ordered_json;  // key order kept: schemas and tools keep their properties' order

// How often a non-streamed response in the making checks that its client is still there.
constexpr std::chrono::milliseconds kHeartbeat{1000};

void send_json(httplib::Response& res, int status, const ojson& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) { send_json(res, e.status, e.body()); }

// Compares without an early exit, so the time taken does not reveal how
// much of a guessed key was right.
bool same_secret(std::string_view given, std::string_view expected) {
  unsigned diff = given.size() != expected.size();
  for (size_t i = 0; i < given.size() && i < expected.size(); ++i)
    diff |= static_cast<unsigned char>(given[i]) ^ static_cast<unsigned char>(expected[i]);
  return diff == 0;
}

// An error the engine raised for one request, as the client should see it.
ApiError request_error(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const engine::QueueFull& q) {
    return ApiError(503, q.what(), "server_error", "", "queue_full");
  } catch (const Error& err) {
    return bad_request(err.what(), err.subject(), "invalid_value");  // the subject names the field
  } catch (const ApiError& a) {
    return a;
  } catch (const std::exception& other) {
    return ApiError(500, other.what(), "server_error");
  }
}

}  // namespace

struct Server::Impl {
  std::atomic<engine::Engine*> attached{nullptr};  // null while the model loads
  ServerOptions options;
  httplib::Server http;
  Metrics metrics;
  bool bound = false;
  std::mutex stop_mutex;
  bool stop_requested = false, listening = false;  // under stop_mutex
  std::atomic<bool> listen_returned{false};

  explicit Impl(ServerOptions o) : options(std::move(o)) { configure(); }
  ~Impl() {
    if (engine::Engine* e = attached.load()) e->set_observer(nullptr);
  }

  // The engine; while the model loads, a 503 the client may retry.
  engine::Engine& engine() const {
    engine::Engine* e = attached.load();
    if (!e) throw ApiError(503, "the model is still loading; try again shortly", "server_error", "", "model_loading");
    return *e;
  }

  void configure() {
    const int threads = options.http_threads > 0 ? options.http_threads : kDefaultHttpThreads;
    http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    http.set_payload_max_length(options.max_body_bytes);
    http.set_read_timeout(options.io_timeout_s, 0);
    http.set_write_timeout(options.io_timeout_s, 0);
    // One request per connection: after a refused body the connection must
    // close instead of reading the rest of it as the next request.
    http.set_keep_alive_max_count(1);

    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return admit(req, res) ? httplib::Server::HandlerResponse::Unhandled : httplib::Server::HandlerResponse::Handled;
    });
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr e) {
      send_error(res, request_error(e));
    });
    http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      if (res.status == 404)
        send_error(res, ApiError(404, fmt::format("no route {} {}", req.method, req.path), "invalid_request_error", "",
                                 "not_found"));
      else if (res.status == 413)
        send_error(res, ApiError(413, "request body too large", "invalid_request_error", "", "request_too_large"));
      else
        send_error(res, ApiError(res.status, fmt::format("HTTP error {}", res.status), "invalid_request_error"));
      return httplib::Server::HandlerResponse::Handled;
    }));

    http.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(chat_page_html()), "text/html; charset=utf-8");
    });
    // 503 {"status": "loading"} until the model is loaded, then 200 "ok".
    http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      const engine::Engine* e = attached.load();
      if (!e) {
        send_json(res, 503, {{"status", "loading"}, {"model", options.model_name}});
        return;
      }
      send_json(res, 200,
                {{"status", "ok"},
                 {"model", options.model_name},
                 {"slots", e->options().slots},
                 {"queued", e->queued()},
                 {"running", e->running()},
                 {"prefix_cache", {{"entries", e->prefix_cache_usage().first},
                                   {"bytes", e->prefix_cache_usage().second}}}});
    });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics.scrape(attached.load()), "text/plain; version=0.0.4; charset=utf-8");
    });
    http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200,
                {{"object", "list"},
                 {"data", ojson::array({{{"id", options.model_name},
                                         {"object", "model"},
                                         {"created", 0},
                                         {"owned_by", "tessera"}}})}});
    });
    http.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      complete(req, res, Endpoint::Chat);
    });
    http.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      complete(req, res, Endpoint::Completion);
    });
  }

  // Checks made on the headers alone, before any of the body is read.
  bool admit(const httplib::Request& req, httplib::Response& res) {
    if (!options.api_key.empty() && req.path.rfind("/v1/", 0) == 0) {
      const std::string auth = req.get_header_value("Authorization");
      const std::string want = "Bearer " + options.api_key;
      if (!same_secret(auth, want)) {
        send_error(res, ApiError(401, auth.empty() ? "missing API key (Authorization: Bearer ...)" : "invalid API key",
                                 "invalid_request_error", "", "invalid_api_key"));
        return false;
      }
    }
    if (req.method == "POST") {
      if (!req.has_header("Content-Length")) {
        send_error(res, ApiError(411, "a POST body needs a Content-Length header", "invalid_request_error", "",
                                 "length_required"));
        return false;
      }
      const std::string length = req.get_header_value("Content-Length");
      char* end = nullptr;
      const unsigned long long n = std::strtoull(length.c_str(), &end, 10);
      if (length.empty() || *end != '\0') {
        send_error(res, bad_request("Content-Length is not a number", "", "invalid_header"));
        return false;
      }
      if (n > options.max_body_bytes) {
        send_error(res, ApiError(413,
                                 fmt::format("request body of {} bytes is over this server's limit of {} bytes", n,
                                             options.max_body_bytes),
                                 "invalid_request_error", "", "request_too_large"));
        return false;
      }
    }
    return true;
  }

  void complete(const httplib::Request& req, httplib::Response& res, Endpoint endpoint) {
    const json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) throw bad_request("the request body is not valid JSON", "", "invalid_json");
    CompletionRequest c = parse_completion_request(body, endpoint, options.max_tokens_cap);
    if (!c.model.empty() && c.model != options.model_name)
      throw ApiError(404, fmt::format("model '{}' does not exist; this server serves '{}'", c.model, options.model_name),
                     "invalid_request_error", "model", "model_not_found");

    if (c.request.settings.speculative == "draft" || c.request.settings.speculative == "lookup+draft") {
      if (options.draft_model.empty())
        throw bad_request("this server has no draft model (start it with --draft PATH)", "speculative");
      c.request.settings.speculative += ":" + options.draft_model;
    }
    // Tools and reasoning: the reply is read back in the model's style.
    engine::ChatReplyFormat format;
    if (endpoint == Endpoint::Chat) format = engine::prepare_chat_reply(engine().model(), c.request, c.tools, c.split_reasoning);
    auto channel = std::make_shared<engine::GenerationChannel>();
    engine::GenerationChannel::attach(channel, c.request);
    channel->set_future(engine().submit(std::move(c.request)));  // QueueFull, Error: the exception handler
    const ResponseHeader header = new_response_header(endpoint, options.model_name);

    // The status line goes out before the first token, so wait until the
    // prompt has been accepted (or refused: then a JSON error).
    ClientConnection client(req.remote_addr, req.remote_port, req.local_addr, req.local_port);
    if (!channel->wait_started([&client] { return client.gone(); })) {
      engine().drop_cancelled();  // if the client left while queued: its place goes to the next
      // Refused, or cancelled before it started: either way it is over (the
      // result can be taken only once, so no response below may wait on it).
      ApiError error(503, "the request was cancelled before it started", "server_error", "", "cancelled");
      try {
        channel->result();
      } catch (...) {
        error = request_error(std::current_exception());
      }
      send_error(res, error);
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    if (!c.stream) {
      // One JSON object, sent chunked: until it is ready a space goes out
      // every second (leading whitespace is valid JSON), and a write that
      // fails means the client has gone, which cancels its generation. A
      // failure after the start (rare: the prompt was checked) becomes the
      // body's error object under status 200.
      res.set_chunked_content_provider(
          "application/json",
          [channel, header, format](size_t, httplib::DataSink& sink) {
            while (!channel->wait_finished_for(kHeartbeat)) {
              if (!sink.write(" ", 1)) {
                channel->cancel();
                return false;
              }
            }
            ojson body;
            try {
              const engine::Result r = channel->result();
              body = format.parses() ? chat_reply_response(header, r, format.parse(r.generation.text, header.id))
                                     : full_response(header, r);
            } catch (...) {
              body = request_error(std::current_exception()).body();
            }
            const std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
            if (!sink.write(text.data(), text.size())) return false;
            sink.done();
            return true;
          },
          [channel](bool) { channel->cancel(); });
      return;
    }
    res.set_header("X-Accel-Buffering", "no");
    const bool include_usage = c.include_usage;
    res.set_chunked_content_provider(
        "text/event-stream",
        [channel, header, include_usage, format](size_t, httplib::DataSink& sink) {
          auto send = [&](const std::string& bytes) { return sink.write(bytes.data(), bytes.size()); };
          bool first = true;
          std::optional<ChatReplyStream> reply;
          if (format.parses()) reply.emplace(format.stream(header.id));
          // Sends text (or, with tools, the deltas it completes); false when the client is gone.
          auto send_deltas = [&](const std::vector<ToolReplyDelta>& deltas) {
            for (const ToolReplyDelta& d : deltas) {
              if (!send(sse_event(reply_delta_chunk(header, d, first)))) return false;
              first = false;
            }
            return true;
          };
          while (std::optional<std::string> text = channel->next_text()) {
            const bool sent = reply ? send_deltas(reply->push(*text)) : send(sse_event(text_chunk(header, *text, first)));
            if (!sent) {
              channel->cancel();  // the client is gone: stop generating for it
              return false;
            }
            if (!reply) first = false;
          }
          try {
            const engine::Result r = channel->result();
            if (reply && !send_deltas(reply->finish())) return false;
            if (!send(sse_event(reply ? reply_final_chunk(header, r, reply->calls()) : final_chunk(header, r)))) return false;
            if (include_usage && !send(sse_event(usage_chunk(header, r)))) return false;
          } catch (...) {
            send(sse_event(request_error(std::current_exception()).body()));
          }
          send("data: [DONE]\n\n");
          sink.done();
          return true;
        },
        [channel](bool) { channel->cancel(); });
  }
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

void Server::attach(engine::Engine& engine) {
  engine.set_observer(&impl_->metrics);
  impl_->attached = &engine;
}

Server::~Server() = default;

int Server::bind() {
  ServerOptions& o = impl_->options;
  if (o.port == 0) {
    o.port = impl_->http.bind_to_any_port(o.host);
    if (o.port < 0) fail(o.host, "port", "cannot bind any port");
  } else if (!impl_->http.bind_to_port(o.host, o.port)) {
    fail(fmt::format("{}:{}", o.host, o.port), "port", "cannot bind (in use, or not an address of this machine?)");
  }
  impl_->bound = true;
  return o.port;
}

void Server::listen() {
  if (!impl_->bound) bind();
  {
    std::lock_guard lock(impl_->stop_mutex);
    if (impl_->stop_requested) return;
    impl_->listening = true;
  }
  impl_->http.listen_after_bind();
  impl_->listen_returned = true;
}

void Server::stop() {
  {
    std::lock_guard lock(impl_->stop_mutex);
    impl_->stop_requested = true;
    if (!impl_->listening) return;  // listen() will return at once
  }
  // httplib's stop() does nothing until its loop runs: wait for it to start.
  while (!impl_->http.is_running() && !impl_->listen_returned) std::this_thread::yield();
  impl_->http.stop();
}

}  // namespace tessera::server
