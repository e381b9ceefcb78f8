// The two character classes Hugging Face tokenizers takes from Rust's
// `char`, for code points the caller has decoded (core/utf8.h):
// is_whitespace = White_Space, is_alphanumeric = Alphabetic | Nd | Nl | No.
#pragma once

#include <cstdint>

namespace tessera::tok {

// Rust char::is_whitespace (Unicode White_Space).
bool is_unicode_whitespace(uint32_t cp);
// Rust char::is_alphanumeric (Alphabetic or Numeric), via PCRE2's tables.
bool is_unicode_alphanumeric(uint32_t cp);

}  // namespace tessera::tok
