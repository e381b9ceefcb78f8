// A std::vector whose storage starts on a 64-byte boundary: one cache line,
// one AVX-512 vector. The kernels' 32- and 64-byte loads from such a buffer
// (at offsets that are multiples of their width) then never straddle two
// lines; a std::vector's own storage is only 16-byte aligned (malloc), and a
// large one sits 16 bytes past a page boundary (mmap plus malloc's header),
// so every 64-byte load from it would split.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace tessera {

inline constexpr std::size_t kCacheLineBytes = 64;

template <class T>
struct CacheLineAllocator {
  using value_type = T;

  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kCacheLineBytes}));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    ::operator delete(p, n * sizeof(T), std::align_val_t{kCacheLineBytes});
  }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace tessera
