// SHA-256 of byte ranges and files (OpenSSL's libcrypto does the hashing).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>

namespace tessera {

// Incremental hashing: update() with consecutive byte ranges, then hex().
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::span<const uint8_t> bytes);
  std::string hex();  // lower-case digest; call once

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Lower-case hex digest of several byte ranges, hashed as their concatenation.
std::string sha256_hex_of(std::initializer_list<std::span<const uint8_t>> parts);

// Lower-case hex digest of `bytes`.
std::string sha256_hex(std::span<const uint8_t> bytes);

// Lower-case hex digest of a whole file, read in 1 MiB pieces; `on_progress`
// (optional) is called with the bytes hashed so far and the file size.
std::string sha256_file_hex(const std::string& path,
                            const std::function<void(uint64_t, uint64_t)>& on_progress = {});

}  // namespace tessera
