#include "tokenizer/detokenizer.h"

#include "core/utf8.h"
#include "tokenizer/byte_level.h"

namespace tessera::tok {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer) : tok_(tokenizer) {
  for (const auto& st : tok_.decoder().steps) {
    switch (st.kind) {
      case DecoderStep::Kind::ByteLevel: byte_level_ = true; break;
      case DecoderStep::Kind::Replace:
        if (st.content == " ") space_from_ = st.pattern;
        break;
      case DecoderStep::Kind::Strip:
        if (st.content == " ") strip_leading_ = st.start;
        break;
      case DecoderStep::Kind::Metaspace:
        space_from_ = st.replacement;
        metaspace_first_ = st.prepend_scheme != PrependScheme::Never;
        break;
      default: break;
    }
  }
}

void StreamingDetokenizer::reset() {
  tokens_seen_ = 0;
  stripped_ = 0;
  text_started_ = false;
  pending_.clear();
}

std::string StreamingDetokenizer::token_bytes(int32_t id) {
  return piece_bytes(id, metaspace_first_ && tokens_seen_ == 0);
}

std::string StreamingDetokenizer::piece_bytes(int32_t id, bool drop_space) const {
  const std::string piece(tok_.token_to_piece(id));
  if (byte_level_) {
    std::string b;
    if (byte_level_table().decode(piece, b)) return b;
    return piece;
  }
  const int byte = parse_byte_piece(piece);
  if (byte >= 0) return std::string(1, static_cast<char>(byte));
  if (space_from_.empty() || piece.find(space_from_) == std::string::npos) return piece;
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = piece.find(space_from_, pos)) != std::string::npos; pos = hit + space_from_.size()) {
    out.append(piece, pos, hit - pos);
    if (!drop_space) out += ' ';
  }
  out.append(piece, pos, std::string::npos);
  return out;
}

std::string StreamingDetokenizer::drain(bool final) {
  std::string out;
  size_t i = 0;
  while (i < pending_.size()) {
    const size_t n = utf8_valid_len(pending_, i);
    if (n > 0) {
      out.append(pending_, i, n);
      i += n;
      continue;
    }
    // Incomplete but possibly valid at the end: wait for more bytes.
    if (!final && utf8_complete_prefix(std::string_view(pending_).substr(i)) == 0) break;
    out += "\xEF\xBF\xBD";
    i += utf8_invalid_len(pending_, i);
  }
  pending_.erase(0, i);
  return out;
}

std::string StreamingDetokenizer::push(int32_t id) {
  std::string bytes = token_bytes(id);
  ++tokens_seen_;
  // Strip: the reference strips leading spaces of the whole decoded text.
  while (!text_started_ && stripped_ < strip_leading_ && !bytes.empty() && bytes[0] == ' ') {
    bytes.erase(0, 1);
    ++stripped_;
  }
  if (!bytes.empty()) text_started_ = true;
  pending_ += bytes;
  return drain(false);
}

std::string StreamingDetokenizer::finish() {
  std::string out = drain(true);
  reset();
  return out;
}

}  // namespace tessera::tok
