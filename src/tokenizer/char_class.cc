#include "tokenizer/char_class.h"

#include <string>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/utf8.h"

namespace tessera::tok {

bool is_unicode_whitespace(uint32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool is_unicode_alphanumeric(uint32_t cp) {
  if (cp < 0x80) return (cp >= '0' && cp <= '9') || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z');
  static pcre2_code* re = [] {
    int err;
    PCRE2_SIZE off;
    const char* pat = "^[\\p{Alphabetic}\\p{Nd}\\p{Nl}\\p{No}]";
    return pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pat), PCRE2_ZERO_TERMINATED,
                         PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
  }();
  if (re == nullptr) return false;
  std::string buf;
  utf8_append(buf, cp);
  pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
  const int rc = pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(buf.data()), buf.size(), 0, 0, md, nullptr);
  pcre2_match_data_free(md);
  return rc >= 0;
}

}  // namespace tessera::tok
