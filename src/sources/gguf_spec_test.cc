#include "sources/gguf_spec.h"

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
  EXPECT_EQ(s.arch, Architecture::Llama);
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
  EXPECT_EQ(s.arch, Architecture::Qwen2);
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
  EXPECT_EQ(s.arch, Architecture::Qwen3);
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
  EXPECT_EQ(s.arch, Architecture::Gemma3);
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
  EXPECT_EQ(s.arch, Architecture::Lfm2);
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
  unknown.kv("general.architecture", v_str("qwen35"));
  expect_spec_error(unknown, "metadata 'general.architecture'", "architecture 'qwen35' is not supported");

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
