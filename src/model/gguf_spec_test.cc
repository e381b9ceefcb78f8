#include "model/architectures.h"

#include <cmath>
#include <numbers>
#include <random>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/ggml_dequant.h"
#include "sources/gguf_writer_for_tests.h"

namespace tessera {
namespace {

using namespace tessera::testing;

GgufFile parse(const GgufBuilder& b) {
  return GgufFile::parse(MappedFile::from_bytes("spec.gguf", b.build().bytes));
}

ModelSpec spec_of(const GgufBuilder& b) { return spec_from_gguf(parse(b)); }

void expect_spec_error(const GgufBuilder& b, std::string_view subject, std::string_view problem) {
  try {
    spec_of(b);
    ADD_FAILURE() << "no error; expected " << subject << ": " << problem;
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "spec.gguf");
    EXPECT_NE(e.subject().find(subject), std::string::npos) << e.what();
    EXPECT_NE(e.problem().find(problem), std::string::npos) << e.what();
  }
}

std::vector<std::string> vocab(int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(fmt::format("t{}", i));
  return v;
}

// The metadata of a SmolLM2-135M-like llama model (the real file's keys and types).
GgufBuilder llama_like() {
  GgufBuilder b;
  b.kv("general.architecture", v_str("llama"))
      .kv("llama.block_count", v_u32(30))
      .kv("llama.context_length", v_u32(8192))
      .kv("llama.embedding_length", v_u32(576))
      .kv("llama.feed_forward_length", v_u32(1536))
      .kv("llama.attention.head_count", v_u32(9))
      .kv("llama.attention.head_count_kv", v_u32(3))
      .kv("llama.rope.freq_base", v_f32(100000.0f))
      .kv("llama.attention.layer_norm_rms_epsilon", v_f32(1e-5f))
      .kv("llama.vocab_size", v_u32(49152))
      .kv("llama.rope.dimension_count", v_u32(64))
      .kv("tokenizer.ggml.bos_token_id", v_u32(1))
      .kv("tokenizer.ggml.eos_token_id", v_u32(2));
  return b;
}

TEST(GgufSpec, LlamaFromMetadata) {
  const ModelSpec s = spec_of(llama_like());
  EXPECT_EQ(s.arch, "llama");
  EXPECT_EQ(s.source_architecture, "llama");
  EXPECT_EQ(s.num_layers, 30);
  EXPECT_EQ(s.hidden_size, 576);
  EXPECT_EQ(s.intermediate_size, 1536);
  EXPECT_EQ(s.num_heads, 9);
  EXPECT_EQ(s.num_kv_heads, 3);
  EXPECT_EQ(s.head_dim, 64);
  EXPECT_EQ(s.context_length, 8192);
  EXPECT_EQ(s.vocab_size, 49152);
  EXPECT_EQ(s.norm_eps, static_cast<double>(1e-5f));
  EXPECT_EQ(s.rope.theta, 100000.0);
  EXPECT_EQ(s.rope.partial_rotary_factor, 1.0);
  EXPECT_TRUE(s.rope.neox_style);
  EXPECT_EQ(s.rope.scaling.type, "default");
  EXPECT_FALSE(s.rope_local.has_value());
  EXPECT_EQ(s.activation, Activation::SiLU);
  EXPECT_FALSE(s.qk_norm);
  EXPECT_FALSE(s.norm_weight_plus_one);
  EXPECT_FALSE(s.scale_embeddings);
  EXPECT_FALSE(s.attention_bias);
  EXPECT_TRUE(s.tie_word_embeddings);  // no output.weight tensor
  EXPECT_EQ(s.bos_token_id, 1);
  EXPECT_EQ(s.eos_token_ids, std::vector<int64_t>{2});
  EXPECT_EQ(s.sliding_window, 0);
  ASSERT_EQ(s.layer_types.size(), 30u);
  for (LayerKind k : s.layer_types) EXPECT_EQ(k, LayerKind::FullAttention);
}

TEST(GgufSpec, TensorsDecideTieBiasAndVocabCheck) {
  GgufBuilder b = llama_like();
  b.kv("llama.vocab_size", v_u32(4));  // replaced below: duplicate keys are errors
  expect_spec_error(b, "metadata 'llama.vocab_size'", "duplicate");

  GgufBuilder c;
  c.kv("general.architecture", v_str("qwen2"))
      .kv("qwen2.block_count", v_u32(1))
      .kv("qwen2.context_length", v_u32(64))
      .kv("qwen2.embedding_length", v_u32(8))
      .kv("qwen2.feed_forward_length", v_u32(16))
      .kv("qwen2.attention.head_count", v_u32(2))
      .kv("qwen2.attention.layer_norm_rms_epsilon", v_f32(1e-6f))
      .kv("tokenizer.ggml.tokens", v_str_array(vocab(4)));
  c.f32_tensor("token_embd.weight", {8, 4}, std::vector<float>(32, 0.0f));
  c.f32_tensor("output.weight", {8, 4}, std::vector<float>(32, 0.0f));
  c.f32_tensor("blk.0.attn_q.bias", {8}, std::vector<float>(8, 0.0f));
  const ModelSpec s = spec_of(c);
  EXPECT_EQ(s.arch, "qwen2");
  EXPECT_EQ(s.vocab_size, 4);  // from the token list
  EXPECT_EQ(s.num_kv_heads, 2);  // head_count_kv defaults to head_count
  EXPECT_EQ(s.head_dim, 4);
  EXPECT_EQ(s.rope.theta, 10000.0);  // default base
  EXPECT_FALSE(s.tie_word_embeddings);
  EXPECT_TRUE(s.attention_bias);
  EXPECT_EQ(s.bos_token_id, -1);
  EXPECT_TRUE(s.eos_token_ids.empty());

  // An embedding whose rows disagree with the vocabulary.
  GgufBuilder d = c;
  d.f32_tensor("token_embd.weight", {8, 5}, std::vector<float>(40, 0.0f));
  expect_spec_error(d, "tensor 'token_embd.weight'", "duplicate tensor name");
  GgufBuilder e;
  e.kv("general.architecture", v_str("qwen2"))
      .kv("qwen2.block_count", v_u32(1))
      .kv("qwen2.context_length", v_u32(64))
      .kv("qwen2.embedding_length", v_u32(8))
      .kv("qwen2.feed_forward_length", v_u32(16))
      .kv("qwen2.attention.head_count", v_u32(2))
      .kv("qwen2.attention.layer_norm_rms_epsilon", v_f32(1e-6f))
      .kv("tokenizer.ggml.tokens", v_str_array(vocab(4)));
  e.f32_tensor("token_embd.weight", {8, 5}, std::vector<float>(40, 0.0f));
  expect_spec_error(e, "tensor 'token_embd.weight'", "does not match vocab 4 x hidden 8");
}

TEST(GgufSpec, Qwen3HeadDimFromKeyLength) {
  GgufBuilder b;
  b.kv("general.architecture", v_str("qwen3"))
      .kv("qwen3.block_count", v_u32(28))
      .kv("qwen3.context_length", v_u32(40960))
      .kv("qwen3.embedding_length", v_u32(1024))
      .kv("qwen3.feed_forward_length", v_u32(3072))
      .kv("qwen3.attention.head_count", v_u32(16))
      .kv("qwen3.attention.head_count_kv", v_u32(8))
      .kv("qwen3.attention.key_length", v_u32(128))
      .kv("qwen3.attention.value_length", v_u32(128))
      .kv("qwen3.rope.freq_base", v_f32(1000000.0f))
      .kv("qwen3.attention.layer_norm_rms_epsilon", v_f32(1e-6f))
      .kv("tokenizer.ggml.tokens", v_str_array({"a", "<|im_end|>", "<|endoftext|>"}))
      .kv("tokenizer.ggml.eos_token_id", v_u32(2));
  const ModelSpec s = spec_of(b);
  EXPECT_EQ(s.arch, "qwen3");
  EXPECT_EQ(s.head_dim, 128);  // not 1024 / 16
  EXPECT_TRUE(s.qk_norm);
  EXPECT_EQ(s.rope.theta, 1e6);
  // eos first, then the end-of-turn token found by its text.
  EXPECT_EQ(s.eos_token_ids, (std::vector<int64_t>{2, 1}));

  b.kv("qwen3.rope.scaling.type", v_str("yarn"))
      .kv("qwen3.rope.scaling.factor", v_f32(4.0f))
      .kv("qwen3.rope.scaling.original_context_length", v_u32(32768));
  const ModelSpec y = spec_of(b);
  EXPECT_EQ(y.rope.scaling.type, "yarn");
  EXPECT_EQ(y.rope.scaling.factor, 4.0);
  EXPECT_EQ(y.rope.scaling.original_max_position_embeddings, 32768);
  EXPECT_EQ(y.rope.scaling.beta_fast, 32.0);
  EXPECT_FALSE(y.rope.scaling.attention_factor.has_value());
}

GgufBuilder gemma3_270m_like() {
  GgufBuilder b;
  std::vector<std::string> tokens = vocab(262144);
  tokens[1] = "<eos>";
  tokens[2] = "<bos>";
  tokens[106] = "<end_of_turn>";
  b.kv("general.architecture", v_str("gemma3"))
      .kv("gemma3.context_length", v_u32(32768))
      .kv("gemma3.embedding_length", v_u32(640))
      .kv("gemma3.block_count", v_u32(18))
      .kv("gemma3.feed_forward_length", v_u32(2048))
      .kv("gemma3.attention.head_count", v_u32(4))
      .kv("gemma3.attention.layer_norm_rms_epsilon", v_f32(1e-6f))
      .kv("gemma3.attention.key_length", v_u32(256))
      .kv("gemma3.attention.value_length", v_u32(256))
      .kv("gemma3.rope.freq_base", v_f32(1000000.0f))
      .kv("gemma3.attention.sliding_window", v_u32(512))
      .kv("gemma3.attention.head_count_kv", v_u32(1))
      .kv("tokenizer.ggml.tokens", v_str_array(tokens))
      .kv("tokenizer.ggml.bos_token_id", v_u32(2))
      .kv("tokenizer.ggml.eos_token_id", v_u32(1));
  return b;
}

TEST(GgufSpec, Gemma3) {
  const ModelSpec s = spec_of(gemma3_270m_like());
  EXPECT_EQ(s.arch, "gemma3");
  EXPECT_EQ(s.num_layers, 18);
  EXPECT_EQ(s.hidden_size, 640);
  EXPECT_EQ(s.num_heads, 4);
  EXPECT_EQ(s.num_kv_heads, 1);
  EXPECT_EQ(s.head_dim, 256);
  EXPECT_EQ(s.intermediate_size, 2048);
  EXPECT_EQ(s.vocab_size, 262144);
  EXPECT_EQ(s.sliding_window, 512);
  EXPECT_EQ(s.activation, Activation::GeluTanh);
  EXPECT_TRUE(s.norm_weight_plus_one);
  EXPECT_TRUE(s.scale_embeddings);
  EXPECT_TRUE(s.qk_norm);
  EXPECT_EQ(s.query_pre_attn_scalar, 256.0);
  EXPECT_EQ(s.rope.theta, 1e6);
  ASSERT_TRUE(s.rope_local.has_value());
  EXPECT_EQ(s.rope_local->theta, 10000.0);
  EXPECT_EQ(s.rope_local->scaling.type, "default");
  EXPECT_EQ(s.final_logit_softcap, 0.0);
  EXPECT_EQ(s.attn_logit_softcap, 0.0);
  ASSERT_EQ(s.layer_types.size(), 18u);
  for (int i = 0; i < 18; ++i) {
    const bool global = i == 5 || i == 11 || i == 17;
    EXPECT_EQ(s.layer_types[i], global ? LayerKind::FullAttention : LayerKind::SlidingAttention) << i;
  }
  EXPECT_EQ(s.bos_token_id, 2);
  EXPECT_EQ(s.eos_token_ids, (std::vector<int64_t>{1, 106}));
}

TEST(GgufSpec, Gemma3Variants) {
  // 27B (62 layers) scales attention by hidden / heads; linear RoPE scaling
  // applies to global layers only; an explicit pattern and softcaps are read.
  GgufBuilder b;
  b.kv("general.architecture", v_str("gemma3"))
      .kv("gemma3.context_length", v_u32(131072))
      .kv("gemma3.embedding_length", v_u32(5376))
      .kv("gemma3.block_count", v_u32(62))
      .kv("gemma3.feed_forward_length", v_u32(21504))
      .kv("gemma3.attention.head_count", v_u32(32))
      .kv("gemma3.attention.head_count_kv", v_u32(16))
      .kv("gemma3.attention.key_length", v_u32(128))
      .kv("gemma3.attention.layer_norm_rms_epsilon", v_f32(1e-6f))
      .kv("gemma3.attention.sliding_window", v_u32(1024))
      .kv("gemma3.attention.sliding_window_pattern", v_u32(4))
      .kv("gemma3.final_logit_softcapping", v_f32(30.0f))
      .kv("gemma3.rope.scaling.type", v_str("linear"))
      .kv("gemma3.rope.scaling.factor", v_f32(8.0f))
      .kv("gemma3.vocab_size", v_u32(1000));
  const ModelSpec s = spec_of(b);
  EXPECT_EQ(s.query_pre_attn_scalar, 168.0);
  EXPECT_EQ(s.rope.scaling.type, "linear");
  EXPECT_EQ(s.rope.scaling.factor, 8.0);
  EXPECT_EQ(s.rope_local->scaling.type, "default");
  EXPECT_EQ(s.final_logit_softcap, 30.0);
  EXPECT_EQ(s.layer_types[3], LayerKind::FullAttention);
  EXPECT_EQ(s.layer_types[4], LayerKind::SlidingAttention);
  EXPECT_EQ(s.layer_types[7], LayerKind::FullAttention);

  // Without a sliding window every layer is global and there is no local RoPE.
  GgufBuilder h;
  h.kv("general.architecture", v_str("gemma3"))
      .kv("gemma3.context_length", v_u32(32768))
      .kv("gemma3.embedding_length", v_u32(64))
      .kv("gemma3.block_count", v_u32(3))
      .kv("gemma3.feed_forward_length", v_u32(128))
      .kv("gemma3.attention.head_count", v_u32(2))
      .kv("gemma3.attention.layer_norm_rms_epsilon", v_f32(1e-6f))
      .kv("gemma3.attention.sliding_window_pattern",
          v_array(GgufType::BOOL, {v_bool(true), v_bool(false), v_bool(true)}))
      .kv("gemma3.vocab_size", v_u32(10));
  const ModelSpec no_swa = spec_of(h);
  EXPECT_FALSE(no_swa.rope_local.has_value());
  for (LayerKind k : no_swa.layer_types) EXPECT_EQ(k, LayerKind::FullAttention);
  h.kv("gemma3.attention.sliding_window", v_u32(16));
  const ModelSpec per_layer = spec_of(h);
  EXPECT_EQ(per_layer.layer_types,
            (std::vector<LayerKind>{LayerKind::SlidingAttention, LayerKind::FullAttention,
                                    LayerKind::SlidingAttention}));
}

TEST(GgufSpec, Lfm2PerLayerKvHeads) {
  GgufBuilder b;
  b.kv("general.architecture", v_str("lfm2"))
      .kv("lfm2.block_count", v_u32(6))
      .kv("lfm2.context_length", v_u32(128000))
      .kv("lfm2.embedding_length", v_u32(1024))
      .kv("lfm2.feed_forward_length", v_u32(4608))
      .kv("lfm2.attention.head_count", v_u32(16))
      .kv("lfm2.attention.head_count_kv",
          v_array(GgufType::U32, {v_u32(0), v_u32(0), v_u32(8), v_u32(0), v_u32(8), v_u32(0)}))
      .kv("lfm2.rope.freq_base", v_f32(1000000.0f))
      .kv("lfm2.attention.layer_norm_rms_epsilon", v_f32(1e-5f))
      .kv("lfm2.shortconv.l_cache", v_u32(3))
      .kv("lfm2.vocab_size", v_u32(65536));
  const ModelSpec s = spec_of(b);
  EXPECT_EQ(s.arch, "lfm2");
  EXPECT_EQ(s.num_kv_heads, 8);
  EXPECT_EQ(s.head_dim, 64);
  EXPECT_EQ(s.conv_kernel, 3);
  EXPECT_TRUE(s.qk_norm);
  EXPECT_EQ(s.layer_types,
            (std::vector<LayerKind>{LayerKind::ShortConv, LayerKind::ShortConv, LayerKind::FullAttention,
                                    LayerKind::ShortConv, LayerKind::FullAttention, LayerKind::ShortConv}));
}

TEST(GgufSpec, PerLayerArraysMustAgree) {
  GgufBuilder c;
  c.kv("general.architecture", v_str("llama"))
      .kv("llama.block_count", v_u32(2))
      .kv("llama.context_length", v_u32(64))
      .kv("llama.embedding_length", v_u32(64))
      .kv("llama.feed_forward_length", v_array(GgufType::U32, {v_u32(128), v_u32(256)}))
      .kv("llama.attention.head_count", v_u32(4))
      .kv("llama.attention.layer_norm_rms_epsilon", v_f32(1e-5f))
      .kv("llama.vocab_size", v_u32(8));
  expect_spec_error(c, "metadata 'llama.feed_forward_length'", "differs between layers");
  GgufBuilder d;
  d.kv("general.architecture", v_str("llama"))
      .kv("llama.block_count", v_u32(2))
      .kv("llama.context_length", v_u32(64))
      .kv("llama.embedding_length", v_u32(64))
      .kv("llama.feed_forward_length", v_array(GgufType::U32, {v_u32(128)}))
      .kv("llama.attention.head_count", v_u32(4))
      .kv("llama.attention.layer_norm_rms_epsilon", v_f32(1e-5f))
      .kv("llama.vocab_size", v_u32(8));
  expect_spec_error(d, "metadata 'llama.feed_forward_length'", "1 entries for 2 layers");
}

TEST(GgufSpec, MissingAndBadKeys) {
  expect_spec_error(GgufBuilder(), "metadata 'general.architecture'", "required key is missing");
  GgufBuilder unknown;
  unknown.kv("general.architecture", v_str("qwen35moe"));
  expect_spec_error(unknown, "metadata 'general.architecture'", "architecture 'qwen35moe' is not supported");

  // Drop each required key in turn from the llama metadata.
  const char* required[] = {"llama.block_count", "llama.context_length", "llama.embedding_length",
                            "llama.feed_forward_length", "llama.attention.head_count",
                            "llama.attention.layer_norm_rms_epsilon"};
  for (const char* key : required) {
    GgufBuilder b;
    b.kv("general.architecture", v_str("llama"));
    const std::pair<const char*, Val> all[] = {
        {"llama.block_count", v_u32(2)},          {"llama.context_length", v_u32(64)},
        {"llama.embedding_length", v_u32(64)},    {"llama.feed_forward_length", v_u32(128)},
        {"llama.attention.head_count", v_u32(4)}, {"llama.attention.layer_norm_rms_epsilon", v_f32(1e-5f)},
        {"llama.vocab_size", v_u32(8)}};
    for (const auto& [k, v] : all)
      if (std::string_view(k) != key) b.kv(k, v);
    expect_spec_error(b, std::string("metadata '") + key + "'", "required key is missing");
  }

  GgufBuilder wrong_type = llama_like();
  wrong_type.kv("llama.attention.key_length", v_str("64"));
  expect_spec_error(wrong_type, "metadata 'llama.attention.key_length'", "expected an integer");

  GgufBuilder bad_gqa;
  bad_gqa.kv("general.architecture", v_str("llama"))
      .kv("llama.block_count", v_u32(2))
      .kv("llama.context_length", v_u32(64))
      .kv("llama.embedding_length", v_u32(64))
      .kv("llama.feed_forward_length", v_u32(128))
      .kv("llama.attention.head_count", v_u32(4))
      .kv("llama.attention.head_count_kv", v_u32(3))
      .kv("llama.attention.layer_norm_rms_epsilon", v_f32(1e-5f))
      .kv("llama.vocab_size", v_u32(8));
  expect_spec_error(bad_gqa, "metadata 'llama.attention.head_count_kv'", "not a multiple");

  GgufBuilder h;
  h.kv("general.architecture", v_str("llama")).kv("llama.block_count", v_u64(1ull << 40));
  expect_spec_error(h, "metadata 'llama.block_count'", "outside");

  GgufBuilder bos;
  bos.kv("general.architecture", v_str("llama"))
      .kv("llama.block_count", v_u32(2))
      .kv("llama.context_length", v_u32(64))
      .kv("llama.embedding_length", v_u32(64))
      .kv("llama.feed_forward_length", v_u32(128))
      .kv("llama.attention.head_count", v_u32(4))
      .kv("llama.attention.layer_norm_rms_epsilon", v_f32(1e-5f))
      .kv("llama.vocab_size", v_u32(8))
      .kv("tokenizer.ggml.bos_token_id", v_u32(8));
  expect_spec_error(bos, "metadata 'tokenizer.ggml.bos_token_id'", "outside the vocabulary");

  GgufBuilder rope = llama_like();
  rope.kv("llama.rope.scaling.type", v_str("longrope")).kv("llama.rope.scaling.factor", v_f32(2.0f));
  expect_spec_error(rope, "metadata 'llama.rope.scaling.type'", "'longrope' is not supported");
}

// Llama 3.x stores its RoPE scaling as per-frequency divisors, computed here as
// llama.cpp's converter does; spec_from_gguf recovers the llama3 parameters.
std::vector<float> llama3_factors(double theta, int dim, double factor, double low, double high,
                                  double context) {
  std::vector<float> out;
  for (int i = 0; i < dim; i += 2) {
    const float freq = static_cast<float>(1.0 / std::pow(theta, static_cast<double>(i) / dim));
    const double wavelen = 2 * std::numbers::pi / freq;
    if (wavelen < context / high) {
      out.push_back(1.0f);
    } else if (wavelen > context / low) {
      out.push_back(static_cast<float>(factor));
    } else {
      const double smooth = (context / wavelen - low) / (high - low);
      out.push_back(static_cast<float>(1 / ((1 - smooth) / factor + smooth)));
    }
  }
  return out;
}

TEST(GgufSpec, Llama3RopeFreqsTensor) {
  GgufBuilder b;
  b.kv("general.architecture", v_str("llama"))
      .kv("llama.block_count", v_u32(16))
      .kv("llama.context_length", v_u32(131072))
      .kv("llama.embedding_length", v_u32(2048))
      .kv("llama.feed_forward_length", v_u32(8192))
      .kv("llama.attention.head_count", v_u32(32))
      .kv("llama.attention.head_count_kv", v_u32(8))
      .kv("llama.rope.freq_base", v_f32(500000.0f))
      .kv("llama.rope.dimension_count", v_u32(64))
      .kv("llama.attention.layer_norm_rms_epsilon", v_f32(1e-5f))
      .kv("llama.vocab_size", v_u32(128256));
  GgufBuilder good = b;
  good.f32_tensor("rope_freqs.weight", {32}, llama3_factors(500000.0, 64, 32.0, 1.0, 4.0, 8192.0));
  const ModelSpec s = spec_of(good);
  EXPECT_EQ(s.rope.scaling.type, "llama3");
  EXPECT_EQ(s.rope.scaling.factor, 32.0);
  EXPECT_EQ(s.rope.scaling.low_freq_factor, 1.0);
  EXPECT_NEAR(s.rope.scaling.high_freq_factor, 4.0, 1e-9);
  EXPECT_EQ(s.rope.scaling.original_max_position_embeddings, 8192);

  GgufBuilder other = b;
  other.f32_tensor("rope_freqs.weight", {32}, llama3_factors(500000.0, 64, 8.0, 1.0, 3.0, 4096.0));
  const ModelSpec o = spec_of(other);
  EXPECT_EQ(o.rope.scaling.factor, 8.0);
  EXPECT_NEAR(o.rope.scaling.high_freq_factor, 3.0, 1e-9);
  EXPECT_EQ(o.rope.scaling.original_max_position_embeddings, 4096);

  // One ramp entry cannot pin down two parameters: only the Llama 3 defaults
  // (high 4, context 8192) are tried, and these factors do not follow them.
  GgufBuilder one_ramp = b;
  one_ramp.f32_tensor("rope_freqs.weight", {32}, llama3_factors(500000.0, 64, 8.0, 1.0, 2.0, 4096.0));
  expect_spec_error(one_ramp, "tensor 'rope_freqs.weight'", "do not follow Llama 3 scaling");

  std::vector<float> broken = llama3_factors(500000.0, 64, 32.0, 1.0, 4.0, 8192.0);
  broken[3] = 2.0f;
  GgufBuilder bad = b;
  bad.f32_tensor("rope_freqs.weight", {32}, broken);
  expect_spec_error(bad, "tensor 'rope_freqs.weight'", "do not follow Llama 3 scaling");

  GgufBuilder ones = b;
  ones.f32_tensor("rope_freqs.weight", {32}, std::vector<float>(32, 1.0f));
  EXPECT_EQ(spec_of(ones).rope.scaling.type, "default");
}

// --- Qwen3.5 -------------------------------------------------------------------

Val bools(const std::vector<bool>& v) {
  std::vector<Val> e;
  for (bool x : v) e.push_back(v_bool(x));
  return v_array(GgufType::BOOL, e);
}

Val u32s(const std::vector<uint32_t>& v) {
  std::vector<Val> e;
  for (uint32_t x : v) e.push_back(v_u32(x));
  return v_array(GgufType::U32, e);
}

// Qwen3.5-0.8B's keys as llama.cpp's converter writes them, with its
// multi-token-prediction block (block 24 of 25) and no layer-type list.
GgufBuilder qwen35_like() {
  GgufBuilder b;
  b.kv("general.architecture", v_str("qwen35"))
      .kv("qwen35.block_count", v_u32(25))
      .kv("qwen35.nextn_predict_layers", v_u32(1))
      .kv("qwen35.context_length", v_u32(262144))
      .kv("qwen35.embedding_length", v_u32(1024))
      .kv("qwen35.feed_forward_length", v_u32(3584))
      .kv("qwen35.attention.head_count", v_u32(8))
      .kv("qwen35.attention.head_count_kv", v_u32(2))
      .kv("qwen35.attention.key_length", v_u32(256))
      .kv("qwen35.attention.value_length", v_u32(256))
      .kv("qwen35.rope.dimension_sections", u32s({11, 11, 10, 0}))
      .kv("qwen35.rope.freq_base", v_f32(10000000.0f))
      .kv("qwen35.rope.dimension_count", v_u32(64))
      .kv("qwen35.attention.layer_norm_rms_epsilon", v_f32(1e-6f))
      .kv("qwen35.ssm.conv_kernel", v_u32(4))
      .kv("qwen35.ssm.state_size", v_u32(128))
      .kv("qwen35.ssm.group_count", v_u32(16))
      .kv("qwen35.ssm.time_step_rank", v_u32(16))
      .kv("qwen35.ssm.inner_size", v_u32(2048))
      .kv("qwen35.full_attention_interval", v_u32(4))
      .kv("qwen35.vocab_size", v_u32(248320));
  return b;
}

TEST(GgufSpec, Qwen35) {
  const ModelSpec s = spec_of(qwen35_like());
  EXPECT_EQ(s.arch, "qwen3_5");
  EXPECT_EQ(s.num_layers, 24);  // the prediction block is not a decoder layer
  EXPECT_EQ(s.head_dim, 256);
  EXPECT_EQ(s.num_kv_heads, 2);
  EXPECT_TRUE(s.qk_norm);
  EXPECT_TRUE(s.norm_weight_plus_one);
  EXPECT_FALSE(s.attention_bias);
  EXPECT_EQ(s.rope.partial_rotary_factor, 0.25);
  EXPECT_EQ(s.rope.theta, 1e7);
  EXPECT_EQ(s.rope.scaling.type, "default");
  EXPECT_EQ(s.linear_conv_kernel, 4);
  EXPECT_EQ(s.linear_key_head_dim, 128);
  EXPECT_EQ(s.linear_value_head_dim, 128);
  EXPECT_EQ(s.linear_num_key_heads, 16);
  EXPECT_EQ(s.linear_num_value_heads, 16);
  EXPECT_EQ(s.sliding_window, 0);
  ASSERT_EQ(s.layer_types.size(), 24u);
  for (int i = 0; i < 24; ++i)
    EXPECT_EQ(s.layer_types[i], (i + 1) % 4 == 0 ? LayerKind::FullAttention : LayerKind::LinearAttention) << i;

  // attention.recurrent_layers (one bool per block) wins over the interval; the
  // value heads' size is inner_size / time_step_rank; the q bias of the first
  // attention layer (not blk.0) decides attention_bias.
  GgufBuilder b;
  b.kv("general.architecture", v_str("qwen35"))
      .kv("qwen35.block_count", v_u32(3))
      .kv("qwen35.context_length", v_u32(512))
      .kv("qwen35.embedding_length", v_u32(64))
      .kv("qwen35.feed_forward_length", v_u32(128))
      .kv("qwen35.attention.head_count", v_u32(4))
      .kv("qwen35.attention.head_count_kv", v_u32(2))
      .kv("qwen35.attention.key_length", v_u32(16))
      .kv("qwen35.rope.dimension_count", v_u32(8))
      .kv("qwen35.attention.layer_norm_rms_epsilon", v_f32(1e-6f))
      .kv("qwen35.ssm.conv_kernel", v_u32(3))
      .kv("qwen35.ssm.state_size", v_u32(16))
      .kv("qwen35.ssm.group_count", v_u32(2))
      .kv("qwen35.ssm.time_step_rank", v_u32(6))
      .kv("qwen35.ssm.inner_size", v_u32(48))
      .kv("qwen35.full_attention_interval", v_u32(4))
      .kv("qwen35.attention.recurrent_layers", bools({true, false, true}))
      .kv("qwen35.vocab_size", v_u32(256));
  b.f32_tensor("blk.1.attn_q.bias", {32}, std::vector<float>(32, 0.0f));
  const ModelSpec t = spec_of(b);
  EXPECT_EQ(t.num_layers, 3);
  EXPECT_EQ(t.layer_types, (std::vector<LayerKind>{LayerKind::LinearAttention, LayerKind::FullAttention,
                                                   LayerKind::LinearAttention}));
  EXPECT_EQ(t.linear_conv_kernel, 3);
  EXPECT_EQ(t.linear_num_value_heads, 6);
  EXPECT_EQ(t.linear_value_head_dim, 8);
  EXPECT_EQ(t.rope.partial_rotary_factor, 0.5);
  EXPECT_TRUE(t.attention_bias);
}

TEST(GgufSpec, Qwen35BadValues) {
  for (const char* key : {"qwen35.ssm.conv_kernel", "qwen35.ssm.state_size", "qwen35.ssm.group_count",
                          "qwen35.ssm.time_step_rank", "qwen35.ssm.inner_size"}) {
    GgufBuilder b;
    const GgufBuilder full = qwen35_like();
    for (const auto& [k, v] : full.kvs())
      if (k != key) b.kv(k, v);
    expect_spec_error(b, std::string("metadata '") + key + "'", "required key is missing");
  }
  GgufBuilder inner = qwen35_like().set("qwen35.ssm.inner_size", v_u32(2050));
  expect_spec_error(inner, "metadata 'qwen35.ssm.inner_size'", "not a multiple of 16 value heads");
  GgufBuilder groups = qwen35_like().set("qwen35.ssm.group_count", v_u32(3));
  expect_spec_error(groups, "metadata 'qwen35.ssm.time_step_rank'", "not a multiple of 3 key heads");
  GgufBuilder nextn = qwen35_like().set("qwen35.nextn_predict_layers", v_u32(25));
  expect_spec_error(nextn, "metadata 'qwen35.nextn_predict_layers'", "leave none of the 25 blocks");
  // recurrent_layers counts every block, the prediction block included.
  GgufBuilder short_list = qwen35_like();
  short_list.kv("qwen35.attention.recurrent_layers", bools(std::vector<bool>(24, true)));
  expect_spec_error(short_list, "metadata 'qwen35.attention.recurrent_layers'", "array of 25 bools");
  GgufBuilder not_bools = qwen35_like();
  not_bools.kv("qwen35.attention.recurrent_layers", u32s(std::vector<uint32_t>(25, 1)));
  expect_spec_error(not_bools, "metadata 'qwen35.attention.recurrent_layers'", "array of 25 bools");
  GgufBuilder interval = qwen35_like().set("qwen35.full_attention_interval", v_u32(0));
  expect_spec_error(interval, "metadata 'qwen35.full_attention_interval'", "outside");
  GgufBuilder window = qwen35_like();
  window.kv("qwen35.attention.sliding_window", v_u32(64));
  expect_spec_error(window, "metadata 'qwen35.attention.sliding_window'", "not supported for this architecture");
  GgufBuilder rot = qwen35_like().set("qwen35.rope.dimension_count", v_u32(512));
  expect_spec_error(rot, "metadata 'qwen35.rope.dimension_count'", "512 rotary dimensions for head size 256");
}

// --- Gemma 4 --------------------------------------------------------------------

// Gemma 4 E2B's keys as llama.cpp's converter writes them: 35 layers, every
// 5th full attention (512-wide heads, proportional RoPE over a quarter), the
// last 20 sharing KV with double-wide MLPs, 256 per-layer embedding values.
GgufBuilder gemma4_like(int64_t layers = 35, int64_t shared = 20) {
  std::vector<bool> swa;
  std::vector<uint32_t> ff;
  for (int64_t i = 0; i < layers; ++i) {
    swa.push_back((i + 1) % 5 != 0 && i != layers - 1);
    ff.push_back(i >= layers - shared ? 12288 : 6144);
  }
  GgufBuilder b;
  b.kv("general.architecture", v_str("gemma4"))
      .kv("gemma4.block_count", v_u32(static_cast<uint32_t>(layers)))
      .kv("gemma4.context_length", v_u32(131072))
      .kv("gemma4.embedding_length", v_u32(1536))
      .kv("gemma4.feed_forward_length", u32s(ff))
      .kv("gemma4.attention.head_count", v_u32(8))
      .kv("gemma4.attention.head_count_kv", v_u32(1))
      .kv("gemma4.rope.freq_base", v_f32(1000000.0f))
      .kv("gemma4.rope.freq_base_swa", v_f32(10000.0f))
      .kv("gemma4.attention.layer_norm_rms_epsilon", v_f32(1e-6f))
      .kv("gemma4.final_logit_softcapping", v_f32(30.0f))
      .kv("gemma4.attention.sliding_window", v_u32(512))
      .kv("gemma4.attention.shared_kv_layers", v_u32(static_cast<uint32_t>(shared)))
      .kv("gemma4.embedding_length_per_layer_input", v_u32(256))
      .kv("gemma4.attention.sliding_window_pattern", bools(swa))
      .kv("gemma4.attention.key_length", v_u32(512))
      .kv("gemma4.attention.value_length", v_u32(512))
      .kv("gemma4.attention.key_length_swa", v_u32(256))
      .kv("gemma4.attention.value_length_swa", v_u32(256))
      .kv("gemma4.rope.dimension_count", v_u32(512))
      .kv("gemma4.rope.dimension_count_swa", v_u32(256))
      .kv("gemma4.vocab_size", v_u32(262144));
  return b;
}

// The converter's divisors for proportional RoPE: 1 for the turning pairs, 1e30 beyond.
std::vector<float> proportional_freqs(int turning, int pairs) {
  std::vector<float> d(static_cast<size_t>(pairs), 1e30f);
  std::fill(d.begin(), d.begin() + turning, 1.0f);
  return d;
}

TEST(GgufSpec, Gemma4) {
  GgufBuilder b = gemma4_like();
  b.f32_tensor("rope_freqs.weight", {256}, proportional_freqs(64, 256));
  const ModelSpec s = spec_of(b);
  EXPECT_EQ(s.arch, "gemma4");
  EXPECT_EQ(s.num_layers, 35);
  ASSERT_EQ(s.layer_types.size(), 35u);
  for (int i = 0; i < 35; ++i)
    EXPECT_EQ(s.layer_types[i], (i + 1) % 5 == 0 ? LayerKind::FullAttention : LayerKind::SlidingAttention) << i;
  EXPECT_EQ(s.sliding_window, 512);
  EXPECT_EQ(s.head_dim, 256);
  EXPECT_EQ(s.global_head_dim, 512);
  EXPECT_EQ(s.num_kv_heads, 1);
  EXPECT_EQ(s.global_num_kv_heads, 1);
  EXPECT_EQ(s.num_kv_shared_layers, 20);
  EXPECT_EQ(s.intermediate_size, 6144);
  EXPECT_TRUE(s.double_wide_mlp);
  EXPECT_EQ(layer_intermediate_size(s, 34), 12288);
  EXPECT_EQ(s.hidden_size_per_layer_input, 256);
  EXPECT_FALSE(s.attention_k_eq_v);
  EXPECT_EQ(s.final_logit_softcap, 30.0);
  EXPECT_EQ(s.attn_logit_softcap, 0.0);
  EXPECT_EQ(s.query_pre_attn_scalar, 1.0);
  EXPECT_TRUE(s.qk_norm);
  EXPECT_TRUE(s.v_norm);
  EXPECT_FALSE(s.norm_weight_plus_one);
  EXPECT_TRUE(s.scale_embeddings);
  EXPECT_EQ(s.activation, Activation::GeluTanh);
  EXPECT_EQ(s.rope.theta, 1e6);
  EXPECT_EQ(s.rope.scaling.type, "proportional");
  EXPECT_EQ(s.rope.scaling.factor, 1.0);
  EXPECT_EQ(s.rope.partial_rotary_factor, 0.25);
  ASSERT_TRUE(s.rope_local.has_value());
  EXPECT_EQ(s.rope_local->theta, 1e4);
  EXPECT_EQ(s.rope_local->scaling.type, "default");
  EXPECT_EQ(s.rope_local->partial_rotary_factor, 1.0);
  EXPECT_EQ(s.vocab_size, 262144);

  // Per-kind KV heads (num_global_key_value_heads), full layers without a v
  // projection (attention_k_eq_v), no KV sharing, one MLP width, no per-layer
  // embeddings, sliding RoPE at the full layers' base when freq_base_swa is absent.
  GgufBuilder c;
  c.kv("general.architecture", v_str("gemma4"))
      .kv("gemma4.block_count", v_u32(3))
      .kv("gemma4.context_length", v_u32(4096))
      .kv("gemma4.embedding_length", v_u32(64))
      .kv("gemma4.feed_forward_length", v_u32(128))
      .kv("gemma4.attention.head_count", v_u32(8))
      .kv("gemma4.attention.head_count_kv", u32s({4, 4, 2}))
      .kv("gemma4.rope.freq_base", v_f32(1000000.0f))
      .kv("gemma4.attention.layer_norm_rms_epsilon", v_f32(1e-6f))
      .kv("gemma4.attention.sliding_window", v_u32(16))
      .kv("gemma4.attention.sliding_window_pattern", bools({true, true, false}))
      .kv("gemma4.attention.key_length", v_u32(32))
      .kv("gemma4.attention.key_length_swa", v_u32(16))
      .kv("gemma4.rope.dimension_count", v_u32(32))
      .kv("gemma4.vocab_size", v_u32(64));
  c.f32_tensor("rope_freqs.weight", {16}, proportional_freqs(8, 16));
  c.f32_tensor("blk.2.attn_k.weight", {64, 64}, std::vector<float>(64 * 64, 0.0f));
  const ModelSpec t = spec_of(c);
  EXPECT_EQ(t.num_kv_heads, 4);
  EXPECT_EQ(t.global_num_kv_heads, 2);
  EXPECT_TRUE(t.attention_k_eq_v);
  EXPECT_EQ(t.num_kv_shared_layers, 0);
  EXPECT_FALSE(t.double_wide_mlp);
  EXPECT_EQ(t.hidden_size_per_layer_input, 0);
  EXPECT_EQ(t.rope.partial_rotary_factor, 0.5);
  EXPECT_EQ(t.rope_local->theta, 1e6);
  EXPECT_EQ(t.final_logit_softcap, 0.0);
  GgufBuilder with_v = c;
  with_v.f32_tensor("blk.2.attn_v.weight", {64, 64}, std::vector<float>(64 * 64, 0.0f));
  EXPECT_FALSE(spec_of(with_v).attention_k_eq_v);
}

TEST(GgufSpec, Gemma4BadValues) {
  const auto freqs = proportional_freqs(64, 256);
  auto with_freqs = [&](GgufBuilder b) {
    b.f32_tensor("rope_freqs.weight", {256}, freqs);
    return b;
  };
  const GgufBuilder e2b = gemma4_like();  // (kvs() of a temporary would dangle in a range-for)
  GgufBuilder no_pattern;
  for (const auto& [k, v] : e2b.kvs())
    if (k != "gemma4.attention.sliding_window_pattern") no_pattern.kv(k, v);
  expect_spec_error(with_freqs(no_pattern), "metadata 'gemma4.attention.sliding_window_pattern'",
                    "required key is missing");
  expect_spec_error(with_freqs(gemma4_like().set("gemma4.attention.sliding_window_pattern", bools({true, false}))),
                    "metadata 'gemma4.attention.sliding_window_pattern'", "array of 35 bools");
  GgufBuilder no_window;
  for (const auto& [k, v] : e2b.kvs())
    if (k != "gemma4.attention.sliding_window") no_window.kv(k, v);
  expect_spec_error(with_freqs(no_window), "metadata 'gemma4.attention.sliding_window'", "sliding-window layers");
  GgufBuilder no_swa_head;
  for (const auto& [k, v] : e2b.kvs())
    if (k != "gemma4.attention.key_length_swa") no_swa_head.kv(k, v);
  expect_spec_error(with_freqs(no_swa_head), "metadata 'gemma4.attention.key_length_swa'", "required key is missing");
  expect_spec_error(with_freqs(gemma4_like().set("gemma4.attention.value_length_swa", v_u32(128))),
                    "metadata 'gemma4.attention.value_length_swa'", "differs from key head size 256");

  // RoPE: the divisors must be there, be 1s then >= 1e20, as many as half the global head.
  expect_spec_error(gemma4_like(), "tensor 'rope_freqs.weight'", "required");
  GgufBuilder short_freqs = gemma4_like();
  short_freqs.f32_tensor("rope_freqs.weight", {128}, proportional_freqs(64, 128));
  expect_spec_error(short_freqs, "tensor 'rope_freqs.weight'", "expected 256 entries");
  std::vector<float> odd = freqs;
  odd[100] = 2.0f;
  GgufBuilder bad_freqs = gemma4_like();
  bad_freqs.f32_tensor("rope_freqs.weight", {256}, odd);
  expect_spec_error(bad_freqs, "tensor 'rope_freqs.weight'", "entry 100 is 2");
  GgufBuilder still = gemma4_like();
  still.f32_tensor("rope_freqs.weight", {256}, proportional_freqs(0, 256));
  expect_spec_error(still, "tensor 'rope_freqs.weight'", "no pair turns");
  expect_spec_error(with_freqs(gemma4_like().set("gemma4.rope.dimension_count", v_u32(128))),
                    "metadata 'gemma4.rope.dimension_count'", "spans the whole head");
  expect_spec_error(with_freqs(gemma4_like().set("gemma4.rope.dimension_count_swa", v_u32(128))),
                    "metadata 'gemma4.rope.dimension_count_swa'", "partial rotation of sliding layers");
  GgufBuilder scaled = gemma4_like();
  scaled.kv("gemma4.rope.scaling.type", v_str("linear")).kv("gemma4.rope.scaling.factor", v_f32(2.0f));
  expect_spec_error(with_freqs(scaled), "metadata 'gemma4.rope.scaling.type'", "not supported for Gemma 4");

  // KV heads per kind, MLP widths, KV sharing, experts.
  std::vector<uint32_t> kv(35, 1);
  kv[3] = 2;
  expect_spec_error(with_freqs(gemma4_like().set("gemma4.attention.head_count_kv", u32s(kv))),
                    "metadata 'gemma4.attention.head_count_kv'", "layers of one kind must agree");
  expect_spec_error(with_freqs(gemma4_like().set("gemma4.attention.head_count_kv", v_u32(3))),
                    "metadata 'gemma4.attention.head_count_kv'", "not a multiple of 3 kv heads");
  std::vector<uint32_t> ff(35, 6144);
  ff[20] = 12288;
  expect_spec_error(with_freqs(gemma4_like().set("gemma4.feed_forward_length", u32s(ff))),
                    "metadata 'gemma4.feed_forward_length'", "KV-sharing layer 20 has width 12288");
  ff.assign(35, 6144);
  ff[3] = 1000;
  expect_spec_error(with_freqs(gemma4_like().set("gemma4.feed_forward_length", u32s(ff))),
                    "metadata 'gemma4.feed_forward_length'", "layer 3 has width 1000");
  expect_spec_error(with_freqs(gemma4_like().set("gemma4.attention.shared_kv_layers", v_u32(35))),
                    "metadata 'gemma4.attention.shared_kv_layers'", "outside [0, 34]");
  // Sharing 33 layers leaves layers 0 and 1, both sliding: no full-attention KV to share.
  std::vector<uint32_t> ff33(35, 12288);
  ff33[0] = ff33[1] = 6144;
  expect_spec_error(with_freqs(gemma4_like()
                                   .set("gemma4.attention.shared_kv_layers", v_u32(33))
                                   .set("gemma4.feed_forward_length", u32s(ff33))),
                    "metadata 'gemma4.attention.shared_kv_layers'", "no earlier layer of that type stores KV");
  GgufBuilder moe = gemma4_like();
  moe.kv("gemma4.expert_count", v_u32(128));
  expect_spec_error(with_freqs(moe), "metadata 'gemma4.expert_count'", "mixture-of-experts");
  GgufBuilder ple = with_freqs(gemma4_like(5, 0).set("gemma4.vocab_size", v_u32(8)));
  ple.f32_tensor("per_layer_token_embd.weight", {256 * 4, 8}, std::vector<float>(8 * 256 * 4, 0.0f));  // ne: inner first
  expect_spec_error(ple, "tensor 'per_layer_token_embd.weight'", "does not match vocab 8 x (5 layers x 256");
  GgufBuilder v_mixed = with_freqs(gemma4_like());
  v_mixed.f32_tensor("blk.4.attn_k.weight", {1, 1}, {0.0f});
  v_mixed.f32_tensor("blk.9.attn_k.weight", {1, 1}, {0.0f});
  v_mixed.f32_tensor("blk.9.attn_v.weight", {1, 1}, {0.0f});
  expect_spec_error(v_mixed, "tensor 'blk.*.attn_v.weight'", "present for some full-attention layers");
}

// Random byte mutations of a complete small model file: parsing, building the
// spec and dequantizing every tensor either succeed or throw Error; nothing
// else may escape (and under ASan/UBSan, nothing may misbehave).
TEST(GgufSpec, RandomMutationsOnlyEverThrowError) {
  GgufBuilder b;
  b.kv("general.architecture", v_str("gemma3"))
      .kv("gemma3.context_length", v_u32(128))
      .kv("gemma3.embedding_length", v_u32(32))
      .kv("gemma3.block_count", v_u32(2))
      .kv("gemma3.feed_forward_length", v_u32(64))
      .kv("gemma3.attention.head_count", v_u32(2))
      .kv("gemma3.attention.head_count_kv", v_array(GgufType::U32, {v_u32(1), v_u32(1)}))
      .kv("gemma3.attention.layer_norm_rms_epsilon", v_f32(1e-6f))
      .kv("gemma3.attention.sliding_window", v_u32(8))
      .kv("gemma3.attention.sliding_window_pattern", v_array(GgufType::BOOL, {v_bool(true), v_bool(false)}))
      .kv("gemma3.rope.scaling.type", v_str("linear"))
      .kv("gemma3.rope.scaling.factor", v_f32(2.0f))
      .kv("tokenizer.ggml.tokens", v_str_array({"<pad>", "<eos>", "<end_of_turn>", "x"}))
      .kv("tokenizer.ggml.eos_token_id", v_u32(1));
  std::vector<uint8_t> q4k(144 * 4, 0x5a);
  b.f32_tensor("token_embd.weight", {32, 4}, std::vector<float>(128, 0.5f));
  b.tensor("blk.0.ffn_down.weight", 12, {256, 4}, q4k);
  b.f32_tensor("rope_freqs.weight", {8}, std::vector<float>(8, 1.0f));
  const std::vector<uint8_t> good = b.build().bytes;
  ASSERT_NO_THROW(spec_from_gguf(GgufFile::parse(MappedFile::from_bytes("m.gguf", good))));

  std::mt19937 rng(1234);
  int accepted = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> bytes = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 3) {
        case 0: bytes[at] = static_cast<uint8_t>(rng()); break;            // random byte
        case 1: bytes[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;  // bit flip
        default: bytes.resize(at); break;                                   // truncate
      }
      if (bytes.empty()) break;
    }
    try {
      const GgufFile f = GgufFile::parse(MappedFile::from_bytes("m.gguf", bytes));
      for (const TensorView& t : f.tensors())
        if (can_dequantize(t.dtype) && t.nbytes < (1u << 20)) (void)dequantize(t);
      (void)spec_from_gguf(f);
      ++accepted;
    } catch (const Error&) {
    }
  }
  // Mutations of the data section leave the file valid: some must be accepted.
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace tessera
