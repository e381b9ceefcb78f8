#include "server/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <vector>

namespace tessera::server {

namespace {

using prometheus::Histogram;

// Seconds: from a fraction of a decode step to minutes.
const Histogram::BucketBoundaries kLatencyBuckets = {0.005, 0.01, 0.02, 0.04, 0.08, 0.15, 0.3, 0.6,
                                                     1.2,   2.5,  5,    10,   20,   40,   80,  160};
const Histogram::BucketBoundaries kTokenGapBuckets = {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08,
                                                      0.15,  0.3,    0.6,   1.2,  2.5,  5};

prometheus::Counter& counter(prometheus::Registry& r, const std::string& name, const std::string& help,
                             const std::map<std::string, std::string>& labels = {}) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r).Add(labels);
}

prometheus::Gauge& gauge(prometheus::Registry& r, const std::string& name, const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

Histogram& histogram(prometheus::Registry& r, const std::string& name, const std::string& help,
                     const Histogram::BucketBoundaries& buckets) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r).Add({}, buckets);
}

}  // namespace

struct Metrics::Families {
  explicit Families(prometheus::Registry& r)
      : submitted(counter(r, "tessera_requests_submitted_total", "Requests accepted into the queue")),
        refused(counter(r, "tessera_requests_refused_total", "Requests refused because the queue was full (503)")),
        ended_family(prometheus::BuildCounter()
                         .Name("tessera_requests_ended_total")
                         .Help("Requests that ended, by status: finished, cancelled (client gone or stopped), "
                               "failed (an error); submitted = the sum once idle")
                         .Register(r)),
        finished_family(prometheus::BuildCounter()
                            .Name("tessera_requests_finished_total")
                            .Help("Finished requests by finish reason: eos, stop, length, context")
                            .Register(r)),
        prompt_tokens(counter(r, "tessera_prompt_tokens_total", "Prompt tokens of ended requests")),
        reused_tokens(counter(r, "tessera_prompt_tokens_reused_total",
                              "Of them, tokens whose state came from a slot or the prefix cache (not prefilled)")),
        generation_tokens(counter(r, "tessera_generation_tokens_total",
                                  "Generated tokens of ended requests (usage.completion_tokens)")),
        drafted(counter(r, "tessera_speculative_draft_tokens_total", "Drafted tokens verified")),
        accepted(counter(r, "tessera_speculative_accepted_tokens_total", "Of them, accepted")),
        ttft(histogram(r, "tessera_time_to_first_token_seconds", "Submission to the first generated token",
                       kLatencyBuckets)),
        token_gap(histogram(r, "tessera_inter_token_latency_seconds",
                            "Between a request's generated tokens (a step of several: its time shared)",
                            kTokenGapBuckets)),
        duration(histogram(r, "tessera_request_duration_seconds", "Submission to the end, every status",
                           kLatencyBuckets)),
        queue_time(histogram(r, "tessera_request_queue_seconds", "Submission to admission on a slot (ended requests)",
                             kLatencyBuckets)),
        ready(gauge(r, "tessera_ready", "1 once the model is loaded and requests are served, 0 while loading")),
        waiting(gauge(r, "tessera_requests_waiting", "Requests in the queue")),
        running(gauge(r, "tessera_requests_running", "Requests admitted on a slot and not yet ended")),
        slots(gauge(r, "tessera_slots", "Session slots (requests that can run at once)")),
        kv_used(gauge(r, "tessera_kv_cache_used_bytes", "Bytes the slots' sequence states take at their lengths")),
        kv_capacity(gauge(r, "tessera_kv_cache_capacity_bytes", "The same at every slot's full context")),
        kv_ratio(gauge(r, "tessera_kv_cache_usage_ratio", "used / capacity, 0..1")),
        prefix_used(gauge(r, "tessera_prefix_cache_used_bytes", "Bytes of states the prefix cache holds")),
        prefix_capacity(gauge(r, "tessera_prefix_cache_capacity_bytes", "The prefix cache's budget (0: off)")),
        prefix_entries(gauge(r, "tessera_prefix_cache_entries", "States the prefix cache holds")) {
    for (const char* status : {"finished", "cancelled", "failed"}) ended[status] = &ended_family.Add({{"status", status}});
    for (const char* reason : {"eos", "stop", "length", "context"})
      finished[reason] = &finished_family.Add({{"reason", reason}});
  }
  prometheus::Counter &submitted, &refused;
  prometheus::Family<prometheus::Counter>&ended_family, &finished_family;
  std::map<std::string, prometheus::Counter*> ended, finished;
  prometheus::Counter &prompt_tokens, &reused_tokens, &generation_tokens, &drafted, &accepted;
  Histogram &ttft, &token_gap, &duration, &queue_time;
  prometheus::Gauge &ready, &waiting, &running, &slots, &kv_used, &kv_capacity, &kv_ratio, &prefix_used,
      &prefix_capacity, &prefix_entries;
};

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()), m_(std::make_unique<Families>(*registry_)) {}

Metrics::~Metrics() = default;

std::string Metrics::scrape(const engine::Engine* engine) {
  m_->ready.Set(engine ? 1 : 0);
  if (engine) {
    m_->waiting.Set(static_cast<double>(engine->queued()));
    m_->running.Set(static_cast<double>(engine->running()));
    m_->slots.Set(engine->options().slots);
    const auto [kv_used, kv_capacity] = engine->kv_usage();
    m_->kv_used.Set(static_cast<double>(kv_used));
    m_->kv_capacity.Set(static_cast<double>(kv_capacity));
    m_->kv_ratio.Set(kv_capacity > 0 ? static_cast<double>(kv_used) / static_cast<double>(kv_capacity) : 0);
    const auto [entries, bytes] = engine->prefix_cache_usage();
    m_->prefix_used.Set(static_cast<double>(bytes));
    m_->prefix_capacity.Set(static_cast<double>(engine->options().prefix_cache_bytes));
    m_->prefix_entries.Set(static_cast<double>(entries));
  }
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

void Metrics::submitted() { m_->submitted.Increment(); }

void Metrics::refused() { m_->refused.Increment(); }

void Metrics::first_token(double seconds) { m_->ttft.Observe(seconds); }

void Metrics::more_tokens(int64_t tokens, double seconds) {
  for (int64_t i = 0; i < tokens; ++i) m_->token_gap.Observe(seconds / static_cast<double>(tokens));
}

void Metrics::ended(const engine::Result* result, double seconds) {
  m_->duration.Observe(seconds);
  if (!result) {
    m_->ended.at("failed")->Increment();
    return;
  }
  const std::string& reason = result->generation.finish_reason;
  const auto finished = m_->finished.find(reason);
  m_->ended.at(finished != m_->finished.end() ? "finished" : "cancelled")->Increment();
  if (finished != m_->finished.end()) finished->second->Increment();
  m_->queue_time.Observe(result->queue_ms / 1000.0);
  m_->prompt_tokens.Increment(static_cast<double>(result->prompt_tokens));
  m_->reused_tokens.Increment(static_cast<double>(result->reused_tokens));
  m_->generation_tokens.Increment(static_cast<double>(result->generation.ids.size()));
  m_->drafted.Increment(static_cast<double>(result->generation.speculative.drafted));
  m_->accepted.Increment(static_cast<double>(result->generation.speculative.accepted));
}

}  // namespace tessera::server
