// MappedFile in both memory modes: the same bytes, the huge-page copy
// aligned to 2 MB and (where the kernel grants transparent huge pages)
// backed by them, clear errors for files that cannot be read.
#include "core/mapped_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/temp_dir_for_tests.h"

namespace tessera {
namespace {

std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// The kB of AnonHugePages /proc/self/smaps lists for the mapping that holds p.
long anon_huge_kb_at(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= addr && addr < hi;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) return std::stol(line.substr(14));
  }
  return -1;
}

TEST(MappedFile, BothModesGiveTheFilesBytes) {
  TempDir dir;
  // Sizes around the 2 MB huge page, and one byte.
  for (size_t size : {size_t{1}, size_t{4095}, (size_t{2} << 20) - 1, (size_t{2} << 20) + 12345}) {
    const std::string bytes = random_bytes(size, static_cast<unsigned>(size));
    dir.write("w.bin", bytes);
    const std::string path = (dir.path() / "w.bin").string();
    for (FileMemory m : {FileMemory::Mmap, FileMemory::HugePages, FileMemory::Auto}) {
      const auto f = MappedFile::open(path, m);
      ASSERT_EQ(f->size(), size);
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(f->data()), f->size()), bytes) << file_memory_name(m);
      EXPECT_EQ(f->memory(), resolve(m));
      if (f->memory() == FileMemory::HugePages) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(f->data()) % (2u << 20), 0u);
      }
    }
  }
}

TEST(MappedFile, EmptyFileInEitherMode) {
  TempDir dir;
  dir.write("empty.bin", "");
  for (FileMemory m : {FileMemory::Mmap, FileMemory::HugePages}) {
    const auto f = MappedFile::open((dir.path() / "empty.bin").string(), m);
    EXPECT_EQ(f->size(), 0u);
    EXPECT_EQ(f->data(), nullptr);
  }
}

TEST(MappedFile, HugePagesBackTheCopyWhereTheKernelGrantsThem) {
  if (!transparent_huge_pages_available()) GTEST_SKIP() << "transparent huge pages are off on this kernel";
  TempDir dir;
  dir.write("w.bin", random_bytes(size_t{6} << 20, 7));
  const auto f = MappedFile::open((dir.path() / "w.bin").string(), FileMemory::HugePages);
  // The kernel may fall back to 4 KB pages when it finds no free 2 MB page;
  // on an idle machine with THP on, at least one of the three is huge.
  EXPECT_GT(anon_huge_kb_at(f->data() + (size_t{2} << 20)), 0);
}

TEST(MappedFile, ErrorsNameThePath) {
  TempDir dir;
  for (FileMemory m : {FileMemory::Mmap, FileMemory::HugePages}) {
    try {
      MappedFile::open((dir.path() / "missing.bin").string(), m);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("missing.bin"), std::string::npos) << e.what();
    }
    EXPECT_THROW(MappedFile::open(dir.path().string(), m), Error);  // a directory
  }
}

TEST(MappedFile, MemoryModeNames) {
  for (FileMemory m : {FileMemory::Auto, FileMemory::Mmap, FileMemory::HugePages})
    EXPECT_EQ(parse_file_memory(file_memory_name(m)), m);
  EXPECT_THROW(parse_file_memory("hugepages"), Error);
  EXPECT_NE(resolve(FileMemory::Auto), FileMemory::Auto);
}

}  // namespace
}  // namespace tessera
