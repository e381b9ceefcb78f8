#include "engine/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "core/temp_dir_for_tests.h"
#include "generation/chat.h"
#include "sources/tiny_chat_model_for_tests.h"

namespace tessera::engine {
namespace {

using nlohmann::ordered_json;

struct TinyModel {
  TempDir dir{"engine_test"};
  explicit TinyModel(int sliding_window = 0) { testing::write_tiny_chat_model(dir.path(), 1, sliding_window); }
  std::unique_ptr<Model> load() const { return Model::load(dir.path().string()); }
};

// What one fresh session generates for `ids`: the reference every engine
// result must equal, whatever KV the engine reused.
GenerateResult fresh(const Model& model, const std::vector<int32_t>& ids, const GenerationSettings& s) {
  Session session(model);
  return generate(session, ids, make_generate_options(s));
}

Request text_request(std::string prompt, int64_t max_tokens = 12) {
  Request r;
  r.prompt = std::move(prompt);
  r.settings.max_tokens = max_tokens;
  r.settings.ignore_eos = true;
  return r;
}

TEST(Engine, GeneratesWhatAFreshSessionGenerates) {
  TinyModel tiny;
  Engine engine(tiny.load(), EngineOptions{});
  const Result r = engine.run(text_request("hello there"));
  const std::vector<int32_t> ids = engine.model().require_tokenizer().encode("hello there", true);
  GenerationSettings s;
  s.max_tokens = 12;
  s.ignore_eos = true;
  const GenerateResult want = fresh(engine.model(), ids, s);
  EXPECT_EQ(r.generation.ids, want.ids);
  EXPECT_EQ(r.generation.text, want.text);
  EXPECT_EQ(r.generation.finish_reason, "length");
  EXPECT_EQ(r.prompt_tokens, static_cast<int64_t>(ids.size()));
  EXPECT_EQ(r.reused_tokens, 0);
  EXPECT_EQ(r.reuse_note, "");
}

TEST(Engine, SecondTurnReusesTheFirstTurnsTokensAndGeneratesTheSame) {
  TinyModel tiny;
  Engine engine(tiny.load(), EngineOptions{});
  Request first;
  first.messages = ordered_json::array({{{"role", "user"}, {"content", "hi"}}});
  first.settings.max_tokens = 8;
  first.settings.ignore_eos = true;
  const Result r1 = engine.run(first);
  // Turn two extends turn one's tokens (prompt + reply) by a new user message.
  std::vector<int32_t> ids = chat_prompt_ids(engine.model(), *first.messages);
  ids.insert(ids.end(), r1.generation.ids.begin(), r1.generation.ids.end());
  const std::vector<int32_t> more = engine.model().require_tokenizer().encode("\nand more", false);
  ids.insert(ids.end(), more.begin(), more.end());
  Request second;
  second.prompt_ids = ids;
  second.settings = first.settings;
  const Result r2 = engine.run(second);
  // The slot holds turn one's prompt and every generated token but the last.
  EXPECT_EQ(r2.reused_tokens, r1.prompt_tokens + static_cast<int64_t>(r1.generation.ids.size()) - 1);
  EXPECT_EQ(r2.generation.prompt_tokens, r2.prompt_tokens - r2.reused_tokens);
  EXPECT_EQ(r2.generation.ids, fresh(engine.model(), ids, second.settings).ids);
}

TEST(Engine, ConversationsKeepTheirOwnSlots) {
  TinyModel tiny;
  EngineOptions o;
  o.slots = 2;
  Engine engine(tiny.load(), o);
  const Result a1 = engine.run(text_request("conversation A, a long enough prompt"));
  const Result b1 = engine.run(text_request("something else entirely"));
  EXPECT_NE(a1.slot, b1.slot);
  const Result a2 = engine.run(text_request("conversation A, a long enough prompt and then"));
  EXPECT_EQ(a2.slot, a1.slot);
  EXPECT_GT(a2.reused_tokens, 20);
}

TEST(Engine, SlidingWindowThatCannotBeCutSaysSoInsteadOfReusing) {
  TinyModel tiny(/*sliding_window=*/4);
  Engine engine(tiny.load(), EngineOptions{});
  engine.run(text_request("a prompt long enough to wrap the ring", 4));
  // Shares 12 tokens with the slot, but the ring of 4 no longer holds them.
  const Result r = engine.run(text_request("a prompt lonXXXXXXXXXXXXXXXXX", 4));
  EXPECT_EQ(r.reused_tokens, 0);
  EXPECT_NE(r.reuse_note.find("sliding-window"), std::string::npos) << r.reuse_note;
  GenerationSettings s = text_request("", 4).settings;
  EXPECT_EQ(r.generation.ids,
            fresh(engine.model(), engine.model().require_tokenizer().encode("a prompt lonXXXXXXXXXXXXXXXXX"), s).ids);
  EXPECT_EQ(r.generation.prompt_tokens, r.prompt_tokens);
}

TEST(Engine, CancelStopsARunningRequestAndSkipsAQueuedOne) {
  TinyModel tiny;
  Engine engine(tiny.load(), EngineOptions{});
  Request r = text_request("count", 200);
  int pieces = 0;
  r.on_text = [&](std::string_view) { return ++pieces < 3; };
  EXPECT_EQ(engine.run(std::move(r)).generation.finish_reason, "cancelled");
  Request q = text_request("count", 200);
  q.cancel = std::make_shared<std::atomic<bool>>(true);
  const Result skipped = engine.run(std::move(q));
  EXPECT_EQ(skipped.generation.finish_reason, "cancelled");
  EXPECT_TRUE(skipped.generation.ids.empty());
}

TEST(Engine, RefusesBadRequestsWithErrors) {
  TinyModel tiny;
  EngineOptions o;
  o.context_length = 64;
  Engine engine(tiny.load(), o);
  Request none;
  EXPECT_THROW(engine.submit(none), Error);
  Request bad_settings = text_request("x");
  bad_settings.settings.max_tokens = 0;
  EXPECT_THROW(engine.submit(bad_settings), Error);
  Request outside;
  outside.prompt_ids = {1, testing::kTinyChatVocab};
  EXPECT_THROW(engine.run(outside), Error);
  EXPECT_THROW(engine.run(text_request(std::string(100, 'x'))), Error);
  // The engine still serves after every refusal.
  EXPECT_EQ(engine.run(text_request("ok", 3)).generation.ids.size(), 3u);
}

TEST(Engine, QueueFullIsRefusedNotBlocked) {
  TinyModel tiny;
  EngineOptions o;
  o.queue_capacity = 1;
  Engine engine(tiny.load(), o);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> started;
  Request blocker = text_request("block", 2);
  blocker.on_started = [&] {
    started.set_value();
    released.wait();
  };
  auto running = engine.submit(std::move(blocker));
  started.get_future().wait();
  auto waiting = engine.submit(text_request("wait", 2));
  EXPECT_THROW(engine.submit(text_request("too many", 2)), QueueFull);
  release.set_value();
  EXPECT_EQ(running.get().generation.ids.size(), 2u);
  EXPECT_EQ(waiting.get().generation.ids.size(), 2u);
}

}  // namespace
}  // namespace tessera::engine

namespace tessera::engine {
namespace {

ordered_json chat(const std::string& system, const std::string& user) {
  return ordered_json::array({{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", user}}});
}

Request chat_request(const ordered_json& messages, int64_t max_tokens = 6) {
  Request r;
  r.messages = messages;
  r.settings.max_tokens = max_tokens;
  r.settings.ignore_eos = true;
  return r;
}

const std::string kSystem = "You are a careful assistant. Answer briefly and check every number twice.";

// The tokens every conversation with kSystem starts with, whatever its first
// user message says: the system turn and the user turn's header, as the tiny
// model's ChatML template renders them.
std::vector<int32_t> system_turn_ids(const Model& model) {
  return model.require_tokenizer().encode("<|im_start|>system\n" + kSystem + "<|im_end|>\n<|im_start|>user\n",
                                          false);
}

TEST(EnginePrefixCache, ANewConversationStartsFromTheSharedSystemPromptAndLeavesTheOtherAlone) {
  TinyModel tiny;
  EngineOptions o;
  o.slots = 2;
  Engine engine(tiny.load(), o);
  const Result a = engine.run(chat_request(chat(kSystem, "first question")));
  const Result b = engine.run(chat_request(chat(kSystem, "another one")));
  const std::vector<int32_t> system_ids = system_turn_ids(engine.model());
  EXPECT_NE(a.slot, b.slot);
  EXPECT_EQ(b.reused_from, "prefix cache");
  EXPECT_GE(b.reused_tokens, static_cast<int64_t>(system_ids.size()));
  EXPECT_EQ(b.reuse_note, "");
  const std::vector<int32_t> b_ids = chat_prompt_ids(engine.model(), chat(kSystem, "another one"));
  EXPECT_EQ(b.generation.ids, fresh(engine.model(), b_ids, chat_request(ordered_json()).settings).ids);
  // Conversation A's slot was left alone: its next turn continues it.
  ordered_json a2 = chat(kSystem, "first question");
  a2.push_back({{"role", "assistant"}, {"content", a.generation.text}});
  a2.push_back({{"role", "user"}, {"content", "and?"}});
  const Result a_next = engine.run(chat_request(a2));
  EXPECT_EQ(a_next.slot, a.slot);
  EXPECT_EQ(a_next.reused_from, "slot");
  EXPECT_GT(a_next.reused_tokens, a.prompt_tokens);
  // One entry: A's request cached the system turn and the user header, which
  // is all that A and B share, so B's divergence added nothing.
  EXPECT_EQ(engine.prefix_cache_usage().first, 1u);
}

TEST(EnginePrefixCache, ServesTheSystemPromptAfterItsSlotWasReused) {
  TinyModel tiny;
  Engine engine(tiny.load(), EngineOptions{});  // one slot
  engine.run(chat_request(chat(kSystem, "question one")));
  engine.run(text_request("an unrelated prompt that takes over the only slot"));
  const Result r = engine.run(chat_request(chat(kSystem, "question two")));
  EXPECT_EQ(r.reused_from, "prefix cache");
  EXPECT_GE(r.reused_tokens, 32);
  EXPECT_EQ(r.generation.ids, fresh(engine.model(), chat_prompt_ids(engine.model(), chat(kSystem, "question two")),
                                    chat_request(ordered_json()).settings)
                                  .ids);
}

TEST(EnginePrefixCache, SlidingWindowModelReusesTheSystemPromptCachedAtItsEnd) {
  // The ring of 4 (+ rollback margin) positions cannot be cut back to the
  // end of the system prompt once a conversation has gone past it, but the
  // state cached exactly there needs no cut.
  TinyModel tiny(/*sliding_window=*/4);
  Engine engine(tiny.load(), EngineOptions{});
  engine.run(chat_request(chat(kSystem, "a first question long enough to wrap the ring several times over")));
  const Result r = engine.run(chat_request(chat(kSystem, "second")));
  const int64_t system_tokens = static_cast<int64_t>(system_turn_ids(engine.model()).size());
  EXPECT_EQ(r.reused_from, "prefix cache");
  EXPECT_EQ(r.reused_tokens, system_tokens);
  EXPECT_EQ(r.generation.prompt_tokens, r.prompt_tokens - system_tokens);
  EXPECT_EQ(r.generation.ids, fresh(engine.model(), chat_prompt_ids(engine.model(), chat(kSystem, "second")),
                                    chat_request(ordered_json()).settings)
                                  .ids);
}

TEST(EnginePrefixCache, TheDiskTierServesTheSystemPromptToARestartedEngine) {
  TinyModel tiny(/*sliding_window=*/4);
  TempDir store{"engine_test_prefix_store"};
  EngineOptions o;
  o.prefix_cache_disk_bytes = 64ull << 20;
  o.prefix_cache_dir = store.path().string();
  {
    Engine first(tiny.load(), o);
    const Result r = first.run(chat_request(chat(kSystem, "a first question long enough to wrap the ring")));
    EXPECT_EQ(r.reused_tokens, 0);
  }  // the engine's end finishes the disk writes
  Engine second(tiny.load(), o);  // a new process, as far as memory goes
  const Result r = second.run(chat_request(chat(kSystem, "second")));
  const int64_t system_tokens = static_cast<int64_t>(system_turn_ids(second.model()).size());
  EXPECT_EQ(r.reused_from, "disk");
  EXPECT_EQ(r.reused_tokens, system_tokens);
  EXPECT_EQ(r.generation.prompt_tokens, r.prompt_tokens - system_tokens);
  EXPECT_EQ(r.generation.ids, fresh(second.model(), chat_prompt_ids(second.model(), chat(kSystem, "second")),
                                    chat_request(ordered_json()).settings)
                                  .ids);
  second.reset();  // forgets memory, keeps the files
  EXPECT_EQ(second.run(chat_request(chat(kSystem, "third"))).reused_from, "disk");
}

TEST(EnginePrefixCache, TheDiskTierNeedsTheMemoryTier) {
  TinyModel tiny;
  EngineOptions o;
  o.prefix_cache_bytes = 0;
  o.prefix_cache_disk_bytes = 1 << 20;
  EXPECT_THROW(Engine(tiny.load(), o), Error);
}

TEST(Engine, ALongPromptIsPrefilledBetweenTheRunningRequestsSteps) {
  // A generates; B arrives with a 600-token prompt. B's prefill goes in
  // chunks between A's decode steps, so A's stream keeps moving while B
  // prefills, and both get what they would get alone.
  TinyModel tiny;
  EngineOptions o;
  o.slots = 2;
  Engine engine(tiny.load(), o);
  std::atomic<int> a_pieces{0};
  std::promise<void> a_going;
  std::atomic<bool> a_signalled{false};
  Request a = text_request("the first request", 400);
  a.on_text = [&](std::string_view) {
    if (++a_pieces == 2 && !a_signalled.exchange(true)) a_going.set_value();
    return true;
  };
  std::future<Result> a_result = engine.submit(a);
  a_going.get_future().wait();
  std::atomic<int> at_start{-1}, at_first{-1};
  Request b = text_request(std::string(600, 'x'), 4);
  b.on_started = [&] { at_start = a_pieces.load(); };
  b.on_text = [&](std::string_view) {
    if (at_first < 0) at_first = a_pieces.load();
    return true;
  };
  const Result rb = engine.run(b);
  const Result ra = a_result.get();
  ASSERT_GE(at_start, 0);
  EXPECT_GE(at_first - at_start, 3) << "A's stream stood still while B prefilled";
  EXPECT_EQ(rb.prompt_tokens, rb.generation.prompt_tokens);
  GenerationSettings s;
  s.max_tokens = 4;
  s.ignore_eos = true;
  EXPECT_EQ(rb.generation.ids,
            fresh(engine.model(), engine.model().require_tokenizer().encode(std::string(600, 'x'), true), s).ids);
  s.max_tokens = 400;
  EXPECT_EQ(ra.generation.ids,
            fresh(engine.model(), engine.model().require_tokenizer().encode("the first request", true), s).ids);
  EXPECT_GT(rb.generation.ttft_ms, 0);
}

TEST(EnginePrefixCache, DisabledMeansSlotsOnly) {
  TinyModel tiny;
  EngineOptions o;
  o.prefix_cache_bytes = 0;
  Engine engine(tiny.load(), o);
  engine.run(chat_request(chat(kSystem, "question one")));
  engine.run(text_request("an unrelated prompt that takes over the only slot"));
  const Result r = engine.run(chat_request(chat(kSystem, "question two")));
  EXPECT_EQ(r.reused_tokens, 0);
  EXPECT_EQ(engine.prefix_cache_usage().first, 0u);
}

}  // namespace
}  // namespace tessera::engine
