#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"

namespace tessera::tok {
namespace {

// Unicode White_Space, the set Rust's char::is_whitespace and Oniguruma's \s use.
constexpr const char* kWhiteSpace =
    "\\t\\n\\x{0B}\\x{0C}\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}"
    "\\x{202F}\\x{205F}\\x{3000}";

}  // namespace

std::string rewrite_whitespace_classes(const std::string& p) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[i + 1];
      if (n == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (n == 'S' && !in_class) {
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += c;
        out += n;
      }
      ++i;
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal, not the end of the class.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

struct Regex::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
};

Regex::Regex(const std::string& pattern) : pattern_(pattern), impl_(std::make_unique<Impl>()) {
  const std::string rewritten = rewrite_whitespace_classes(pattern);
  int err = 0;
  PCRE2_SIZE off = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                              PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
  if (impl_->code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    fail("tokenizer", "pre-tokenizer regex", "pattern {:?} does not compile at offset {}: {}",
         pattern, off, reinterpret_cast<const char*>(msg));
  }
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() {
  if (impl_ && impl_->code) pcre2_code_free(impl_->code);
}

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  out.clear();
  // One match-data block per thread and pattern would be ideal; a thread-local
  // block sized for the largest pattern keeps allocation out of the loop.
  thread_local struct MatchData {
    pcre2_match_data* md = pcre2_match_data_create(16, nullptr);
    ~MatchData() { pcre2_match_data_free(md); }
  } tl;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos <= text.size()) {
    // The text was validated once by the caller: skip PCRE2's per-call check
    // (it would make the scan quadratic).
    const int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), pos,
                                                PCRE2_NO_UTF_CHECK, tl.md, nullptr)
                              : pcre2_match(impl_->code, subject, text.size(), pos,
                                            PCRE2_NO_UTF_CHECK, tl.md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
      fail("tokenizer", "pre-tokenizer regex", "matching failed (PCRE2 error {})", rc);
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(tl.md);
    const size_t b = ov[0], e = ov[1];
    if (e > b) {
      out.emplace_back(b, e);
      pos = e;
    } else {
      // Empty match: step one character forward.
      if (b >= text.size()) break;
      size_t step = 1;
      while (b + step < text.size() && (static_cast<uint8_t>(text[b + step]) & 0xC0) == 0x80) ++step;
      pos = b + step;
    }
  }
}

}  // namespace tessera::tok
