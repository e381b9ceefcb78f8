// Streaming detokenizer: text is emitted as token ids arrive, and never a
// broken UTF-8 sequence.
//
// Each token is turned into bytes the way the decoder chain would turn it:
//   * byte-level vocabularies: the piece's GPT-2 bytes;
//   * SentencePiece vocabularies: "<0xXX>" pieces are one raw byte, "▁"
//     becomes a space (Replace), and Strip / Metaspace drop the leading space
//     of the first token(s), as the non-streaming decoder does;
// then appended to a pending byte buffer. push() returns the longest prefix of
// the buffer that is complete UTF-8 and keeps an incomplete trailing sequence
// (a character split across byte-fallback or byte-level tokens) until the
// bytes that complete it arrive. A sequence that can no longer become valid
// is emitted as U+FFFD per maximal ill-formed subpart (as from_utf8_lossy),
// and finish() flushes a trailing incomplete sequence the same way.
//
// The concatenation of everything emitted equals Tokenizer::decode(ids)
// whenever the decoded bytes are valid UTF-8 (the normal case). For invalid
// byte-fallback runs the reference ByteFallback decoder writes one U+FFFD per
// byte token; the stream writes one per maximal subpart, so the count of
// U+FFFD may differ there.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace tessera::tok {

class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tokenizer);

  // Feeds one id; returns the text that became complete (possibly empty).
  // Throws Error for an id outside the vocabulary.
  std::string push(int32_t id);
  // Flushes what is pending (incomplete sequences as U+FFFD) and resets.
  std::string finish();
  void reset();
  // The bytes token `id` adds in the middle of a text (no leading space
  // dropped as at the text's start): what a grammar matcher sees of it
  // (generation/output_constraint.h). Throws Error for an id outside the
  // vocabulary.
  std::string bytes_of(int32_t id) const { return piece_bytes(id, false); }

 private:
  std::string token_bytes(int32_t id);
  std::string piece_bytes(int32_t id, bool drop_space) const;
  std::string drain(bool final);

  const Tokenizer& tok_;
  bool byte_level_ = false;
  std::string space_from_;      // Replace pattern ("▁") turned into " ", if any
  size_t strip_leading_ = 0;    // Strip decoder: leading spaces to drop from the text start
  bool metaspace_first_ = false;  // Metaspace decoder: drop "▁" in the first token
  size_t tokens_seen_ = 0;
  size_t stripped_ = 0;           // leading spaces dropped so far
  bool text_started_ = false;     // a non-space byte has been emitted
  std::string pending_;
};

}  // namespace tessera::tok
