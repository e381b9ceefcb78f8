#include "load/draft_models.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.h"
#include "core/temp_dir_for_tests.h"
#include "load/model_loader.h"
#include "generation/draft_controller.h"
#include "generation/generate.h"
#include "generation/lookup_then_model_drafter.h"
#include "generation/model_drafter.h"
#include "sources/tiny_chat_model_for_tests.h"

namespace tessera {
namespace {

struct ModelDrafterTest : ::testing::Test {
  TempDir dir{"model_drafter_test"};
  std::string target_dir, other_dir, sliding_dir;
  void SetUp() override {
    target_dir = (dir.path() / "target").string();
    other_dir = (dir.path() / "other").string();  // another random model of the same tokenizer
    sliding_dir = (dir.path() / "sliding").string();
    testing::write_tiny_chat_model(target_dir, 1);
    testing::write_tiny_chat_model(other_dir, 2);
    testing::write_tiny_chat_model(sliding_dir, 3, /*sliding_window=*/4);
    // Draft models load through the bundle cache (as `tessera run` does): keep it here.
    setenv("TESSERA_HOME", (dir.path() / "home").c_str(), 1);
  }
  void TearDown() override { unsetenv("TESSERA_HOME"); }
  // The target as `tessera run` loads it: its cached default bundle (the
  // same model a draft of the same path is).
  static std::unique_ptr<Model> target_of(const std::string& path) {
    return load_model_for_running(path, LoadOptions{}, /*reference=*/false, /*announce=*/false);
  }
  static GenerateResult run(const Model& model, const std::vector<int32_t>& prompt, const std::string& speculative,
                            float temperature = 0.0f) {
    GenerationSettings s;
    s.max_tokens = 40;
    s.ignore_eos = true;
    s.speculative = speculative;
    s.draft_max = 4;
    s.temperature = temperature;
    s.seed = 3;
    Session session(model, 256);
    GenerateOptions o = make_generate_options(s);
    load_draft_model(o, model);
    return generate(session, prompt, o);
  }
};

const std::vector<int32_t> kPrompt = {104, 101, 108, 108, 111, 32, 116, 104, 101, 114, 101};

TEST_F(ModelDrafterTest, ProposesTheDraftModelsGreedyContinuationAndFollowsRollbacks) {
  auto model = shared_draft_model(target_dir, *target_of(target_dir));
  ModelDrafter drafter(model, 256, /*size_ratio=*/0.25);
  std::vector<int32_t> draft;
  // Before it has run: every position of the catch-up and every step at a
  // quarter of the target's decode step.
  const DraftingCost before = drafter.predicted_cost(kPrompt, 0.010);
  EXPECT_DOUBLE_EQ(before.fixed, 11 * 0.0025);
  EXPECT_DOUBLE_EQ(before.per_token, 0.0025);
  drafter.propose(kPrompt, 5, draft);
  // After: only the positions the session lacks, at the measured costs.
  std::vector<int32_t> next = kPrompt;
  next.insert(next.end(), draft.begin(), draft.begin() + 3);
  const DraftingCost after = drafter.predicted_cost(next, 0.010);
  EXPECT_GT(after.per_token, 0);
  EXPECT_NE(after.per_token, 0.0025);
  EXPECT_DOUBLE_EQ(after.fixed, after.per_token);  // one position: the last draft kept, not yet run
  ASSERT_EQ(draft.size(), 5u);
  // The same as decoding the draft model greedily.
  Session s(*model, 256);
  s.forward(kPrompt);
  std::vector<int32_t> want{s.greedy_ids().back()};
  while (want.size() < 5) {
    s.forward(std::span<const int32_t>(&want.back(), 1));
    want.push_back(s.greedy_ids().back());
  }
  EXPECT_EQ(draft, want);
  const int64_t after_first = drafter.positions_run();
  // The target kept two drafts and chose another token: the drafter cuts its
  // rejected guesses and runs only the new tokens.
  std::vector<int32_t> context = kPrompt;
  context.insert(context.end(), {draft[0], draft[1], 65});
  drafter.propose(context, 3, draft);
  EXPECT_EQ(draft.size(), 3u);
  EXPECT_EQ(drafter.positions_run() - after_first, 1 + 2);  // the token 65, then two more guesses
}

// prepare() is the draft model's prefill of the prompt: the first proposal
// after it catches up on the one new token, priced as one step, and drafts
// what a drafter without it drafts.
TEST_F(ModelDrafterTest, PreparedDrafterCatchesUpOnOnlyTheNewToken) {
  auto model = shared_draft_model(target_dir, *target_of(target_dir));
  ModelDrafter prepared(model, 256, 0.25), cold(model, 256, 0.25);
  prepared.prepare(kPrompt);
  EXPECT_EQ(prepared.positions_run(), static_cast<int64_t>(kPrompt.size()));
  std::vector<int32_t> context = kPrompt;
  context.push_back(65);  // the target's first token
  const DraftingCost cost = prepared.predicted_cost(context, 0.010);
  EXPECT_DOUBLE_EQ(cost.fixed, cost.per_token);  // one position
  EXPECT_GT(cold.predicted_cost(context, 0.010).fixed, 10 * cost.per_token);  // the whole context
  std::vector<int32_t> a, b;
  prepared.propose(context, 4, a);
  cold.propose(context, 4, b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(prepared.positions_run(), static_cast<int64_t>(kPrompt.size()) + 1 + 3);
}

// Lookup first: a context whose last tokens occurred before gets prompt
// lookup's guess (the draft model does not run); one without gets the draft
// model's, as the draft model alone proposes it.
TEST_F(ModelDrafterTest, LookupThenModelTakesLookupsGuessWhereItHasOne) {
  auto model = shared_draft_model(target_dir, *target_of(target_dir));
  LookupThenModelDrafter both(std::make_unique<ModelDrafter>(model, 256, 0.25));
  ModelDrafter alone(model, 256, 0.25);
  const std::vector<int32_t> fresh = {104, 101, 108, 111, 32};  // "helo ": no token occurs twice
  std::vector<int32_t> got, want;
  both.propose(fresh, 4, got);
  alone.propose(fresh, 4, want);
  EXPECT_EQ(got, want);
  EXPECT_EQ(both.model_proposals(), 1);
  std::vector<int32_t> repeated = fresh;
  repeated.insert(repeated.end(), {104, 101});  // "he" again: lookup proposes what followed it
  both.propose(repeated, 4, got);
  EXPECT_EQ(got, (std::vector<int32_t>{108, 111, 32, 104}));
  EXPECT_EQ(both.lookup_proposals(), 1);
  EXPECT_EQ(both.model_proposals(), 1);
}

TEST_F(ModelDrafterTest, GreedyOutputIsPlainGreedyWhateverTheDraftModel) {
  const auto target = target_of(target_dir);
  const GenerateResult plain = run(*target, kPrompt, "off");
  for (const std::string& draft : {target_dir, other_dir}) {
    const GenerateResult spec = run(*target, kPrompt, "draft-all:" + draft);
    EXPECT_EQ(spec.ids, plain.ids) << draft;
    EXPECT_GT(spec.speculative.verify_calls, 5) << draft;
    // Lookup's proposals verified, the draft model's under the controller.
    EXPECT_EQ(run(*target, kPrompt, "lookup+draft:" + draft).ids, plain.ids) << draft;
  }
  // The target drafting for itself is accepted (nearly) always; an unrelated
  // random model far less.
  const GenerateResult self = run(*target, kPrompt, "draft-all:" + target_dir);
  EXPECT_GT(self.speculative.drafted, 0);
  EXPECT_GE(self.speculative.acceptance(), 0.9);
  // Under adaptive control a draft model as large as the target is never
  // verified: its drafting alone costs a decode step per token (predicted
  // from its size before it has run), more than any acceptance can repay.
  const GenerateResult adaptive = run(*target, kPrompt, "draft:" + target_dir);
  EXPECT_EQ(adaptive.ids, plain.ids);
  EXPECT_EQ(adaptive.speculative.verify_calls, 0);
}

TEST_F(ModelDrafterTest, SlidingWindowTargetAfterManyRollbacksAndSamplingMatchPlain) {
  const auto target = target_of(sliding_dir);
  const GenerateResult spec = run(*target, kPrompt, "draft-all:" + other_dir);
  EXPECT_EQ(spec.ids, run(*target, kPrompt, "off").ids);
  EXPECT_GT(spec.speculative.verify_calls, 5);
  // Sampling: the same seed gives a valid run (distribution tested in speculative_test.cc).
  const GenerateResult sampled = run(*target, kPrompt, "draft-all:" + other_dir, 0.8f);
  EXPECT_EQ(sampled.ids.size(), 40u);
}

// A verify call of a size the session has not run yet grows its workspaces
// first (Session::warm_for_as_decode); the controller keeps such cold calls
// out of its cost fit.
TEST_F(ModelDrafterTest, SessionsKnowWhichVerifySizesAreWarm) {
  const auto target = target_of(target_dir);
  Session s(*target, 256);
  s.forward(kPrompt);
  EXPECT_FALSE(s.warm_for_as_decode(3));
  s.forward_as_decode(std::vector<int32_t>{65, 66, 67}, 0, false);
  EXPECT_TRUE(s.warm_for_as_decode(3));
  EXPECT_TRUE(s.warm_for_as_decode(2));
  EXPECT_FALSE(s.warm_for_as_decode(4));
  s.forward(std::vector<int32_t>{68, 69, 70, 71});  // 4 rows, but only the last one's logits
  EXPECT_FALSE(s.warm_for_as_decode(4));
  s.prepare_as_decode(9);
  for (int64_t rows = 2; rows <= 9; ++rows) EXPECT_TRUE(s.warm_for_as_decode(rows)) << rows;
  EXPECT_FALSE(s.warm_for_as_decode(10));
  DraftController c;
  c.record_decode(0.050);
  c.record_decode(0.010);
  const double prior = c.verify_seconds(4);
  c.record_verify(4, 0, 1.0, 0, /*cold=*/true);
  EXPECT_DOUBLE_EQ(c.verify_seconds(4), prior);  // not in the fit
  EXPECT_NEAR(c.lost_seconds(), 1.0 - 0.010, 1e-12);  // but in the ledger
}

TEST_F(ModelDrafterTest, RefusesUnknownPathsAndBadModes) {
  const auto target = target_of(target_dir);
  EXPECT_THROW(run(*target, kPrompt, "draft:" + (dir.path() / "missing").string()), Error);
  EXPECT_THROW(run(*target, kPrompt, "draft:"), Error);
  EXPECT_THROW(run(*target, kPrompt, "draft"), Error);
}

TEST_F(ModelDrafterTest, TheRuntimeNeverLoadsADraftItself) {
  // The draft is loaded by the caller before the generation (load_draft_model)
  // and handed in; a generation given only its path is refused by name.
  auto model = target_of(target_dir);
  GenerationSettings s;
  s.max_tokens = 4;
  s.speculative = "draft:" + other_dir;
  Session session(*model, 64);
  GenerateOptions o = make_generate_options(s);
  try {
    generate(session, kPrompt, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not loaded"), std::string::npos) << e.what();
  }
  load_draft_model(o, *model);
  ASSERT_TRUE(o.speculative.draft_model);
  EXPECT_EQ(o.speculative.draft_model, shared_draft_model(other_dir, *model));  // loaded once, shared
  EXPECT_EQ(generate(session, kPrompt, o).ids.size(), 4u);
}

}  // namespace
}  // namespace tessera
