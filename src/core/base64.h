// Base64 (RFC 4648, the standard alphabet with '=' padding) to bytes, as
// data: URLs carry images and audio (OpenSSL's decoder: line breaks are
// allowed, anything else outside the alphabet is an error).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tessera {

// The bytes `text` encodes; nullopt when it is not base64.
std::optional<std::string> base64_decode(std::string_view text);

// A data: URL, "data:[<media type>][;base64],<data>": its media type (empty
// when not given) and its bytes. Throws Error("data URL", ...) for another
// URL or a malformed one (the data must be base64).
struct DataUrl {
  std::string media_type;
  std::string bytes;
};
DataUrl parse_data_url(std::string_view url);

}  // namespace tessera
