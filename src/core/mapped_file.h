// A whole file, read-only, in memory: a memory map of it, or (FileMemory::
// HugePages) its bytes read once into anonymous memory backed by transparent
// huge pages. Either way the bytes exist once in the process: readers hand
// out pointers into them, which live as long as any shared_ptr to the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace tessera {

// How MappedFile::open brings a file into memory.
//   Mmap       a private read-only mapping of the page cache: nothing is read
//              at open, pages load on first touch and are shared with every
//              other process mapping the file; 4 KB pages.
//   HugePages  read() into anonymous memory that asks the kernel for 2 MB
//              transparent huge pages (madvise MADV_HUGEPAGE): the open reads
//              the whole file, and streaming it (a decode step reads every
//              weight) then takes one TLB entry per 2 MB instead of 512. On
//              a VM, whose TLB misses walk two page tables, decode measured
//              5-10% faster (docs/BENCHMARKING.md). Not shared across processes.
//   Auto       HugePages where the kernel grants transparent huge pages
//              (/sys/kernel/mm/transparent_hugepage/enabled not [never]),
//              Mmap elsewhere.
enum class FileMemory { Auto, Mmap, HugePages };
const char* file_memory_name(FileMemory m);             // "auto", "mmap", "huge"
FileMemory parse_file_memory(const std::string& name);  // Error naming the value otherwise
bool transparent_huge_pages_available();
FileMemory resolve(FileMemory m);  // Auto -> what it stands for on this machine

class MappedFile {
 public:
  // Throws Error naming the path if the file cannot be opened, mapped or read.
  // `lazy` (HugePages): byte ranges [offset, offset + bytes) whose whole
  // pages are not read but mapped from the file (private, read-only): the
  // same bytes, loaded on first touch, counting in the process's memory
  // only once touched. For a table read a row at a time (an untied
  // embedding: a row a token), most of it then never counts, as with a
  // plain map of the file (llama.cpp's).
  static std::shared_ptr<const MappedFile> open(const std::string& path, FileMemory memory = FileMemory::Mmap,
                                                const std::vector<std::pair<uint64_t, uint64_t>>& lazy = {});
  // Wraps bytes already in memory (tests, fuzzers, small generated files);
  // `name` stands in for the path in error messages.
  static std::shared_ptr<const MappedFile> from_bytes(std::string name, std::vector<uint8_t> bytes);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  // Mmap or HugePages (from_bytes: Mmap, though nothing is mapped).
  FileMemory memory() const { return memory_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  std::vector<uint8_t> owned_;  // from_bytes only; empty for a real mapping
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  FileMemory memory_ = FileMemory::Mmap;
  // HugePages: the anonymous region data_ lies in (unmapped by the destructor).
  void* region_ = nullptr;
  size_t region_bytes_ = 0;
};

}  // namespace tessera
