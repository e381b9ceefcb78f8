// Memory for weights the runtime lays out itself at load (the interleaved
// linears, kernels/interleaved_linear.h): anonymous regions advised
// MADV_HUGEPAGE, handed out in 64-byte aligned pieces that live as long as
// the arena. Decode streams every weight once per step, so it wants the
// 2 MB pages a bundle read into memory gets (core/mapped_file.h); one
// allocation per tensor would leave tensors under 2 MB on 4 KB pages and
// round each one up. Regions come in chunks of kChunkBytes (or one piece's
// size, if larger); pages that are never touched take no memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace tessera {

class HugePageArena {
 public:
  static constexpr size_t kChunkBytes = size_t{64} << 20;

  HugePageArena() = default;
  ~HugePageArena();
  HugePageArena(const HugePageArena&) = delete;
  HugePageArena& operator=(const HugePageArena&) = delete;

  // `bytes` zeroed bytes, 64-byte aligned. Throws Error when the system refuses.
  uint8_t* allocate(size_t bytes);

 private:
  struct Region {
    uint8_t* base;
    size_t bytes;
  };
  std::mutex mutex_;
  std::vector<Region> regions_;
  size_t used_ = 0;  // bytes handed out of the last region
};

// Gives the whole pages inside [p, p + bytes) back to the system
// (madvise MADV_DONTNEED): a file mapping reads them again if touched, an
// anonymous one reads zeros. For bytes the process has copied elsewhere and
// will not read again.
void release_pages(const void* p, size_t bytes);
// The start of the page p lies in.
const uint8_t* page_floor(const uint8_t* p);

}  // namespace tessera
