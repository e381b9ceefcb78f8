#include "core/huge_page_arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace tessera {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

uintptr_t page_size() {
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

}  // namespace

HugePageArena::~HugePageArena() {
  for (const Region& r : regions_) ::munmap(r.base, r.bytes);
}

uint8_t* HugePageArena::allocate(size_t bytes) {
  bytes = (bytes + 63) / 64 * 64;
  std::lock_guard<std::mutex> lock(mutex_);
  if (regions_.empty() || used_ + bytes > regions_.back().bytes) {
    const size_t size = std::max(kChunkBytes, (bytes + kHugePage - 1) / kHugePage * kHugePage);
    // One huge page more than needed, trimmed to a 2 MB aligned start.
    void* raw = ::mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) fail("memory", "weights", "cannot allocate {} bytes: {}", size, std::strerror(errno));
    const uintptr_t start = (reinterpret_cast<uintptr_t>(raw) + kHugePage - 1) / kHugePage * kHugePage;
    const size_t head = start - reinterpret_cast<uintptr_t>(raw), tail = kHugePage - head;
    if (head) ::munmap(raw, head);
    if (tail) ::munmap(reinterpret_cast<void*>(start + size), tail);
    ::madvise(reinterpret_cast<void*>(start), size, MADV_HUGEPAGE);  // advice: without THP the pages stay 4 KB
    regions_.push_back({reinterpret_cast<uint8_t*>(start), size});
    used_ = 0;
  }
  uint8_t* p = regions_.back().base + used_;
  used_ += bytes;
  return p;
}

void release_pages(const void* p, size_t bytes) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  const uint8_t* begin = page_floor(b + page_size() - 1);
  const uint8_t* end = page_floor(b + bytes);
  if (end > begin) ::madvise(const_cast<uint8_t*>(begin), static_cast<size_t>(end - begin), MADV_DONTNEED);
}

const uint8_t* page_floor(const uint8_t* p) {
  const uintptr_t page = page_size();
  return reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(p) / page * page);
}

}  // namespace tessera
