// Decoders of tokenizer.json: turn the pieces of a token sequence back into
// text. Each step maps a list of strings to a list of strings, as in the
// reference; the result is their concatenation. Added tokens go through the
// chain like any other token (that is what tokenizers 0.2x does).
//   ByteLevel     pieces -> their GPT-2 bytes, all concatenated, then UTF-8
//                 with U+FFFD for ill-formed subparts (from_utf8_lossy)
//   Replace       literal replacement in every piece ("▁" -> " ")
//   ByteFallback  runs of "<0xXX>" pieces -> their bytes as one string when
//                 valid UTF-8, else one U+FFFD per byte of the run
//   Fuse          all pieces -> one
//   Strip         remove up to `start` leading / `stop` trailing `content`
//                 characters of every piece
//   Metaspace     "▁" -> " ", except in the first piece, where (unless the
//                 prepend scheme is never) every "▁" is dropped
#pragma once

#include <string>
#include <vector>

#include "tokenizer/pretokenizer.h"

namespace tessera::tok {

struct DecoderStep {
  enum class Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace } kind = Kind::Fuse;
  static DecoderStep of(Kind k) {
    DecoderStep s;
    s.kind = k;
    return s;
  }
  std::string pattern, content;  // Replace; Strip uses content (one character)
  size_t start = 0, stop = 0;    // Strip
  std::string replacement = "\xE2\x96\x81";  // Metaspace
  PrependScheme prepend_scheme = PrependScheme::Always;
};

struct Decoder {
  std::vector<DecoderStep> steps;
  std::string decode(std::vector<std::string> pieces) const;
};

// "<0x41>" -> 0x41; -1 when `piece` is not a byte-fallback token.
int parse_byte_piece(const std::string& piece);

}  // namespace tessera::tok
