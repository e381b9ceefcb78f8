// What happens to an Engine's requests, as it happens: the hook metrics are
// built on (server/metrics.h). A request is accepted into the queue
// (submitted), then ends exactly once: with a Result (its finish reason
// says "eos", "stop", "length", "context" or "cancelled") or with an error
// (ended(nullptr, ...)). Between the two it may give a first token and then
// more. So once the engine is idle, submitted = the ended ones.
//
// The engine calls these with one of its locks held (the queue's or the
// scheduler's), so they must be quick and must not call back into the
// engine; Engine::set_observer waits for both locks, so after it returns no
// call to the previous observer is under way.
#pragma once

#include <cstdint>

namespace tessera::engine {

struct Result;

class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  // Accepted into the queue.
  virtual void submitted() {}
  // Refused because the queue was full (engine::QueueFull).
  virtual void refused() {}
  // Its first generated token, `seconds` after it was submitted.
  virtual void first_token(double seconds) {}
  // `tokens` more generated tokens (a decode step gives one, a speculative
  // step several), `seconds` after the previous token.
  virtual void more_tokens(int64_t tokens, double seconds) {}
  // The end: its Result, or null when it failed; `seconds` after it was
  // submitted.
  virtual void ended(const Result* result, double seconds) {}
};

}  // namespace tessera::engine
