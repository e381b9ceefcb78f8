#include "tokenizer/normalizer.h"

namespace tessera::tok {

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
    }
  }
  return s;
}

}  // namespace tessera::tok
