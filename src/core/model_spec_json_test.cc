#include "core/model_spec_json.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace tessera {
namespace {

ModelSpec gemma_like() {
  ModelSpec s;
  s.arch = "gemma3";
  s.source_architecture = "Gemma3ForCausalLM";
  s.vocab_size = 1000;
  s.hidden_size = 64;
  s.intermediate_size = 128;
  s.num_layers = 3;
  s.num_heads = 4;
  s.num_kv_heads = 1;
  s.head_dim = 16;
  s.context_length = 2048;
  s.norm_eps = 1e-6;
  s.norm_weight_plus_one = s.qk_norm = s.scale_embeddings = s.tie_word_embeddings = true;
  s.activation = Activation::GeluTanh;
  s.rope.theta = 1e6;
  s.rope.scaling.type = "yarn";
  s.rope.scaling.factor = 4;
  s.rope.scaling.attention_factor = 1.25;
  s.rope_local = RopeSpec{};
  s.layer_types = {LayerKind::SlidingAttention, LayerKind::SlidingAttention, LayerKind::FullAttention};
  s.sliding_window = 512;
  s.final_logit_softcap = 30;
  s.query_pre_attn_scalar = 256;
  s.bos_token_id = 2;
  s.eos_token_ids = {1, 106};
  return s;
}

TEST(ModelSpecJson, RoundTripsEveryField) {
  const ModelSpec s = gemma_like();
  const nlohmann::json j = model_spec_to_json(s);
  const ModelSpec back = model_spec_from_json(j, "manifest.json");
  EXPECT_EQ(model_spec_to_json(back), j);
  EXPECT_EQ(back.rope.scaling.attention_factor, 1.25);
  ASSERT_TRUE(back.rope_local.has_value());
  EXPECT_EQ(back.layer_types, s.layer_types);
}

TEST(ModelSpecJson, MissingOrMistypedFieldIsNamed) {
  nlohmann::json j = model_spec_to_json(gemma_like());
  j.erase("head_dim");
  try {
    model_spec_from_json(j, "m.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.subject(), "spec.head_dim");
  }
  j = model_spec_to_json(gemma_like());
  j["rope"]["scaling"]["factor"] = "big";
  EXPECT_THROW(model_spec_from_json(j, "m.json"), Error);
  j = model_spec_to_json(gemma_like());
  j["layer_types"].push_back("full_attention");
  EXPECT_THROW(model_spec_from_json(j, "m.json"), Error);
  EXPECT_THROW(model_spec_from_json(nlohmann::json::array(), "m.json"), Error);
}

}  // namespace
}  // namespace tessera
