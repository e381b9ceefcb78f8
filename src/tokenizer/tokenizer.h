// The assembled tokenizer: added-token split -> normalizer -> pre-tokenizer ->
// BPE -> post-processor (BOS/EOS), and the reverse through the decoder chain.
// Built from a tokenizer.json (+ tokenizer_config.json) or from a GGUF file's
// tokenizer.ggml.* metadata; both produce the ids Hugging Face produces
// (tokenizers / transformers AutoTokenizer) for the same files.
//
// Defined behaviour on hostile input:
//   * Ill-formed UTF-8 in encode() is first repaired the way Rust's
//     String::from_utf8_lossy does (each maximal ill-formed subpart becomes
//     U+FFFD), then tokenized; nothing is dropped silently, nothing crashes.
//   * Text that looks like a special token but is not in the vocabulary
//     ("<|nonexistent|>") is ordinary text and is tokenized piece by piece.
//   * decode() of an id outside the vocabulary throws Error; the streaming
//     detokenizer (detokenizer.h) does the same.
//   * Input size is bounded only by memory: time is O(n log n) in the length
//     of the longest pre-tokenized word and linear in the number of words.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/vocab.h"

namespace tessera {
class GgufFile;
}

namespace tessera::tok {

class Tokenizer {
 public:
  // A GGUF file, a tokenizer.json, or a directory holding tokenizer.json
  // (tokenizer_config.json beside it is read when present).
  static Tokenizer from_file(const std::string& path);
  static Tokenizer from_gguf(const GgufFile& gguf);
  // `config` (tokenizer_config.json) may be null. `origin` names the input in errors.
  static Tokenizer from_json(const nlohmann::json& tokenizer, const nlohmann::json* config,
                             const std::string& origin);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Token ids of `text`; add_special applies the post-processor (BOS/EOS) as
  // HF encode(add_special_tokens=True) does.
  std::vector<int32_t> encode(std::string_view text, bool add_special = true) const;
  // Text of `ids` through the decoder chain (special tokens kept, as
  // transformers' decode(skip_special_tokens=False)).
  std::string decode(const std::vector<int32_t>& ids) const;

  size_t vocab_size() const { return vocab_size_; }
  // The stored spelling of a token ("Ġthe", "▁the", "<0x0A>", "<|im_end|>"),
  // valid as long as the tokenizer.
  std::string_view token_to_piece(int32_t id) const;
  std::optional<int32_t> piece_to_token(std::string_view piece) const;
  bool is_special(int32_t id) const;
  std::optional<int32_t> bos_id() const { return bos_id_; }
  std::optional<int32_t> eos_id() const { return eos_id_; }
  const std::string& kind() const { return kind_; }  // "byte-level BPE" / "SentencePiece BPE"
  // The tokenizer model as its source names it: a GGUF's tokenizer.ggml.model
  // ("gpt2", "llama"), a tokenizer.json's model.type ("BPE").
  const std::string& model() const { return model_; }
  const Decoder& decoder() const { return decoder_; }
  const std::vector<AddedToken>& added_tokens() const { return added_; }

  // Parts, for loaders.
  struct Parts {
    std::shared_ptr<Vocab> vocab;
    std::vector<std::pair<std::string, std::string>> merges;
    std::vector<Bpe::MergeIds> merge_ids;  // used instead of `merges` when set (merges recovered from scores)
    BpeOptions bpe;
    Normalizer normalizer;
    PreTokenizer pre_tokenizer;
    Decoder decoder;
    bool has_decoder = true;
    std::vector<AddedToken> added;
    std::vector<int32_t> prefix, suffix;  // post-processor ids around the sequence
    std::optional<int32_t> bos_id, eos_id;
    std::string kind;
    std::string model;
  };
  explicit Tokenizer(Parts parts);

 private:
  void encode_segment(std::string_view text, bool at_start, std::vector<int32_t>& out) const;

  std::shared_ptr<const Vocab> vocab_;
  std::unique_ptr<Bpe> bpe_;
  Normalizer normalizer_;
  PreTokenizer pre_;
  Decoder decoder_;
  bool has_decoder_ = true;
  std::vector<AddedToken> added_;
  size_t vocab_size_ = 0;             // the vocabulary's ids and the added ones
  std::unordered_map<int32_t, std::string> added_pieces_;  // added tokens' content, answering before the vocabulary
  std::vector<uint8_t> special_;      // id -> special added token
  AddedTokenMatcher raw_matcher_, normalized_matcher_;
  std::vector<int32_t> prefix_, suffix_;
  std::optional<int32_t> bos_id_, eos_id_;
  std::string kind_;
  std::string model_;
};

}  // namespace tessera::tok
