#include "tokenizer/tokenizer.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/utf8.h"
#include "sources/gguf.h"

namespace tessera::tok {

Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer::Tokenizer(Parts p)
    : vocab_(p.vocab),
      normalizer_(std::move(p.normalizer)),
      pre_(std::move(p.pre_tokenizer)),
      decoder_(std::move(p.decoder)),
      has_decoder_(p.has_decoder),
      added_(std::move(p.added)),
      prefix_(std::move(p.prefix)),
      suffix_(std::move(p.suffix)),
      bos_id_(p.bos_id),
      eos_id_(p.eos_id),
      kind_(std::move(p.kind)),
      model_(std::move(p.model)) {
  bpe_ = p.merge_ids.empty() ? std::make_unique<Bpe>(vocab_, p.merges, p.bpe)
                             : std::make_unique<Bpe>(vocab_, p.merge_ids, p.bpe);
  vocab_size_ = vocab_->size();
  for (const auto& t : added_) {
    if (t.id < 0) continue;
    vocab_size_ = std::max(vocab_size_, static_cast<size_t>(t.id) + 1);
    // The added vocabulary answers first for its ids, as in the reference.
    added_pieces_[t.id] = t.content;
  }
  special_.assign(vocab_size_, 0);
  std::vector<std::pair<std::string, const AddedToken*>> raw, norm;
  for (const auto& t : added_) {
    if (t.special && t.id >= 0) special_[t.id] = 1;
    if (t.normalized) norm.emplace_back(normalizer_.apply(t.content), &t);
    else raw.emplace_back(t.content, &t);
  }
  raw_matcher_.build(raw);
  normalized_matcher_.build(norm);
}

std::string_view Tokenizer::token_to_piece(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= vocab_size_)
    fail("tokenizer", fmt::format("token {}", id), "id is outside the vocabulary (size {})", vocab_size_);
  if (auto it = added_pieces_.find(id); it != added_pieces_.end()) return it->second;
  return static_cast<size_t>(id) < vocab_->size() ? vocab_->piece(id) : std::string_view();
}

std::optional<int32_t> Tokenizer::piece_to_token(std::string_view piece) const {
  for (const auto& t : added_)
    if (t.content == piece) return t.id;
  return vocab_->find(piece);
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < special_.size() && special_[id];
}

void Tokenizer::encode_segment(std::string_view text, bool at_start, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  const std::string normalized = normalizer_.empty() ? std::string(text) : normalizer_.apply(std::string(text));
  std::vector<Piece> words;
  auto pretokenize = [&](std::string_view s, bool start) {
    words.clear();
    pre_.apply(Piece{std::string(s), start, false}, words);
    for (const auto& w : words) {
      if (w.byte_level) bpe_->tokenize_bytes(w.text, out);
      else bpe_->tokenize(w.text, out);
    }
  };
  if (normalized_matcher_.empty()) {
    pretokenize(normalized, at_start);
    return;
  }
  for (const auto& seg : normalized_matcher_.split(normalized)) {
    if (seg.id >= 0) out.push_back(seg.id);
    else pretokenize(std::string_view(normalized).substr(seg.b, seg.e - seg.b), at_start && seg.b == 0);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view input, bool add_special) const {
  const std::string text = utf8_lossy(input);
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special) out.insert(out.end(), prefix_.begin(), prefix_.end());
  if (raw_matcher_.empty()) {
    encode_segment(text, true, out);
  } else {
    for (const auto& seg : raw_matcher_.split(text)) {
      if (seg.id >= 0) out.push_back(seg.id);
      else encode_segment(std::string_view(text).substr(seg.b, seg.e - seg.b), seg.b == 0, out);
    }
  }
  if (add_special) out.insert(out.end(), suffix_.begin(), suffix_.end());
  return out;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::vector<std::string> pieces;
  pieces.reserve(ids.size());
  for (int32_t id : ids) pieces.emplace_back(token_to_piece(id));
  if (!has_decoder_) {
    std::string out;
    for (size_t i = 0; i < pieces.size(); ++i) out += (i ? " " : "") + pieces[i];
    return out;
  }
  return decoder_.decode(std::move(pieces));
}

Tokenizer Tokenizer::from_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p(path);
  if (fs::is_directory(p, ec)) p /= "tokenizer.json";
  if (!fs::is_regular_file(p, ec)) fail(path, "tokenizer", "no such file (expected a GGUF, a tokenizer.json or a directory holding one)");
  std::ifstream in(p, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  if (in.gcount() == 4 && std::string_view(magic, 4) == "GGUF") {
    in.close();
    return from_gguf(GgufFile::open(p.string()));
  }
  in.seekg(0);
  nlohmann::json j, config;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail(p.string(), "tokenizer", "not a GGUF file and not valid JSON: {}", e.what());
  }
  const fs::path cfg = p.parent_path() / "tokenizer_config.json";
  bool have_cfg = false;
  if (fs::is_regular_file(cfg, ec)) {
    std::ifstream cin(cfg, std::ios::binary);
    try {
      config = nlohmann::json::parse(cin);
      have_cfg = config.is_object();
    } catch (const nlohmann::json::exception& e) {
      fail(cfg.string(), "tokenizer config", "invalid JSON: {}", e.what());
    }
  }
  return from_json(j, have_cfg ? &config : nullptr, p.string());
}

}  // namespace tessera::tok
