// Tests of the assembled tokenizer: tokenizer.json and GGUF loading, the
// encode pipeline, decoders, the streaming detokenizer and hostile input.
#include <chrono>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"
#include "sources/gguf.h"
#include "sources/gguf_writer_for_tests.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/byte_level_tokenizer_for_tests.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace tessera::tok {
namespace {

using nlohmann::json;
using namespace tessera::testing;
using Ids = std::vector<int32_t>;

TEST(TokenizerJson, ByteLevelEncodeDecode) {
  const auto tok = Tokenizer::from_json(byte_level_json(), nullptr, "test");
  EXPECT_EQ(tok.kind(), "byte-level BPE");
  // "hello" merges fully, " wo" too; "\n" is its own pre-token.
  const Ids ids = tok.encode("hello<|im_end|> wo\n");
  EXPECT_EQ(ids, (Ids{259, 264, 261, 10}));
  EXPECT_EQ(tok.decode(ids), "hello<|im_end|> wo\n");
  EXPECT_EQ(tok.token_to_piece(260), "\xC4\xA0w");
}

TEST(TokenizerJson, ExactIdsAroundSpecialTokens) {
  const auto tok = Tokenizer::from_json(byte_level_json(), nullptr, "test");
  EXPECT_EQ(tok.encode("<|im_start|>hello"), (Ids{263, 259}));
  EXPECT_EQ(tok.encode("hello<|im_start|>"), (Ids{259, 263}));
  // Not a token: plain bytes.
  EXPECT_EQ(tok.encode("<|x|>"), (Ids{'<', '|', 'x', '|', '>'}));
  EXPECT_EQ(tok.encode(""), Ids{});
}

TEST(TokenizerJson, ConfigFlagsRebuildBosEos) {
  json cfg = {{"add_bos_token", true}, {"add_eos_token", true}, {"bos_token", "<|im_start|>"},
              {"eos_token", {{"content", "<|im_end|>"}}}};
  const auto tok = Tokenizer::from_json(byte_level_json(), &cfg, "test");
  EXPECT_EQ(tok.encode("hello"), (Ids{263, 259, 264}));
  EXPECT_EQ(tok.encode("hello", false), (Ids{259}));
  EXPECT_EQ(tok.encode(""), (Ids{263, 264}));
}

TEST(TokenizerJson, InvalidUtf8IsRepairedNotFatal) {
  const auto tok = Tokenizer::from_json(byte_level_json(), nullptr, "test");
  // U+FFFD's three bytes, spelled through the byte alphabet.
  EXPECT_EQ(tok.encode("\xff"), (Ids{0xEF, 0xBF, 0xBD}));
  EXPECT_EQ(tok.encode("hello\xe4\xbd"), (Ids{259, 0xEF, 0xBF, 0xBD}));
}

TEST(TokenizerJson, UnsupportedComponentsAreRejected) {
  json j = byte_level_json();
  j["normalizer"] = {{"type", "BertNormalizer"}};
  EXPECT_THROW(Tokenizer::from_json(j, nullptr, "test"), Error);
  j = byte_level_json();
  j["model"]["type"] = "Unigram";
  EXPECT_THROW(Tokenizer::from_json(j, nullptr, "test"), Error);
  j = byte_level_json();
  j["model"]["merges"].push_back("x yz");
  EXPECT_THROW(Tokenizer::from_json(j, nullptr, "test"), Error);
  EXPECT_THROW(Tokenizer::from_json(json::object(), nullptr, "test"), Error);
}

TEST(TokenizerJson, NfcNormalizerComposes) {
  json j = byte_level_json();
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}}}};
  const auto tok = Tokenizer::from_json(j, nullptr, "test");
  const auto plain = Tokenizer::from_json(byte_level_json(), nullptr, "test");
  // e + U+0301 becomes U+00E9 (C3 A9): two bytes instead of three.
  EXPECT_EQ(tok.encode("e\xCC\x81"), (Ids{0xC3, 0xA9}));
  EXPECT_EQ(plain.encode("e\xCC\x81"), (Ids{'e', 0xCC, 0x81}));
}

TEST(TokenizerJson, DecodeRejectsOutOfRangeIds) {
  const auto tok = Tokenizer::from_json(byte_level_json(), nullptr, "test");
  EXPECT_THROW(tok.decode({1, 100000}), Error);
  EXPECT_THROW(tok.decode({-1}), Error);
}

TEST(TokenizerJson, TenMegabytesDoNotCrash) {
  const auto tok = Tokenizer::from_json(byte_level_json(), nullptr, "test");
  std::string big;
  while (big.size() < 10u << 20) big += "hello world \xE4\xBD\xA0\t\n  <|im_end|>";
  big += std::string(1 << 20, ' ');  // one 1 MB whitespace pre-token
  const auto t0 = std::chrono::steady_clock::now();
  const Ids ids = tok.encode(big);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
  EXPECT_EQ(tok.decode(ids), big);
}

// A SentencePiece-style BPE vocabulary as a GGUF file (Llama pipeline).
GgufFile spm_gguf(const std::string& arch) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  for (int b = 0; b < 256; ++b) tokens.push_back(fmt::format("<0x{:02X}>", b));
  const std::vector<std::string> pieces = {"\xE2\x96\x81", "h", "i", "\xE2\x96\x81h", "\xE2\x96\x81hi", "hi"};
  tokens.insert(tokens.end(), pieces.begin(), pieces.end());
  std::vector<int32_t> types(tokens.size(), 1);
  types[0] = 2;
  types[1] = types[2] = 3;
  for (int b = 0; b < 256; ++b) types[3 + b] = 6;
  std::vector<Val> scores;
  for (size_t i = 0; i < tokens.size(); ++i) scores.push_back(v_f32(-static_cast<float>(i)));
  GgufBuilder g;
  g.kv("general.architecture", v_str(arch))
      .kv("tokenizer.ggml.model", v_str("llama"))
      .kv("tokenizer.ggml.tokens", v_str_array(tokens))
      .kv("tokenizer.ggml.scores", v_array(GgufType::F32, scores))
      .kv("tokenizer.ggml.token_type", v_i32_array(types))
      .kv("tokenizer.ggml.bos_token_id", v_u32(1))
      .kv("tokenizer.ggml.eos_token_id", v_u32(2));
  return GgufFile::parse(MappedFile::from_bytes("spm.gguf", g.build().bytes));
}

TEST(TokenizerGguf, LlamaSentencePieceWithByteFallback) {
  const auto tok = Tokenizer::from_gguf(spm_gguf("llama"));
  EXPECT_EQ(tok.kind(), "SentencePiece BPE");
  const int32_t base = 3 + 256;  // ▁ h i ▁h ▁hi hi
  // BOS by default; Metaspace prepends ▁ to the first piece; é is not in the
  // vocabulary: two byte-fallback tokens.
  EXPECT_EQ(tok.encode("hi hi\xC3\xA9"), (Ids{1, base + 4, base + 4, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(tok.decode(tok.encode("hi hi\xC3\xA9")), "<s> hi hi\xC3\xA9");
  EXPECT_EQ(tok.decode(tok.encode("hi", false)), "hi");  // Strip removes the prefix space
  // A broken byte run decodes to one U+FFFD per byte token, as ByteFallback does.
  EXPECT_EQ(tok.decode({3 + 0xC3, base + 1}), "\xEF\xBF\xBD" "h");
}

TEST(TokenizerGguf, SentencePieceDummyPrefixOnEveryTextPiece) {
  // sentencepiece prepends "▁" even when the text starts with a space, and
  // BPE runs over the whitespace run: " hi" -> "▁" "▁hi" (Llama 2: " Hello"
  // -> [29871, 15043]); after an added token the next piece gets one too.
  const auto tok = Tokenizer::from_gguf(spm_gguf("llama"));
  const int32_t base = 3 + 256;  // ▁ h i ▁h ▁hi hi
  EXPECT_EQ(tok.encode(" hi", false), (Ids{base + 0, base + 4}));
  EXPECT_EQ(tok.encode("hi</s>hi", false), (Ids{base + 4, 2, base + 4}));
  EXPECT_EQ(tok.encode("", false), Ids{});
}

// A byte-level BPE GGUF with the 256 byte tokens, no merges, and `pre`.
GgufFile byte_level_gguf(const std::string& pre) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(byte_level_table().encode(std::string(1, static_cast<char>(b))));
  GgufBuilder g;
  g.kv("general.architecture", v_str("llama"))
      .kv("tokenizer.ggml.model", v_str("gpt2"))
      .kv("tokenizer.ggml.pre", v_str(pre))
      .kv("tokenizer.ggml.tokens", v_str_array(tokens))
      .kv("tokenizer.ggml.merges", v_str_array({}));
  return GgufFile::parse(MappedFile::from_bytes(pre + ".gguf", g.build().bytes));
}

TEST(TokenizerGguf, EveryLlamaCppPreTokenizerNameIsImplementedOrRefusedByName) {
  // Every tokenizer.ggml.pre llama.cpp (llama-cpp-python 0.3.36's
  // src/llama-vocab.cpp) accepts for a BPE vocabulary.
  const std::vector<std::string> names = {
      "minicpm5", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
      "jina-v5-nano", "deepseek-llm", "deepseek-coder", "deepseek-v3", "spark2_5", "youtu", "falcon", "mpt",
      "starcoder", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
      "mellum", "modern-bert", "jais-2", "jina-v1-en", "jina-v2-code", "roberta-bpe", "refact", "command-r",
      "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "qwen35", "stablelm2", "olmo", "dbrx", "smaug-bpe",
      "poro-chat", "chatglm-bpe", "glm4", "glm5", "viking", "jais", "tekken", "smollm", "codeshell", "bloom",
      "gpt3-finnish", "exaone", "exaone4", "exaone-moe", "minerva-7b", "megrez", "gpt-4o", "llama4", "kanana2",
      "talkie", "tiny_aya", "cohere2moe", "trillion", "granite-docling", "bailingmoe", "bailingmoe2", "llada-moe",
      "seed-coder", "hunyuan", "hunyuan-dense", "hy_v4", "joyai-llm", "ufakzeka", "grok-2", "laguna",
      "minimax-m2", "solar-open", "mellum2"};
  const std::vector<std::string> refused = {"default", "chameleon", "kimi-k2", "afmoe", "superbpe",
                                            "granite-embed-multi-97m", "gemma4", "granite-embed-multi-311m",
                                            "sarvam-moe", "whitespace", "xyzzy"};
  const std::string text =
      "Hello, y'all! 'RE you 1234567 ½ ²?\n\n  \tCửa Việt 我想在apple工作 нещо ... \xF0\x9F\x98\x81 x  =  1\r\n";
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    const auto tok = Tokenizer::from_gguf(byte_level_gguf(name));  // every regex compiles
    const Ids ids = tok.encode(text, false);
    EXPECT_EQ(ids.size(), text.size());  // no merges: one byte token per byte, none lost
    EXPECT_EQ(tok.decode(ids), text);
  }
  for (const auto& name : refused) {
    SCOPED_TRACE(name);
    try {
      Tokenizer::from_gguf(byte_level_gguf(name));
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("pre-tokenizer " + name + " is not supported"), std::string::npos)
          << e.what();
    }
  }
}

TEST(TokenizerGguf, GemmaPipelineHasNoPrefixSpace) {
  const auto tok = Tokenizer::from_gguf(spm_gguf("gemma3"));
  const int32_t base = 3 + 256;
  EXPECT_EQ(tok.encode("hi hi", false), (Ids{base + 5, base + 4}));
  EXPECT_EQ(tok.decode({base + 5, base + 4}), "hi hi");
}

TEST(TokenizerGguf, MissingTokenizerIsAnError) {
  GgufBuilder g;
  g.kv("general.architecture", v_str("llama"));
  EXPECT_THROW(Tokenizer::from_gguf(GgufFile::parse(MappedFile::from_bytes("x.gguf", g.build().bytes))), Error);
}

std::vector<std::string> stream(const Tokenizer& tok, const Ids& ids) {
  StreamingDetokenizer d(tok);
  std::vector<std::string> out;
  for (int32_t id : ids) out.push_back(d.push(id));
  out.push_back(d.finish());
  return out;
}

TEST(TokenizerStreaming, HoldsCharactersSplitAcrossByteTokens) {
  const auto tok = Tokenizer::from_gguf(spm_gguf("llama"));
  const int32_t base = 3 + 256;
  // "hi" then 你 (E4 BD A0) as three byte tokens, then " hi".
  const Ids ids = {base + 4, 3 + 0xE4, 3 + 0xBD, 3 + 0xA0, base + 4};
  const auto chunks = stream(tok, ids);
  EXPECT_EQ(chunks, (std::vector<std::string>{"hi", "", "", "\xE4\xBD\xA0", " hi", ""}));
  std::string all;
  for (const auto& c : chunks) all += c;
  EXPECT_EQ(all, tok.decode(ids));
  // Cut off mid-character: the tail is flushed as U+FFFD by finish().
  EXPECT_EQ(stream(tok, {base + 4, 3 + 0xE4, 3 + 0xBD}),
            (std::vector<std::string>{"hi", "", "", "\xEF\xBF\xBD"}));
}

TEST(TokenizerStreaming, ByteLevelMatchesDecode) {
  const auto tok = Tokenizer::from_json(byte_level_json(), nullptr, "test");
  const std::string text = "hello \xF0\x9F\x91\x8B world <|im_start|>\xE4\xBD\xA0";
  const Ids ids = tok.encode(text);
  std::string all;
  for (const auto& c : stream(tok, ids)) {
    EXPECT_TRUE(utf8_is_valid(c));
    all += c;
  }
  EXPECT_EQ(all, text);
  EXPECT_THROW(stream(tok, {1, 999999}), Error);
}

}  // namespace
}  // namespace tessera::tok
