// Tokenizer::from_json: a Hugging Face tokenizer.json (the `tokenizers`
// serialization) plus, optionally, transformers' tokenizer_config.json.
//
// Supported: model BPE (byte_fallback, unk_token, fuse_unk, ignore_merges; no
// dropout, no subword prefix/suffix); the normalizers, pre-tokenizers and
// decoders listed in their headers; post-processors TemplateProcessing,
// ByteLevel, Sequence, RobertaProcessing/BertProcessing. Anything else is
// rejected with an Error naming the component rather than tokenized wrongly.
//
// BOS/EOS: transformers rebuilds the post-processor from add_bos_token /
// add_eos_token when tokenizer_config.json states either (or when
// tokenizer.json has no post-processor); otherwise the file's own
// post-processor decides.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace tessera::tok {
namespace {

using nlohmann::json;

struct Ctx {
  const std::string& origin;
  [[noreturn]] void unsupported(const std::string& what, const json& node) const {
    fail(origin, what, "unsupported: {}", node.dump().substr(0, 200));
  }
};

std::string str_or(const json& j, const char* key, const std::string& def) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : def;
}
bool bool_or(const json& j, const char* key, bool def) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : def;
}

// {"String": s} or {"Regex": r}: returns (is_regex, text).
std::pair<bool, std::string> pattern_of(const Ctx& c, const json& p, const std::string& what) {
  if (p.is_object() && p.contains("String") && p["String"].is_string()) return {false, p["String"]};
  if (p.is_object() && p.contains("Regex") && p["Regex"].is_string()) return {true, p["Regex"]};
  c.unsupported(what + ".pattern", p);
}

void add_normalizer(const Ctx& c, const json& n, Normalizer& out) {
  if (n.is_null()) return;
  const std::string type = str_or(n, "type", "");
  if (type == "Sequence") {
    for (const auto& s : n.at("normalizers")) add_normalizer(c, s, out);
  } else if (type == "Replace") {
    auto [is_regex, pat] = pattern_of(c, n.at("pattern"), "normalizer Replace");
    if (is_regex) c.unsupported("normalizer Replace with a Regex pattern", n);
    out.steps.push_back({NormalizerStep::Kind::Replace, pat, n.at("content").get<std::string>()});
  } else if (type == "Prepend") {
    out.steps.push_back({NormalizerStep::Kind::Prepend, "", n.at("prepend").get<std::string>()});
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    const auto kind = type == "NFC"    ? NormalizerStep::Kind::NFC
                      : type == "NFD"  ? NormalizerStep::Kind::NFD
                      : type == "NFKC" ? NormalizerStep::Kind::NFKC
                                       : NormalizerStep::Kind::NFKD;
    out.steps.push_back({kind, "", ""});
  } else {
    c.unsupported("normalizer " + type, n);
  }
}

PrependScheme prepend_scheme_of(const Ctx& c, const json& n) {
  if (n.contains("prepend_scheme")) {
    const std::string s = n["prepend_scheme"].get<std::string>();
    if (s == "always") return PrependScheme::Always;
    if (s == "first") return PrependScheme::First;
    if (s == "never") return PrependScheme::Never;
    c.unsupported("Metaspace prepend_scheme", n);
  }
  // Older files: add_prefix_space true = always.
  return bool_or(n, "add_prefix_space", true) ? PrependScheme::Always : PrependScheme::Never;
}

void add_pre_tokenizer(const Ctx& c, const json& n, PreTokenizer& out) {
  if (n.is_null()) return;
  const std::string type = str_or(n, "type", "");
  PreTokenizerStep st{};
  if (type == "Sequence") {
    for (const auto& s : n.at("pretokenizers")) add_pre_tokenizer(c, s, out);
    return;
  } else if (type == "Split") {
    st.kind = PreTokenizerStep::Kind::Split;
    auto [is_regex, pat] = pattern_of(c, n.at("pattern"), "pre_tokenizer Split");
    if (is_regex) st.regex = std::make_shared<Regex>(pat);
    else st.literal = pat;
    const std::string b = n.at("behavior").get<std::string>();
    if (b == "Isolated") st.behavior = SplitBehavior::Isolated;
    else if (b == "Removed") st.behavior = SplitBehavior::Removed;
    else if (b == "MergedWithPrevious") st.behavior = SplitBehavior::MergedWithPrevious;
    else if (b == "MergedWithNext") st.behavior = SplitBehavior::MergedWithNext;
    else if (b == "Contiguous") st.behavior = SplitBehavior::Contiguous;
    else c.unsupported("pre_tokenizer Split behavior", n);
    st.invert = bool_or(n, "invert", false);
  } else if (type == "ByteLevel") {
    st.kind = PreTokenizerStep::Kind::ByteLevel;
    st.add_prefix_space = bool_or(n, "add_prefix_space", true);
    st.use_regex = bool_or(n, "use_regex", true);
  } else if (type == "Metaspace") {
    st.kind = PreTokenizerStep::Kind::Metaspace;
    st.replacement = str_or(n, "replacement", "\xE2\x96\x81");
    st.prepend_scheme = prepend_scheme_of(c, n);
    st.split = bool_or(n, "split", true);
  } else if (type == "Digits") {
    st.kind = PreTokenizerStep::Kind::Digits;
    st.individual_digits = bool_or(n, "individual_digits", false);
  } else if (type == "Punctuation") {
    st.kind = PreTokenizerStep::Kind::Punctuation;
    const std::string b = str_or(n, "behavior", "Isolated");
    if (b == "Isolated") st.behavior = SplitBehavior::Isolated;
    else if (b == "Removed") st.behavior = SplitBehavior::Removed;
    else if (b == "MergedWithPrevious") st.behavior = SplitBehavior::MergedWithPrevious;
    else if (b == "MergedWithNext") st.behavior = SplitBehavior::MergedWithNext;
    else if (b == "Contiguous") st.behavior = SplitBehavior::Contiguous;
    else c.unsupported("pre_tokenizer Punctuation behavior", n);
  } else {
    c.unsupported("pre_tokenizer " + type, n);
  }
  out.steps.push_back(std::move(st));
}

void add_decoder(const Ctx& c, const json& n, Decoder& out) {
  const std::string type = str_or(n, "type", "");
  DecoderStep st{};
  if (type == "Sequence") {
    for (const auto& s : n.at("decoders")) add_decoder(c, s, out);
    return;
  } else if (type == "ByteLevel") {
    st.kind = DecoderStep::Kind::ByteLevel;
  } else if (type == "Replace") {
    st.kind = DecoderStep::Kind::Replace;
    auto [is_regex, pat] = pattern_of(c, n.at("pattern"), "decoder Replace");
    if (is_regex) c.unsupported("decoder Replace with a Regex pattern", n);
    st.pattern = pat;
    st.content = n.at("content").get<std::string>();
  } else if (type == "ByteFallback") {
    st.kind = DecoderStep::Kind::ByteFallback;
  } else if (type == "Fuse") {
    st.kind = DecoderStep::Kind::Fuse;
  } else if (type == "Strip") {
    st.kind = DecoderStep::Kind::Strip;
    st.content = n.at("content").get<std::string>();
    st.start = n.at("start").get<size_t>();
    st.stop = n.at("stop").get<size_t>();
  } else if (type == "Metaspace") {
    st.kind = DecoderStep::Kind::Metaspace;
    st.replacement = str_or(n, "replacement", "\xE2\x96\x81");
    st.prepend_scheme = prepend_scheme_of(c, n);
  } else {
    c.unsupported("decoder " + type, n);
  }
  out.steps.push_back(std::move(st));
}

// Token id of `content` in the vocabulary or the added tokens.
int32_t id_of(const Ctx& c, const Tokenizer::Parts& p, const std::string& content, const std::string& what) {
  for (const auto& t : p.added)
    if (t.content == content) return t.id;
  if (auto id = p.vocab->find(content)) return *id;
  fail(c.origin, what, "token {:?} is not in the vocabulary", content);
}

void add_post_processor(const Ctx& c, const json& n, Tokenizer::Parts& p) {
  if (n.is_null()) return;
  const std::string type = str_or(n, "type", "");
  if (type == "Sequence") {
    for (const auto& s : n.at("processors")) add_post_processor(c, s, p);
  } else if (type == "ByteLevel") {
    // Offsets only: no ids change.
  } else if (type == "TemplateProcessing") {
    p.prefix.clear();
    p.suffix.clear();
    bool seen_a = false;
    for (const auto& item : n.at("single")) {
      if (item.contains("Sequence")) {
        if (item["Sequence"].at("id") != "A") c.unsupported("TemplateProcessing single", n);
        seen_a = true;
      } else if (item.contains("SpecialToken")) {
        const std::string name = item["SpecialToken"].at("id").get<std::string>();
        const auto& specials = n.at("special_tokens");
        if (!specials.contains(name)) fail(c.origin, "post_processor", "special token {:?} is not defined", name);
        for (const auto& id : specials[name].at("ids")) (seen_a ? p.suffix : p.prefix).push_back(id.get<int32_t>());
      } else {
        c.unsupported("TemplateProcessing item", item);
      }
    }
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    p.prefix = {n.at("cls").at(1).get<int32_t>()};
    p.suffix = {n.at("sep").at(1).get<int32_t>()};
  } else {
    c.unsupported("post_processor " + type, n);
  }
}

std::optional<std::string> config_token(const json* cfg, const char* key) {
  if (!cfg || !cfg->contains(key)) return std::nullopt;
  const json& v = (*cfg)[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

}  // namespace

Tokenizer Tokenizer::from_json(const json& j, const json* config, const std::string& origin) {
  const Ctx c{origin};
  try {
    Parts p;
    p.vocab = std::make_shared<Vocab>();
    const json& model = j.at("model");
    const std::string mtype = str_or(model, "type", "BPE");
    if (mtype != "BPE") c.unsupported("model " + mtype, json(mtype));
    p.model = mtype;
    if (model.contains("dropout") && !model["dropout"].is_null()) c.unsupported("BPE dropout", model["dropout"]);
    if (!str_or(model, "continuing_subword_prefix", "").empty() || !str_or(model, "end_of_word_suffix", "").empty())
      c.unsupported("BPE continuing_subword_prefix / end_of_word_suffix", json(nullptr));
    for (const auto& [piece, id] : model.at("vocab").items()) {
      const int64_t v = id.get<int64_t>();
      if (v < 0 || v > (int64_t{1} << 24)) fail(origin, "model.vocab", "id {} of {:?} is out of range", v, piece);
      p.vocab->set(static_cast<int32_t>(v), piece);
    }
    for (const auto& m : model.at("merges")) {
      if (m.is_string()) {
        const std::string s = m.get<std::string>();
        const size_t sp = s.find(' ');
        if (sp == std::string::npos) fail(origin, "model.merges", "merge {:?} has no space", s);
        p.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else {
        p.merges.emplace_back(m.at(0).get<std::string>(), m.at(1).get<std::string>());
      }
    }
    p.bpe.byte_fallback = bool_or(model, "byte_fallback", false);
    p.bpe.fuse_unk = bool_or(model, "fuse_unk", false);
    p.bpe.ignore_merges = bool_or(model, "ignore_merges", false);
    if (model.contains("unk_token") && model["unk_token"].is_string()) p.bpe.unk_token = model["unk_token"].get<std::string>();

    if (j.contains("added_tokens")) {
      for (const auto& t : j["added_tokens"]) {
        AddedToken a;
        a.id = t.at("id").get<int32_t>();
        a.content = t.at("content").get<std::string>();
        a.single_word = bool_or(t, "single_word", false);
        a.lstrip = bool_or(t, "lstrip", false);
        a.rstrip = bool_or(t, "rstrip", false);
        a.normalized = bool_or(t, "normalized", true);
        a.special = bool_or(t, "special", false);
        if (a.id < 0 || a.id > (1 << 24)) fail(origin, "added_tokens", "id {} out of range", a.id);
        p.added.push_back(std::move(a));
      }
    }
    if (j.contains("normalizer")) add_normalizer(c, j["normalizer"], p.normalizer);
    if (j.contains("pre_tokenizer")) add_pre_tokenizer(c, j["pre_tokenizer"], p.pre_tokenizer);
    if (!j.contains("decoder") || j["decoder"].is_null()) p.has_decoder = false;
    else add_decoder(c, j["decoder"], p.decoder);

    const bool explicit_flags = config && (config->contains("add_bos_token") || config->contains("add_eos_token"));
    const bool no_post = !j.contains("post_processor") || j["post_processor"].is_null();
    const auto bos = config_token(config, "bos_token"), eos = config_token(config, "eos_token");
    if (bos) p.bos_id = id_of(c, p, *bos, "bos_token");
    if (eos) p.eos_id = id_of(c, p, *eos, "eos_token");
    if (explicit_flags || no_post) {
      auto flag = [&](const char* k) { return config && config->contains(k) && (*config)[k].is_boolean() && (*config)[k].get<bool>(); };
      if (flag("add_bos_token") && p.bos_id) p.prefix = {*p.bos_id};
      if (flag("add_eos_token") && p.eos_id) p.suffix = {*p.eos_id};
    } else {
      add_post_processor(c, j["post_processor"], p);
    }
    bool byte_level = false;
    for (const auto& st : p.pre_tokenizer.steps) byte_level = byte_level || st.kind == PreTokenizerStep::Kind::ByteLevel;
    p.kind = byte_level ? "byte-level BPE" : p.bpe.byte_fallback ? "SentencePiece BPE" : "BPE";
    return Tokenizer(std::move(p));
  } catch (const nlohmann::json::exception& e) {
    fail(origin, "tokenizer.json", "malformed: {}", e.what());
  }
}

}  // namespace tessera::tok
