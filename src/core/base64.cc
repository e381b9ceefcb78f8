#include "core/base64.h"

#include <openssl/evp.h>

#include <memory>

#include "core/error.h"

namespace tessera {

std::optional<std::string> base64_decode(std::string_view text) {
  std::unique_ptr<EVP_ENCODE_CTX, decltype(&EVP_ENCODE_CTX_free)> ctx(EVP_ENCODE_CTX_new(), EVP_ENCODE_CTX_free);
  if (!ctx) return std::nullopt;
  EVP_DecodeInit(ctx.get());
  std::string out(text.size() / 4 * 3 + 3, '\0');
  int n = 0, tail = 0;
  // EVP_DecodeUpdate takes an int length: decode in pieces well below it
  // (multiples of 4 characters keep no state but what OpenSSL keeps itself).
  size_t written = 0;
  constexpr size_t kPiece = size_t{1} << 28;
  for (size_t at = 0; at < text.size(); at += kPiece) {
    const size_t len = std::min(kPiece, text.size() - at);
    if (EVP_DecodeUpdate(ctx.get(), reinterpret_cast<unsigned char*>(out.data() + written), &n,
                         reinterpret_cast<const unsigned char*>(text.data() + at), static_cast<int>(len)) < 0)
      return std::nullopt;
    written += static_cast<size_t>(n);
  }
  if (EVP_DecodeFinal(ctx.get(), reinterpret_cast<unsigned char*>(out.data() + written), &tail) < 0)
    return std::nullopt;
  out.resize(written + static_cast<size_t>(tail));
  return out;
}

DataUrl parse_data_url(std::string_view url) {
  constexpr std::string_view kScheme = "data:";
  if (url.substr(0, kScheme.size()) != kScheme) fail("data URL", "scheme", "not a data: URL");
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) fail("data URL", "syntax", "no ',' before the data");
  std::string_view meta = url.substr(kScheme.size(), comma - kScheme.size());
  constexpr std::string_view kBase64 = ";base64";
  if (meta.size() < kBase64.size() || meta.substr(meta.size() - kBase64.size()) != kBase64)
    fail("data URL", "encoding", "the data must be base64 (';base64,')");
  meta.remove_suffix(kBase64.size());
  std::optional<std::string> bytes = base64_decode(url.substr(comma + 1));
  if (!bytes) fail("data URL", "data", "not valid base64");
  return {std::string(meta.substr(0, meta.find(';'))), std::move(*bytes)};
}

}  // namespace tessera
