// Test-only: writes a tiny random Llama checkpoint that can chat — config.json,
// model.safetensors (f32, seeded), a byte-level BPE tokenizer.json whose
// vocabulary is the 256 bytes plus <|im_start|>, <|im_end|> and
// <|endoftext|>, and a ChatML template in tokenizer_config.json. Every id the
// model can produce is a token the tokenizer knows, so text generation,
// streaming and chat run end to end in a few milliseconds per token.
// `sliding_window` > 0 writes a Gemma 3 model instead (q/k norms, sandwich
// norms) whose first layer attends over a ring of that many positions, for
// the KV-reuse cases a sliding window cannot serve.
// Used by the engine / API tests and by the tessera_tiny_chat_model tool that
// the examples' ctests and the server's pytests run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sources/safetensors_writer_for_tests.h"

namespace tessera::testing {

inline constexpr int kTinyChatVocab = 259;  // 256 bytes + 3 special tokens
inline constexpr int kTinyImStart = 256, kTinyImEnd = 257, kTinyEndOfText = 258;

// GPT-2's byte-to-unicode map: the printable bytes stand for themselves, the
// others for code points from U+0100 on, so every byte is a visible character.
inline std::string tiny_byte_level_char(int byte) {
  int code = byte;
  const bool printable = (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || (byte >= 174);
  if (!printable) {
    int n = 0;
    for (int b = 0; b < byte; ++b)
      if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174))) ++n;
    code = 256 + n;
  }
  std::string s;  // UTF-8 of code (< 0x800)
  if (code < 0x80) {
    s += static_cast<char>(code);
  } else {
    s += static_cast<char>(0xC0 | (code >> 6));
    s += static_cast<char>(0x80 | (code & 0x3F));
  }
  return s;
}

inline void write_tiny_chat_model(const std::filesystem::path& dir, uint64_t seed = 1, int sliding_window = 0) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  const int hidden = 64, inter = 128, layers = 2, heads = 4, kv_heads = 2, head_dim = hidden / heads;
  nlohmann::ordered_json config = {
      {"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"vocab_size", kTinyChatVocab},
      {"hidden_size", hidden}, {"intermediate_size", inter}, {"num_hidden_layers", layers},
      {"num_attention_heads", heads}, {"num_key_value_heads", kv_heads}, {"max_position_embeddings", 1024},
      {"rms_norm_eps", 1e-5}, {"rope_theta", 10000.0}, {"tie_word_embeddings", true},
      {"hidden_act", "silu"}, {"eos_token_id", kTinyImEnd}, {"torch_dtype", "float32"}};
  const bool gemma = sliding_window > 0;
  if (gemma) {
    config["architectures"] = {"Gemma3ForCausalLM"};
    config["model_type"] = "gemma3_text";
    config["head_dim"] = head_dim;
    config["sliding_window"] = sliding_window;
    config["query_pre_attn_scalar"] = head_dim;
    config["hidden_activation"] = "gelu_pytorch_tanh";
    config.erase("hidden_act");
    config["layer_types"] = {"sliding_attention", "full_attention"};
    config["rope_local_base_freq"] = 10000.0;
  }
  std::ofstream(dir / "config.json") << config.dump(2);

  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto uniform = [&] {  // splitmix64 -> [-1, 1)
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<float>(static_cast<double>(z >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  };
  std::vector<StTensor> tensors;
  auto add = [&](const std::string& name, std::vector<uint64_t> shape, float center, float spread) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    std::vector<float> v(n);
    for (float& x : v) x = center + spread * uniform();
    StTensor t{name, "F32", shape, std::vector<uint8_t>(n * 4)};
    std::memcpy(t.data.data(), v.data(), n * 4);
    tensors.push_back(std::move(t));
  };
  add("model.embed_tokens.weight", {kTinyChatVocab, hidden}, 0, 0.5f);
  for (int l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {hidden}, gemma ? 0 : 1, 0.1f);
    add(p + "self_attn.q_proj.weight", {uint64_t(heads * head_dim), hidden}, 0, 0.2f);
    add(p + "self_attn.k_proj.weight", {uint64_t(kv_heads * head_dim), hidden}, 0, 0.2f);
    add(p + "self_attn.v_proj.weight", {uint64_t(kv_heads * head_dim), hidden}, 0, 0.2f);
    add(p + "self_attn.o_proj.weight", {hidden, uint64_t(heads * head_dim)}, 0, 0.2f);
    add(p + "post_attention_layernorm.weight", {hidden}, gemma ? 0 : 1, 0.1f);
    if (gemma) {  // Gemma's norms scale by (1 + w): centre them on 0
      add(p + "self_attn.q_norm.weight", {uint64_t(head_dim)}, 0, 0.1f);
      add(p + "self_attn.k_norm.weight", {uint64_t(head_dim)}, 0, 0.1f);
      add(p + "pre_feedforward_layernorm.weight", {hidden}, 0, 0.1f);
      add(p + "post_feedforward_layernorm.weight", {hidden}, 0, 0.1f);
    }
    add(p + "mlp.gate_proj.weight", {inter, hidden}, 0, 0.2f);
    add(p + "mlp.up_proj.weight", {inter, hidden}, 0, 0.2f);
    add(p + "mlp.down_proj.weight", {hidden, inter}, 0, 0.2f);
  }
  add("model.norm.weight", {hidden}, gemma ? 0 : 1, 0.1f);
  write_file(dir / "model.safetensors", write_safetensors(tensors));

  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (int b = 0; b < 256; ++b) vocab[tiny_byte_level_char(b)] = b;
  const char* specials[] = {"<|im_start|>", "<|im_end|>", "<|endoftext|>"};
  nlohmann::ordered_json added = nlohmann::ordered_json::array();
  for (int i = 0; i < 3; ++i) {
    vocab[specials[i]] = 256 + i;
    added.push_back({{"id", 256 + i}, {"content", specials[i]}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  const nlohmann::ordered_json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  nlohmann::ordered_json tokenizer = {
      {"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", added},
      {"normalizer", nullptr}, {"pre_tokenizer", byte_level}, {"post_processor", nullptr},
      {"decoder", byte_level},
      {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"fuse_unk", false},
                 {"byte_fallback", false}, {"ignore_merges", false}, {"vocab", vocab},
                 {"merges", nlohmann::ordered_json::array()}}}};
  std::ofstream(dir / "tokenizer.json") << tokenizer.dump(1);
  const nlohmann::ordered_json tokenizer_config = {
      {"eos_token", "<|im_end|>"}, {"bos_token", nullptr},
      {"chat_template",
       "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
       "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif "
       "%}"}};
  std::ofstream(dir / "tokenizer_config.json") << tokenizer_config.dump(2);
}

}  // namespace tessera::testing
