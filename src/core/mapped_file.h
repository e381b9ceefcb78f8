// A read-only memory map of a whole file. Weights are never copied on load:
// readers hand out pointers into this mapping, which lives as long as any
// shared_ptr to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tessera {

class MappedFile {
 public:
  // Throws Error naming the path if the file cannot be opened or mapped.
  static std::shared_ptr<const MappedFile> open(const std::string& path);
  // Wraps bytes already in memory (tests, fuzzers, small generated files);
  // `name` stands in for the path in error messages.
  static std::shared_ptr<const MappedFile> from_bytes(std::string name, std::vector<uint8_t> bytes);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
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
};

}  // namespace tessera
