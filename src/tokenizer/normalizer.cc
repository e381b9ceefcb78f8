#include "tokenizer/normalizer.h"

#include <cstdlib>

#include <utf8proc.h>

namespace tessera::tok {
namespace {

// `s` (valid UTF-8) in a Unicode normal form; ASCII is already normalized.
std::string normal_form(const std::string& s, int options) {
  bool ascii = true;
  for (char c : s) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return s;
  utf8proc_uint8_t* out = nullptr;
  const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                              static_cast<utf8proc_ssize_t>(s.size()), &out,
                              static_cast<utf8proc_option_t>(UTF8PROC_STABLE | options));
  if (n < 0) return s;  // cannot happen for valid UTF-8
  std::string r(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return r;
}

}  // namespace

std::string Normalizer::apply(std::string s) const {
  for (const auto& st : steps) {
    switch (st.kind) {
      case NormalizerStep::Kind::Replace: {
        if (st.pattern.empty() || s.find(st.pattern) == std::string::npos) break;
        std::string out;
        out.reserve(s.size() + s.size() / 2);
        size_t pos = 0;
        for (size_t hit; (hit = s.find(st.pattern, pos)) != std::string::npos; pos = hit + st.pattern.size()) {
          out.append(s, pos, hit - pos);
          out += st.content;
        }
        out.append(s, pos, std::string::npos);
        s = std::move(out);
        break;
      }
      case NormalizerStep::Kind::Prepend:
        if (!s.empty()) s.insert(0, st.content);
        break;
      case NormalizerStep::Kind::CollapseSpaces: {
        std::string out;
        out.reserve(s.size());
        for (char c : s) {
          if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
          out += c;
        }
        while (!out.empty() && out.back() == ' ') out.pop_back();
        s = std::move(out);
        break;
      }
      case NormalizerStep::Kind::NFC: s = normal_form(s, UTF8PROC_COMPOSE); break;
      case NormalizerStep::Kind::NFD: s = normal_form(s, UTF8PROC_DECOMPOSE); break;
      case NormalizerStep::Kind::NFKC: s = normal_form(s, UTF8PROC_COMPOSE | UTF8PROC_COMPAT); break;
      case NormalizerStep::Kind::NFKD: s = normal_form(s, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT); break;
    }
  }
  return s;
}

}  // namespace tessera::tok
