#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace tessera {

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "", "cannot open: {}", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(path, "", "cannot stat: {}", std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "", "not a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  const uint8_t* data = nullptr;
  if (size > 0) {
    void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      fail(path, "", "cannot mmap {} bytes: {}", size, std::strerror(err));
    }
    data = static_cast<const uint8_t*>(addr);
  }
  ::close(fd);
  return std::shared_ptr<const MappedFile>(new MappedFile(path, data, size));
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
  if (data_ != nullptr && owned_.empty()) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace tessera
