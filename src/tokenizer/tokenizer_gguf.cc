// Tokenizer::from_gguf: the tokenizer a GGUF file's tokenizer.ggml.* metadata
// describes, built the way transformers builds it (AutoTokenizer with
// gguf_file=..., integrations/gguf/gguf_tokenizer_mapping.py), so that ids
// match Hugging Face exactly:
//
//   tokenizer.ggml.model "gpt2" -> byte-level BPE. Tokens not spelled in the
//     GPT-2 byte alphabet are respelled from their UTF-8 bytes; merges come
//     from tokenizer.ggml.merges. tokenizer.ggml.pre picks the split regex
//     (llama-bpe, qwen2, qwen35, tekken, gpt-4o, ...); any other value keeps
//     GPT2Tokenizer's ByteLevel pre-tokenizer with the GPT-2 regex.
//   tokenizer.ggml.model "llama" (and "gemma4") -> SentencePiece-style BPE
//     with byte fallback. Gemma 1-3 (by general.architecture) take Gemma's
//     pipeline (" " -> "▁", no prefix space); other archs Llama's (Metaspace
//     prepend_scheme first, decoder strips one leading space); phi3 its own.
//     Without tokenizer.ggml.merges the merges are recovered from the
//     vocabulary (transformers' generate_merges): every split of every token
//     into two vocabulary pieces is a merge, ranked by the token's score, best
//     first (Gemma: by file position instead, its scores do not follow merge
//     order), then by longer left piece, then longer right piece.
//   Added tokens: every CONTROL token (type 3; for gpt2 only those spelled in
//     the byte alphabet) is a special added token; every USER_DEFINED token
//     (type 4) still present in the vocabulary a non-special one; both match
//     on raw text. The bos/eos/unk/pad tokens named by id are special too.
//   BOS/EOS: tokenizer.ggml.add_bos_token / add_eos_token (an SPM vocabulary
//     without the flag adds BOS, as llama.cpp and transformers do; gemma4
//     never does).
#include <algorithm>
#include <unordered_map>

#include "core/error.h"
#include "sources/gguf.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace tessera::tok {
namespace {

constexpr const char* kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kTekkenSplit =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt4oSplit =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

const char* split_for_pre(const std::string& pre) {
  static const std::unordered_map<std::string, const char*> table = {
      {"llama3", kLlama3Split},      {"llama-v3", kLlama3Split},    {"llama-bpe", kLlama3Split},
      {"falcon3", kLlama3Split},     {"falcon-h1", kLlama3Split},   {"pixtral", kLlama3Split},
      {"midm-2.0", kLlama3Split},    {"lfm2", kLlama3Split},        {"jina-v5-nano", kLlama3Split},
      {"dbrx", kLlama3Split},        {"smaug-bpe", kLlama3Split},   {"tekken", kTekkenSplit},
      {"qwen2", kQwen2Pattern},      {"deepseek-r1-qwen", kQwen2Pattern}, {"kormo", kQwen2Pattern},
      {"f2llmv2", kQwen2Pattern},    {"megrez", kQwen2Pattern},     {"qwen35", kQwen35Pattern},
      {"gpt-4o", kGpt4oSplit},       {"llama4", kGpt4oSplit},       {"kanana2", kGpt4oSplit},
      {"talkie", kGpt4oSplit},       {"minimax-m2", kGpt4oSplit},
  };
  auto it = table.find(pre);
  return it == table.end() ? nullptr : it->second;
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
      for (size_t k = 0, n = utf8_count_chars(t); k < n; ++k) s += "\xE2\x96\x81";
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
    if (const char* split = split_for_pre(pre)) {
      PreTokenizerStep s{};
      s.kind = PreTokenizerStep::Kind::Split;
      s.regex = std::make_shared<Regex>(split);
      s.behavior = SplitBehavior::Isolated;
      p.pre_tokenizer.steps.push_back(s);
      PreTokenizerStep b{};
      b.kind = PreTokenizerStep::Kind::ByteLevel;
      b.add_prefix_space = false;
      b.use_regex = false;
      p.pre_tokenizer.steps.push_back(b);
    } else {
      PreTokenizerStep b{};
      b.kind = PreTokenizerStep::Kind::ByteLevel;
      b.add_prefix_space = false;
      b.use_regex = true;
      p.pre_tokenizer.steps.push_back(b);
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
      if (arch == "phi3") {
        p.normalizer.steps.push_back({NormalizerStep::Kind::Prepend, "", "\xE2\x96\x81"});
        p.normalizer.steps.push_back({NormalizerStep::Kind::Replace, " ", "\xE2\x96\x81"});
      } else {
        PreTokenizerStep m{};
        m.kind = PreTokenizerStep::Kind::Metaspace;
        m.prepend_scheme = PrependScheme::First;
        m.split = false;
        p.pre_tokenizer.steps.push_back(m);
      }
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
      if ((*types)[i] == 4 && p.vocab->find((*tokens)[i])) add(i, false);
  }

  bool add_bos = g.get_bool("tokenizer.ggml.add_bos_token").value_or(*model == "llama");
  if (*model == "gemma4") add_bos = false;
  const bool add_eos = g.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  if (add_bos && p.bos_id) p.prefix = {*p.bos_id};
  if (add_eos && p.eos_id) p.suffix = {*p.eos_id};
  return Tokenizer(std::move(p));
}

}  // namespace tessera::tok
