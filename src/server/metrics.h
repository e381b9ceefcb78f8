// `GET /metrics`: the server's Prometheus metrics in the text exposition
// format, kept with prometheus-cpp (Debian's prometheus-cpp-dev, its core
// library: registry, counters, gauges, histograms, text serializer). The
// counters and histograms follow every request through the engine's
// observer (engine/engine_observer.h); the gauges are read from the engine
// when scraped. Names, and which of them a router reads, are listed in
// README.md ("Health and metrics for load balancers").
#pragma once

#include <memory>
#include <string>

#include "engine/engine.h"
#include "engine/engine_observer.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
}  // namespace prometheus

namespace tessera::server {

class Metrics final : public engine::EngineObserver {
 public:
  Metrics();
  ~Metrics() override;
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Every metric as text, the gauges read from `engine` now (null: the model
  // is still loading, and tessera_ready is 0).
  std::string scrape(const engine::Engine* engine);

  void submitted() override;
  void refused() override;
  void first_token(double seconds) override;
  void more_tokens(int64_t tokens, double seconds) override;
  void ended(const engine::Result* result, double seconds) override;

 private:
  struct Families;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> m_;
};

}  // namespace tessera::server
