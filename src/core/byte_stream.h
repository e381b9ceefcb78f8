// Little binary writer / reader for state files (state/session_file.h):
// plain values and vectors of plain values, in the machine's byte order, the
// reader checking every length against what is left so that a truncated or
// edited file is an Error naming it, never an out-of-bounds read.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace tessera {

class ByteWriter {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const char*>(&v);
    bytes_.append(p, sizeof(T));
  }
  template <class T>
  void put_vector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<uint64_t>(v.size());
    bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

class ByteReader {
 public:
  // `what` names the data in errors (e.g. the file's path).
  ByteReader(const char* data, size_t size, std::string what) : p_(data), left_(size), what_(std::move(what)) {}

  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    take(&v, sizeof(T));
    return v;
  }
  template <class T>
  std::vector<T> get_vector() {
    const uint64_t n = get<uint64_t>();
    if (n > left_ / sizeof(T)) fail(what_, "contents", "a vector of {} values runs past the end", n);
    std::vector<T> v(static_cast<size_t>(n));
    take(v.data(), n * sizeof(T));
    return v;
  }
  size_t left() const { return left_; }

 private:
  void take(void* out, size_t n) {
    if (n > left_) fail(what_, "contents", "truncated ({} bytes wanted, {} left)", n, left_);
    if (n == 0) return;  // an empty vector's data() may be null: memcpy must not see it
    std::memcpy(out, p_, n);
    p_ += n;
    left_ -= n;
  }
  const char* p_;
  size_t left_;
  std::string what_;
};

}  // namespace tessera
