#include "core/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.h"

namespace tessera {
namespace {

struct DigestContext {
  DigestContext() : ctx(EVP_MD_CTX_new()) {
    if (ctx == nullptr || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1)
      throw Error("", "sha256", "cannot initialise OpenSSL digest");
  }
  ~DigestContext() { EVP_MD_CTX_free(ctx); }
  void update(const void* data, size_t n) { EVP_DigestUpdate(ctx, data, n); }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx, digest, &len);
    static const char kHex[] = "0123456789abcdef";
    std::string out(2 * len, '0');
    for (unsigned i = 0; i < len; ++i) {
      out[2 * i] = kHex[digest[i] >> 4];
      out[2 * i + 1] = kHex[digest[i] & 15];
    }
    return out;
  }
  EVP_MD_CTX* ctx;
};

}  // namespace

struct Sha256::State {
  DigestContext digest;
};
Sha256::Sha256() : state_(std::make_unique<State>()) {}
Sha256::~Sha256() = default;
void Sha256::update(std::span<const uint8_t> bytes) { state_->digest.update(bytes.data(), bytes.size()); }
std::string Sha256::hex() { return state_->digest.hex(); }

std::string sha256_hex(std::span<const uint8_t> bytes) {
  DigestContext d;
  d.update(bytes.data(), bytes.size());
  return d.hex();
}

std::string sha256_hex_of(std::initializer_list<std::span<const uint8_t>> parts) {
  DigestContext d;
  for (const auto& p : parts) d.update(p.data(), p.size());
  return d.hex();
}

std::string sha256_file_hex(const std::string& path,
                            const std::function<void(uint64_t, uint64_t)>& on_progress) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) fail(path, "", "cannot open: {}", std::strerror(errno));
  std::fseek(f.get(), 0, SEEK_END);
  const uint64_t total = static_cast<uint64_t>(std::ftell(f.get()));
  std::fseek(f.get(), 0, SEEK_SET);
  DigestContext d;
  std::vector<unsigned char> buf(1 << 20);
  uint64_t done = 0;
  for (;;) {
    const size_t n = std::fread(buf.data(), 1, buf.size(), f.get());
    if (n == 0) break;
    d.update(buf.data(), n);
    done += n;
    if (on_progress) on_progress(done, total);
  }
  if (std::ferror(f.get())) fail(path, "", "read error while hashing");
  return d.hex();
}

}  // namespace tessera
