#include "model/architectures.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "model/builders.h"

namespace tessera {
namespace {

using model::ArchitectureUnit;

TEST(Architectures, EveryUnitIsCompleteAndNamedOnce) {
  std::set<std::string> names, hf_types, gguf_names;
  for (const ArchitectureUnit* u : model::architectures()) {
    SCOPED_TRACE(u->name);
    EXPECT_TRUE(names.insert(u->name).second);
    EXPECT_NE(u->build_layer, nullptr);
    EXPECT_FALSE(u->layer_kinds.empty());
    EXPECT_TRUE(u->read_hf_config != nullptr || u->read_gguf != nullptr);
    if (u->read_hf_config) {
      EXPECT_TRUE(hf_types.insert(u->hf_model_type).second);
    }
    if (u->hf_wrapper) {
      EXPECT_TRUE(hf_types.insert(u->hf_wrapper->model_type).second);
    }
    if (u->read_gguf) {
      EXPECT_TRUE(gguf_names.insert(u->gguf_architecture).second);
    }
    EXPECT_EQ(model::find_architecture(u->name), u);
  }
  EXPECT_GE(names.size(), 8u);
  EXPECT_EQ(model::find_architecture("gpt2"), nullptr);
}

TEST(Architectures, UnknownNamesAreErrorsListingTheKnownOnes) {
  ModelSpec s;
  s.arch = "gpt2";
  s.source_architecture = "GPT2LMHeadModel";
  try {
    model::build_programs(s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'gpt2' models cannot be run"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("olmo2"), std::string::npos) << e.what();
  }
  try {
    spec_from_hf_config(nlohmann::json{{"model_type", "gpt2"}}, "config.json");
    FAIL();
  } catch (const Error& e) {
    for (const char* type : {"llama", "gemma3_text", "gemma3", "qwen3_5", "olmo2"})
      EXPECT_NE(std::string(e.what()).find(type), std::string::npos) << type << ": " << e.what();
  }
}

TEST(Architectures, HfConfigTypesReachTheirUnit) {
  for (const auto& [type, arch] : std::map<std::string, std::string>{{"llama", "llama"},
                                                                     {"qwen2", "qwen2"},
                                                                     {"qwen3_5_text", "qwen3_5"},
                                                                     {"qwen3_5", "qwen3_5"},
                                                                     {"gemma3", "gemma3"},
                                                                     {"gemma4_text", "gemma4"},
                                                                     {"lfm2", "lfm2"},
                                                                     {"olmo2", "olmo2"}}) {
    nlohmann::json config = {{"model_type", type}, {"num_hidden_layers", 2}};
    EXPECT_EQ(spec_from_hf_config(config, "config.json").arch, arch) << type;
  }
}

TEST(Architectures, GgufTensorNamesComeFromTheUnitThenTheSharedTable) {
  auto name = [](const char* arch, const std::string& hf) {
    return gguf_tensor_name(model::find_architecture(arch)->gguf_tensors, hf);
  };
  EXPECT_EQ(name("llama", "model.layers.3.self_attn.q_proj.weight"), "blk.3.attn_q.weight");
  EXPECT_EQ(name("llama", "model.layers.0.post_attention_layernorm.weight"), "blk.0.ffn_norm.weight");
  EXPECT_EQ(name("gemma3", "model.layers.0.post_attention_layernorm.weight"), "blk.0.post_attention_norm.weight");
  EXPECT_EQ(name("olmo2", "model.layers.1.post_attention_layernorm.weight"), "blk.1.post_attention_norm.weight");
  EXPECT_EQ(name("olmo2", "model.layers.1.post_feedforward_layernorm.weight"), "blk.1.post_ffw_norm.weight");
  EXPECT_EQ(name("lfm2", "model.embedding_norm.weight"), "token_embd_norm.weight");
  EXPECT_EQ(name("lfm2", "model.layers.2.conv.in_proj.weight"), "blk.2.shortconv.in_proj.weight");
  EXPECT_EQ(name("qwen3_5", "model.layers.0.linear_attn.A_log"), "blk.0.ssm_a");
  EXPECT_EQ(name("gemma4", "model.embed_tokens_per_layer.weight"), "per_layer_token_embd.weight");
  EXPECT_EQ(name("llama", "lm_head.weight"), "output.weight");
  EXPECT_EQ(name("llama", "model.layers.0.no_such.weight"), "");
}

TEST(Architectures, LayerKindsAUnitDoesNotBuildAreRefused) {
  ModelSpec s = spec_from_hf_config(nlohmann::json{{"model_type", "llama"}, {"num_hidden_layers", 2}}, "c.json");
  s.layer_types[1] = LayerKind::ShortConv;
  s.conv_kernel = 3;
  EXPECT_THROW(model::build_programs(s), Error);
  s.arch = "lfm2";
  EXPECT_NO_THROW(model::build_programs(s, {.chunks = 1, .prefill_sizes = {8}}));
}

}  // namespace
}  // namespace tessera
