#include "tokenizer/decoder.h"

#include "core/utf8.h"
#include "tokenizer/byte_level.h"

namespace tessera::tok {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string replace_all(const std::string& s, const std::string& pat, const std::string& with) {
  if (pat.empty() || s.find(pat) == std::string::npos) return s;
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(pat, pos)) != std::string::npos; pos = hit + pat.size()) {
    out.append(s, pos, hit - pos);
    out += with;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

}  // namespace

int parse_byte_piece(const std::string& piece) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return -1;
  const int hi = hex_digit(piece[3]), lo = hex_digit(piece[4]);
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

std::string Decoder::decode(std::vector<std::string> pieces) const {
  for (const auto& st : steps) {
    switch (st.kind) {
      case DecoderStep::Kind::ByteLevel: {
        const auto& table = byte_level_table();
        std::string bytes;
        for (const auto& p : pieces) {
          std::string b;
          if (table.decode(p, b)) bytes += b;
          else bytes += p;
        }
        pieces.assign(1, utf8_lossy(bytes));
        break;
      }
      case DecoderStep::Kind::Replace:
        for (auto& p : pieces) p = replace_all(p, st.pattern, st.content);
        break;
      case DecoderStep::Kind::ByteFallback: {
        std::vector<std::string> out;
        std::string run;
        size_t run_len = 0;
        auto flush = [&] {
          if (run_len == 0) return;
          if (utf8_is_valid(run)) out.push_back(run);
          else
            for (size_t k = 0; k < run_len; ++k) out.push_back("\xEF\xBF\xBD");
          run.clear();
          run_len = 0;
        };
        for (auto& p : pieces) {
          const int b = parse_byte_piece(p);
          if (b >= 0) {
            run += static_cast<char>(b);
            ++run_len;
          } else {
            flush();
            out.push_back(std::move(p));
          }
        }
        flush();
        pieces = std::move(out);
        break;
      }
      case DecoderStep::Kind::Fuse: {
        std::string all;
        for (const auto& p : pieces) all += p;
        pieces.assign(1, std::move(all));
        break;
      }
      case DecoderStep::Kind::Strip:
        for (auto& p : pieces) {
          size_t b = 0;
          for (size_t k = 0; k < st.start && p.compare(b, st.content.size(), st.content) == 0 && !st.content.empty(); ++k)
            b += st.content.size();
          size_t e = p.size();
          for (size_t k = 0; k < st.stop && e >= b + st.content.size() && !st.content.empty() &&
                             p.compare(e - st.content.size(), st.content.size(), st.content) == 0;
               ++k)
            e -= st.content.size();
          p = p.substr(b, e - b);
        }
        break;
      case DecoderStep::Kind::Metaspace:
        for (size_t i = 0; i < pieces.size(); ++i) {
          const bool drop = i == 0 && st.prepend_scheme != PrependScheme::Never;
          pieces[i] = replace_all(pieces[i], st.replacement, drop ? "" : " ");
        }
        break;
    }
  }
  std::string out;
  for (const auto& p : pieces) out += p;
  return out;
}

}  // namespace tessera::tok
