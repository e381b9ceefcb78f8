// The hand-over between the engine's scheduler thread, which generates, and
// the thread that consumes one request's text (an HTTP response, a Python
// iterator). The engine side only appends text to a queue and never blocks
// on the consumer, so a slow or stalled reader cannot hold up anyone else's
// generation; the consumer drains the queue at its own pace and cancels the
// generation when it gives up (a failed write, a dropped iterator) — at the
// next token, not at the end.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/engine.h"

namespace tessera::engine {

class GenerationChannel {
 public:
  // Sets the request's on_text / on_started / cancel to feed this channel.
  // The channel must be held by a shared_ptr (the callbacks keep it alive).
  static void attach(const std::shared_ptr<GenerationChannel>& channel, Request& request);
  void set_future(std::future<Result> result);

  // Blocks until the request has started generating (true) or finished
  // without starting (false: cancelled while queued, or failed). While it
  // waits, `client_gone` (optional) is asked every poll; once it says true
  // the request is cancelled (Engine::drop_cancelled then takes it out of
  // the queue at once).
  bool wait_started(const std::function<bool()>& client_gone = {});
  // Blocks until there is text (returned) or the request has finished (nullopt).
  std::optional<std::string> next_text();
  // Waits up to `timeout` for the request to finish; true if it has (the
  // text it produced is discarded: for consumers that want only the result).
  bool wait_finished_for(std::chrono::milliseconds timeout);
  // The result once finished; rethrows the request's error.
  Result result();
  void cancel() { cancel_->store(true); }

 private:
  bool finished_locked();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::string> pieces_;
  bool started_ = false;
  std::future<Result> future_;
  std::shared_ptr<std::atomic<bool>> cancel_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace tessera::engine
