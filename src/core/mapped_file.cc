#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "core/huge_page_arena.h"

namespace tessera {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// Closes the descriptor on every path out of open().
struct Fd {
  int fd;
  ~Fd() { ::close(fd); }
};

// `size` bytes of fd into anonymous memory aligned to kHugePage and advised
// MADV_HUGEPAGE, so that the kernel backs it with 2 MB pages as the reads
// fault it in. The region is rounded up to whole huge pages. The whole
// pages of the `lazy` ranges are mapped from the file instead of read
// (the region starts on a page, so addresses and file offsets agree
// modulo the page).
void read_into_huge_pages(const std::string& path, int fd, size_t size,
                          const std::vector<std::pair<uint64_t, uint64_t>>& lazy, void*& region,
                          size_t& region_bytes, const uint8_t*& data) {
  const size_t rounded = (size + kHugePage - 1) / kHugePage * kHugePage;
  // Map one huge page more than needed, then trim to an aligned start.
  void* raw = ::mmap(nullptr, rounded + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) fail(path, "", "cannot allocate {} bytes to read the file into: {}", rounded, std::strerror(errno));
  const uintptr_t start = (reinterpret_cast<uintptr_t>(raw) + kHugePage - 1) / kHugePage * kHugePage;
  const size_t head = start - reinterpret_cast<uintptr_t>(raw), tail = kHugePage - head;
  if (head) ::munmap(raw, head);
  if (tail) ::munmap(reinterpret_cast<void*>(start + rounded), tail);
  region = reinterpret_cast<void*>(start);
  region_bytes = rounded;
  ::madvise(region, rounded, MADV_HUGEPAGE);  // advice: without THP the pages stay 4 KB
  uint8_t* out = static_cast<uint8_t*>(region);
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::vector<std::pair<uint64_t, uint64_t>> mapped;  // [begin, end) page-aligned, sorted
  for (const auto& [offset, bytes] : lazy) {
    const uint64_t begin = (offset + page - 1) / page * page, end = std::min<uint64_t>(offset + bytes, size) / page * page;
    if (end > begin && ::mmap(out + begin, end - begin, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd,
                              static_cast<off_t>(begin)) != MAP_FAILED)
      mapped.emplace_back(begin, end);
  }
  std::sort(mapped.begin(), mapped.end());
  size_t next_mapped = 0;
  for (size_t done = 0; done < size;) {
    while (next_mapped < mapped.size() && mapped[next_mapped].second <= done) ++next_mapped;
    if (next_mapped < mapped.size() && mapped[next_mapped].first <= done) {
      done = mapped[next_mapped].second;  // mapped from the file: not read
      continue;
    }
    const size_t stop = next_mapped < mapped.size() ? mapped[next_mapped].first : size;
    const ssize_t n = ::pread(fd, out + done, std::min<size_t>(stop - done, size_t{1} << 30), static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::munmap(region, rounded);
      region = nullptr;
      if (n == 0) fail(path, "", "file ended after {} of {} bytes while being read", done, size);
      fail(path, "", "cannot read: {}", std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  ::mprotect(region, rounded, PROT_READ);
  data = out;
}

}  // namespace

const char* file_memory_name(FileMemory m) {
  switch (m) {
    case FileMemory::Auto: return "auto";
    case FileMemory::Mmap: return "mmap";
    case FileMemory::HugePages: return "huge";
  }
  return "?";
}

FileMemory parse_file_memory(const std::string& name) {
  for (FileMemory m : {FileMemory::Auto, FileMemory::Mmap, FileMemory::HugePages})
    if (name == file_memory_name(m)) return m;
  fail("options", "weights memory", "must be auto, mmap or huge, got '{}'", name);
}

bool transparent_huge_pages_available() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  // "always [madvise] never": the bracketed word is the mode in force.
  return std::getline(f, line) && line.find("[never]") == std::string::npos && line.find('[') != std::string::npos;
}

FileMemory resolve(FileMemory m) {
  if (m != FileMemory::Auto) return m;
  static const bool thp = transparent_huge_pages_available();
  return thp ? FileMemory::HugePages : FileMemory::Mmap;
}

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path, FileMemory memory,
                                                   const std::vector<std::pair<uint64_t, uint64_t>>& lazy) {
  memory = resolve(memory);
  const Fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) fail(path, "", "cannot open: {}", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) fail(path, "", "cannot stat: {}", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(path, "", "not a regular file");
  const size_t size = static_cast<size_t>(st.st_size);
  auto file = std::shared_ptr<MappedFile>(new MappedFile(path, nullptr, size));
  file->memory_ = memory;
  if (size == 0) return file;
  if (memory == FileMemory::HugePages) {
    read_into_huge_pages(path, fd.fd, size, lazy, file->region_, file->region_bytes_, file->data_);
    return file;
  }
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (addr == MAP_FAILED) fail(path, "", "cannot mmap {} bytes: {}", size, std::strerror(errno));
  file->data_ = static_cast<const uint8_t*>(addr);
  return file;
}

std::shared_ptr<const MappedFile> MappedFile::from_bytes(std::string name,
                                                         std::vector<uint8_t> bytes) {
  auto file = std::shared_ptr<MappedFile>(new MappedFile(std::move(name), nullptr, 0));
  file->owned_ = std::move(bytes);
  file->data_ = file->owned_.data();
  file->size_ = file->owned_.size();
  return file;
}

MappedFile::~MappedFile() {
  if (region_ != nullptr) ::munmap(region_, region_bytes_);
  else if (data_ != nullptr && owned_.empty()) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace tessera
