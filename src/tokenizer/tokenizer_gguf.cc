// Tokenizer::from_gguf: the tokenizer a GGUF file's tokenizer.ggml.* metadata
// describes, built so that ids match the model's original Hugging Face
// tokenizer (tokenizer.json / sentencepiece) exactly; llama.cpp's tokenizer
// test vectors (tests/python/test_llamacpp_vocab_suite.py) hold us to that.
// Where transformers' own GGUF loader (integrations/gguf) departs from the
// original (the SentencePiece dummy prefix, pre-tokenizers it does not know),
// the original wins.
//
//   tokenizer.ggml.model "gpt2" -> byte-level BPE. Tokens not spelled in the
//     GPT-2 byte alphabet are respelled from their UTF-8 bytes; merges come
//     from tokenizer.ggml.merges. tokenizer.ggml.pre names the original
//     pre-tokenizer (pre_specs(): every name llama.cpp's llama-vocab.cpp
//     accepts, as the Split / Digits / Punctuation / ByteLevel steps of the
//     original, with ignore_merges where the original sets it); names it does
//     not reproduce exactly, and unknown names, are refused ("pre-tokenizer X
//     is not supported"), never tokenized by another type's rules. No
//     tokenizer.ggml.pre at all (early GPT-2 / GPT-NeoX conversions): GPT-2's
//     ByteLevel pre-tokenizer, as transformers' GPT2Tokenizer.
//   tokenizer.ggml.model "llama" (and "gemma4") -> SentencePiece-style BPE
//     (byte fallback when the vocabulary has the 256 "<0xXX>" pieces, else
//     the unknown token, runs fused). Gemma 1-3 (by general.architecture) and
//     gemma4 take Gemma's pipeline (" " -> "▁", no prefix space); the others
//     sentencepiece's: remove_extra_whitespaces when the file says so, the
//     dummy "▁" prepended to every piece of text between added tokens unless
//     tokenizer.ggml.add_space_prefix is false, spaces as "▁", and BPE over
//     the whole piece (" Hello" -> "▁" "▁Hello", "   " -> "▁▁▁▁"); the
//     decoder strips one leading space.
//     Without tokenizer.ggml.merges the merges are recovered from the
//     vocabulary (transformers' generate_merges): every split of every token
//     into two vocabulary pieces is a merge, ranked by the token's score, best
//     first (Gemma: by file position instead, its scores do not follow merge
//     order), then by longer left piece, then longer right piece.
//   Added tokens: every CONTROL token (type 3; for gpt2 only those spelled in
//     the byte alphabet) is a special added token; every USER_DEFINED token
//     (type 4) still present in the vocabulary a non-special one (GPT-NeoX's
//     runs of spaces among them); both match on raw text. The bos/eos/unk/pad
//     tokens named by id are special too.
//   BOS/EOS: tokenizer.ggml.add_bos_token / add_eos_token (an SPM vocabulary
//     without the flag adds BOS, as llama.cpp and transformers do; gemma4
//     never does).
#include <algorithm>
#include <unordered_map>

#include "core/error.h"
#include "core/utf8.h"
#include "sources/gguf.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace tessera::tok {
namespace {

constexpr const char* kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kTekkenSplit =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt4oSplit =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kJais2Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})";
constexpr const char* kDeepseekV3Main =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kBloomSplit = R"( ?[^(\s|.,!?…。，、।۔،)]+)";

// How a byte-level BPE vocabulary cuts text into words, by tokenizer.ggml.pre:
// the pre-tokenizer of the model's original tokenizer.json (the steps of a
// Hugging Face Sequence), then BPE over the words' bytes.
struct PreSpec {
  enum class Shape {
    Splits,        // each regex a Split(Isolated), then ByteLevel without its regex
    GptTwo,        // ByteLevel with the GPT-2 regex (GPT-2, GPT-NeoX, OLMo, ...)
    DigitsGptTwo,  // Digits(individual) then ByteLevel with the GPT-2 regex (StarCoder, Refact, Command R, ...)
    Falcon,        // Punctuation(Contiguous), ByteLevel(GPT-2 regex), Digits, Split [0-9]{3}
  } shape;
  std::vector<const char*> regexes;
  bool ignore_merges = false;
};

// Every name llama.cpp's llama-vocab.cpp accepts for a BPE vocabulary: a spec,
// or nullptr when it is refused by name (its original splits cannot be
// reproduced exactly here).
const std::unordered_map<std::string, std::optional<PreSpec>>& pre_specs() {
  using S = PreSpec::Shape;
  static const std::unordered_map<std::string, std::optional<PreSpec>> table = [] {
    std::unordered_map<std::string, std::optional<PreSpec>> t;
    auto set = [&](std::initializer_list<const char*> names, std::optional<PreSpec> spec) {
      for (const char* n : names) t[n] = spec;
    };
    const PreSpec llama3{S::Splits, {kLlama3Split}, true};
    set({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"}, llama3);
    set({"dbrx", "smaug-bpe", "chatglm-bpe"}, PreSpec{S::Splits, {kLlama3Split}, false});
    set({"glm4", "glm5"}, llama3);
    set({"jais-2"}, PreSpec{S::Splits, {kJais2Split}, false});
    set({"deepseek-llm"},
        PreSpec{S::Splits,
                {R"([\r\n])",
                 R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)",
                 R"(\s?[!-/:-~！-／：-～‘-‟　-。]+)", R"(\s+$)", R"([一-龥ࠀ-一가-퟿]+)", R"(\p{N}+)"},
                false});
    set({"deepseek-coder"},
        PreSpec{S::Splits, {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", R"([一-龥ࠀ-一가-퟿]+)", R"(\p{N})"}, false});
    set({"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"},
        PreSpec{S::Splits, {R"(\p{N}{1,3})", R"([一-龥぀-ゟ゠-ヿ]+)", kDeepseekV3Main}, false});
    set({"spark2_5"},
        PreSpec{S::Splits,
                {R"(\p{N}{1,3})", R"([一-龥぀-ゟ゠-ヿ]+)",
                 R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+)",
                 R"(\p{N})"},
                false});
    set({"youtu"},
        PreSpec{S::Splits,
                {R"([가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+)",
                 R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
                true});
    set({"falcon"}, PreSpec{S::Falcon, {}, false});
    set({"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"},
        PreSpec{S::DigitsGptTwo, {}, false});
    set({"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
         "modern-bert", "jina-v1-en", "jina-v2-code", "roberta-bpe", "exaone4", "mpt", "olmo", "jais", "trillion",
         "granite-docling"},
        PreSpec{S::GptTwo, {}, false});
    set({"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan", "solar-open"},
        PreSpec{S::Splits, {kQwen2Pattern}, false});
    set({"qwen35"}, PreSpec{S::Splits, {kQwen35Pattern}, false});
    set({"poro-chat", "bloom", "gpt3-finnish"}, PreSpec{S::Splits, {kBloomSplit}, false});
    set({"viking"}, PreSpec{S::Splits, {kBloomSplit, R"(\p{N})"}, false});
    set({"tekken"}, PreSpec{S::Splits, {kTekkenSplit}, true});
    set({"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, PreSpec{S::Splits, {kGpt4oSplit}, false});
    set({"tiny_aya", "cohere2moe"}, PreSpec{S::Splits, {R"(\d{1,3}(?=(?:\d{3})*\b))", kGpt4oSplit}, false});
    set({"bailingmoe", "bailingmoe2", "llada-moe"},
        PreSpec{S::Splits,
                {R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)"},
                false});
    set({"seed-coder"},
        PreSpec{S::Splits,
                {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"},
                false});
    set({"ufakzeka"},
        PreSpec{S::Splits, {R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}, false});
    set({"grok-2"}, PreSpec{S::Splits, {kQwen2Pattern}, false});
    set({"laguna"}, PreSpec{S::Splits, {R"([^\n]+|[\n]+)", kQwen2Pattern}, false});
    set({"exaone-moe"},
        PreSpec{S::Splits,
                {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)"},
                false});
    set({"minicpm5"},
        PreSpec{S::Splits,
                {R"(\p{N}{1,3})",
                 R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
                true});
    // Refused: llama.cpp's own approximations or custom code with no original
    // regex to reproduce (default, chameleon, kimi-k2, afmoe, superbpe's empty
    // look-ahead splits, granite-embed-multi-97m), or SentencePiece-shaped BPE
    // on raw UTF-8 / a whitespace pre-tokenizer in a gpt2 vocabulary.
    set({"default", "chameleon", "kimi-k2", "afmoe", "superbpe", "granite-embed-multi-97m", "gemma4",
         "granite-embed-multi-311m", "sarvam-moe", "whitespace"},
        std::nullopt);
    return t;
  }();
  return table;
}

bool in_byte_alphabet(const std::string& s) {
  const auto& t = byte_level_table();
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_valid_len(s, i);
    if (n == 0 || t.byte_of(utf8_decode(s, i, n)) < 0) return false;
    i += n;
  }
  return true;
}

// Byte offsets of the code point boundaries of s (0 and s.size() included), into b.
void char_bounds(std::string_view s, std::vector<size_t>& b) {
  b.clear();
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<uint8_t>(s[i]) & 0xC0) != 0x80) b.push_back(i);
  b.push_back(s.size());
}

struct MergeCand {
  uint32_t lchars, rchars;
  int32_t lid, rid;
  double score;
  int32_t merged;  // the whole piece's id
};

}  // namespace

// transformers' generate_merges(vocab, vocab_scores) for the score table given
// as (piece, score) in insertion order, as vocabulary ids (the pieces are
// looked up once here, not again by the Bpe).
std::vector<Bpe::MergeIds> generate_merges_from_scores(
    const Vocab& vocab, const std::vector<std::pair<std::string_view, double>>& scores) {
  std::vector<MergeCand> cands;
  cands.reserve(scores.size() * 2);
  std::vector<size_t> bounds;
  for (uint32_t k = 0; k < scores.size(); ++k) {
    const auto& [pv, score] = scores[k];
    char_bounds(pv, bounds);
    const size_t nchars = bounds.size() - 1;
    const size_t first = cands.size();
    std::optional<int32_t> merged;
    for (size_t idx = 1; idx < nchars; ++idx) {
      const auto l = vocab.find(pv.substr(0, bounds[idx]));
      if (!l) continue;
      const auto r = vocab.find(pv.substr(bounds[idx]));
      if (!r) continue;
      if (!merged) merged = vocab.find(pv);
      if (!merged) fail("tokenizer", "score table", "piece {:?} is not in the vocabulary", std::string(pv));
      cands.push_back({static_cast<uint32_t>(idx), static_cast<uint32_t>(nchars - idx), *l, *r, score, *merged});
    }
    // Within one token: by (vocab[l], vocab[r]) ascending.
    std::sort(cands.begin() + first, cands.end(), [](const MergeCand& a, const MergeCand& b) {
      return a.lid != b.lid ? a.lid < b.lid : a.rid < b.rid;
    });
  }
  // Python's stable sorted(..., reverse=True) on (score, len(l), len(r)).
  std::stable_sort(cands.begin(), cands.end(), [](const MergeCand& a, const MergeCand& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.lchars != b.lchars) return a.lchars > b.lchars;
    return a.rchars > b.rchars;
  });
  std::vector<Bpe::MergeIds> merges;
  merges.reserve(cands.size());
  for (const auto& c : cands) merges.push_back({c.lid, c.rid, c.merged});
  return merges;
}

Tokenizer Tokenizer::from_gguf(const GgufFile& g) {
  const std::string& origin = g.path();
  const auto model = g.get_string("tokenizer.ggml.model");
  if (!model) fail(origin, "metadata 'tokenizer.ggml.model'", "missing: the file has no tokenizer");
  const auto* tokens = g.get_string_array("tokenizer.ggml.tokens");
  if (!tokens) fail(origin, "metadata 'tokenizer.ggml.tokens'", "missing or not an array of strings");
  const auto types = g.get_int_array("tokenizer.ggml.token_type");
  if (types && types->size() != tokens->size())
    fail(origin, "metadata 'tokenizer.ggml.token_type'", "has {} entries for {} tokens", types->size(), tokens->size());
  const std::string arch = g.get_string("general.architecture").value_or("");
  const std::string pre = g.get_string("tokenizer.ggml.pre").value_or("");
  const auto* file_merges = g.get_string_array("tokenizer.ggml.merges");

  Parts p;
  p.model = *model;
  p.vocab = std::make_shared<Vocab>();
  size_t chars = 0;
  for (const auto& t : *tokens) chars += t.size();
  p.vocab->reserve(tokens->size(), chars + chars / 8);  // byte-level spelling lengthens a few pieces
  std::vector<std::string> spelled(tokens->size());
  const bool gpt2 = *model == "gpt2";
  const bool spm = *model == "llama" || *model == "gemma4";
  if (!gpt2 && !spm) fail(origin, "metadata 'tokenizer.ggml.model'", "tokenizer {:?} is not supported (gpt2, llama, gemma4)", *model);
  const bool gemma = *model == "llama" && (arch == "gemma" || arch == "gemma2" || arch == "gemma3");
  const bool gemma_pipeline = gemma || *model == "gemma4";
  for (size_t i = 0; i < tokens->size(); ++i) {
    const std::string& t = (*tokens)[i];
    std::string s = t;
    if (gpt2 && !in_byte_alphabet(t)) {
      s = byte_level_table().encode(t);
    } else if (gemma && !t.empty() && t.find(' ') != std::string::npos &&
               t.find_first_not_of(" \t\n\v\f\r") == std::string::npos) {
      // Python's `" " in t and not t.strip()`: a whitespace-only token with a space.
      s.clear();
      for (size_t k = 0, n = utf8_length(t); k < n; ++k) s += "\xE2\x96\x81";
    }
    p.vocab->set(static_cast<int32_t>(i), s);
    spelled[i] = std::move(s);
  }

  if (file_merges) {
    p.merges.reserve(file_merges->size());
    for (const auto& m : *file_merges) {
      const size_t sp = m.find(' ');
      if (sp == std::string::npos) fail(origin, "metadata 'tokenizer.ggml.merges'", "merge {:?} has no space", m);
      // Python's split(" ") into a 2-tuple: a merge with two spaces would not unpack.
      if (m.find(' ', sp + 1) != std::string::npos)
        fail(origin, "metadata 'tokenizer.ggml.merges'", "merge {:?} has more than one space", m);
      p.merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
    }
  } else if (spm) {
    // Score table in dict order: first occurrence fixes the position, the last the value.
    // (Views of `spelled`, which outlives them.)
    std::vector<std::pair<std::string_view, double>> scores;
    std::unordered_map<std::string_view, size_t> pos;
    std::optional<std::vector<double>> file_scores;
    if (!gemma) {
      file_scores = g.get_float_array("tokenizer.ggml.scores");
      if (!file_scores || file_scores->size() != tokens->size())
        fail(origin, "metadata 'tokenizer.ggml.scores'", "missing or not one per token");
    }
    for (size_t i = 0; i < spelled.size(); ++i) {
      const double score = gemma ? -static_cast<double>(i) : (*file_scores)[i];
      auto [it, fresh] = pos.emplace(spelled[i], scores.size());
      if (fresh) scores.emplace_back(spelled[i], score);
      else scores[it->second].second = score;
    }
    p.merge_ids = generate_merges_from_scores(*p.vocab, scores);
  } else {
    fail(origin, "metadata 'tokenizer.ggml.merges'", "missing (a gpt2 tokenizer needs its merges)");
  }

  if (gpt2) {
    p.kind = "byte-level BPE";
    // No tokenizer.ggml.pre (early conversions: GPT-2, GPT-NeoX): transformers'
    // GPT2Tokenizer pre-tokenizer. Any name llama.cpp does not list, or lists
    // without an exact counterpart here, is refused: never another type's rules.
    PreSpec spec{PreSpec::Shape::GptTwo, {}, false};
    if (!pre.empty()) {
      const auto& specs = pre_specs();
      const auto it = specs.find(pre);
      if (it == specs.end() || !it->second)
        fail(origin, "metadata 'tokenizer.ggml.pre'", "pre-tokenizer {} is not supported", pre);
      spec = *it->second;
    }
    p.bpe.ignore_merges = spec.ignore_merges;
    const bool prefix_space = g.get_bool("tokenizer.ggml.add_space_prefix").value_or(false);
    auto split = [&](const char* re) {
      PreTokenizerStep s{};
      s.kind = PreTokenizerStep::Kind::Split;
      s.regex = std::make_shared<Regex>(re);
      s.behavior = SplitBehavior::Isolated;
      p.pre_tokenizer.steps.push_back(s);
    };
    auto byte_level = [&](bool use_regex) {
      PreTokenizerStep b{};
      b.kind = PreTokenizerStep::Kind::ByteLevel;
      b.add_prefix_space = prefix_space;
      b.use_regex = use_regex;
      p.pre_tokenizer.steps.push_back(b);
    };
    auto digits = [&](bool individual) {
      PreTokenizerStep d{};
      d.kind = PreTokenizerStep::Kind::Digits;
      d.individual_digits = individual;
      p.pre_tokenizer.steps.push_back(d);
    };
    switch (spec.shape) {
      case PreSpec::Shape::Splits:
        for (const char* re : spec.regexes) split(re);
        byte_level(false);
        break;
      case PreSpec::Shape::GptTwo:
        byte_level(true);
        break;
      case PreSpec::Shape::DigitsGptTwo:
        digits(true);
        byte_level(true);
        break;
      case PreSpec::Shape::Falcon: {
        PreTokenizerStep punct{};
        punct.kind = PreTokenizerStep::Kind::Punctuation;
        punct.behavior = SplitBehavior::Contiguous;
        p.pre_tokenizer.steps.push_back(punct);
        byte_level(true);
        digits(false);
        split("[0-9][0-9][0-9]");
        break;
      }
    }
    p.decoder.steps.push_back(DecoderStep::of(DecoderStep::Kind::ByteLevel));
  } else {
    p.kind = "SentencePiece BPE";
    p.bpe.byte_fallback = true;
    p.bpe.fuse_unk = true;
    DecoderStep rep = DecoderStep::of(DecoderStep::Kind::Replace);
    rep.pattern = "\xE2\x96\x81";
    rep.content = " ";
    p.decoder.steps.push_back(rep);
    p.decoder.steps.push_back(DecoderStep::of(DecoderStep::Kind::ByteFallback));
    p.decoder.steps.push_back(DecoderStep::of(DecoderStep::Kind::Fuse));
    if (gemma_pipeline) {
      if (p.vocab->find("<unk>")) p.bpe.unk_token = "<unk>";
      p.normalizer.steps.push_back({NormalizerStep::Kind::Replace, " ", "\xE2\x96\x81"});
      PreTokenizerStep s{};
      s.kind = PreTokenizerStep::Kind::Split;
      s.literal = " ";
      s.behavior = SplitBehavior::MergedWithPrevious;
      p.pre_tokenizer.steps.push_back(s);
    } else {
      DecoderStep strip = DecoderStep::of(DecoderStep::Kind::Strip);
      strip.content = " ";
      strip.start = 1;
      p.decoder.steps.push_back(strip);
      // SentencePiece: the normalizer drops extra whitespace when the model
      // says so, prepends the dummy "▁" to every (non-empty) piece of text
      // (add_dummy_prefix; llama.cpp's add_space_prefix, default on), and
      // spells spaces as "▁"; BPE then runs over the whole piece, whitespace
      // runs included (no pre-tokenizer), as the original tokenizers do.
      if (g.get_bool("tokenizer.ggml.remove_extra_whitespaces").value_or(false))
        p.normalizer.steps.push_back({NormalizerStep::Kind::CollapseSpaces, "", ""});
      if (g.get_bool("tokenizer.ggml.add_space_prefix").value_or(true))
        p.normalizer.steps.push_back({NormalizerStep::Kind::Prepend, "", "\xE2\x96\x81"});
      p.normalizer.steps.push_back({NormalizerStep::Kind::Replace, " ", "\xE2\x96\x81"});
    }
    // Byte fallback only where the vocabulary has the 256 byte pieces; else
    // unknown characters become the unknown token, runs of them one token.
    bool all_bytes = true;
    for (int b = 0; b < 256 && all_bytes; ++b) all_bytes = p.vocab->find(fmt::format("<0x{:02X}>", b)).has_value();
    p.bpe.byte_fallback = all_bytes;
    if (!p.bpe.unk_token) {
      if (const auto unk = g.get_int("tokenizer.ggml.unknown_token_id");
          unk && *unk >= 0 && static_cast<size_t>(*unk) < tokens->size())
        p.bpe.unk_token = (*tokens)[static_cast<size_t>(*unk)];
    }
  }

  // Added tokens.
  std::vector<uint8_t> added(tokens->size(), 0);
  auto add = [&](size_t i, bool special) {
    if (added[i]) return;
    added[i] = 1;
    AddedToken a;
    a.id = static_cast<int32_t>(i);
    a.content = (*tokens)[i];
    a.normalized = false;
    a.special = special;
    p.added.push_back(std::move(a));
  };
  if (types) {
    for (size_t i = 0; i < tokens->size(); ++i)
      if ((*types)[i] == 3 && (!gpt2 || in_byte_alphabet((*tokens)[i]))) add(i, true);
  }
  auto id_key = [&](const char* key) -> std::optional<int32_t> {
    const auto v = g.get_int(key);
    if (!v) return std::nullopt;
    if (*v < 0 || static_cast<size_t>(*v) >= tokens->size())
      fail(origin, fmt::format("metadata '{}'", key), "token id {} is outside the vocabulary ({} tokens)", *v, tokens->size());
    return static_cast<int32_t>(*v);
  };
  p.bos_id = id_key("tokenizer.ggml.bos_token_id");
  p.eos_id = id_key("tokenizer.ggml.eos_token_id");
  for (auto id : {p.bos_id, p.eos_id, id_key("tokenizer.ggml.unknown_token_id"), id_key("tokenizer.ggml.padding_token_id")})
    if (id && (!gpt2 || in_byte_alphabet((*tokens)[*id]))) add(*id, true);
  if (types) {
    for (size_t i = 0; i < tokens->size(); ++i)
      if ((*types)[i] == 4 && p.vocab->find(gpt2 ? spelled[i] : (*tokens)[i])) add(i, false);
  }

  bool add_bos = g.get_bool("tokenizer.ggml.add_bos_token").value_or(*model == "llama");
  if (*model == "gemma4") add_bos = false;
  const bool add_eos = g.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  if (add_bos && p.bos_id) p.prefix = {*p.bos_id};
  if (add_eos && p.eos_id) p.suffix = {*p.eos_id};
  return Tokenizer(std::move(p));
}

}  // namespace tessera::tok
