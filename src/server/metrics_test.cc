#include "server/metrics.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/request.h"

namespace tessera::server {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

engine::Result result(const char* reason, int64_t prompt, int64_t reused, size_t generated) {
  engine::Result r;
  r.generation.finish_reason = reason;
  r.prompt_tokens = prompt;
  r.reused_tokens = reused;
  r.generation.ids.assign(generated, 7);
  r.queue_ms = 20;
  return r;
}

// Every ending is counted once under its status, tokens add up, and the
// histograms count what they observed; before an engine is attached the
// server says it is not ready.
TEST(Metrics, CountersFollowTheRequestsEvents) {
  Metrics m;
  for (int i = 0; i < 4; ++i) m.submitted();
  m.refused();
  m.first_token(0.05);
  m.more_tokens(3, 0.03);
  const engine::Result eos = result("eos", 10, 4, 5), length = result("length", 6, 0, 8),
                       cancelled = result("cancelled", 3, 0, 1);
  m.ended(&eos, 0.5);
  m.ended(&length, 0.7);
  m.ended(&cancelled, 0.2);
  m.ended(nullptr, 0.1);
  const std::string text = m.scrape(nullptr);
  EXPECT_TRUE(has_line(text, "tessera_ready 0")) << text;
  EXPECT_TRUE(has_line(text, "tessera_requests_submitted_total 4")) << text;
  EXPECT_TRUE(has_line(text, "tessera_requests_refused_total 1")) << text;
  EXPECT_TRUE(has_line(text, "tessera_requests_ended_total{status=\"finished\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "tessera_requests_ended_total{status=\"cancelled\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "tessera_requests_ended_total{status=\"failed\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "tessera_requests_finished_total{reason=\"eos\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "tessera_requests_finished_total{reason=\"length\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "tessera_prompt_tokens_total 19")) << text;
  EXPECT_TRUE(has_line(text, "tessera_prompt_tokens_reused_total 4")) << text;
  EXPECT_TRUE(has_line(text, "tessera_generation_tokens_total 14")) << text;
  EXPECT_TRUE(has_line(text, "tessera_time_to_first_token_seconds_count 1")) << text;
  EXPECT_TRUE(has_line(text, "tessera_inter_token_latency_seconds_count 3")) << text;
  EXPECT_TRUE(has_line(text, "tessera_inter_token_latency_seconds_bucket{le=\"0.01\"} 3")) << text;
  EXPECT_TRUE(has_line(text, "tessera_request_duration_seconds_count 4")) << text;
  EXPECT_TRUE(has_line(text, "tessera_request_queue_seconds_count 3")) << text;
  EXPECT_NE(text.find("# TYPE tessera_time_to_first_token_seconds histogram"), std::string::npos) << text;
}

}  // namespace
}  // namespace tessera::server
