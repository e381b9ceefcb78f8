// A zero-copy view of one stored tensor: its name, element format, shape and
// the bytes inside a memory-mapped file. Shapes are listed outermost first
// (row-major, as in PyTorch / safetensors); GGUF's innermost-first `ne` order
// is reversed by its reader so that every source speaks the same order.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"

namespace tessera {

struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<uint64_t> shape;  // outermost first
  const uint8_t* data = nullptr;
  uint64_t nbytes = 0;
  std::shared_ptr<const MappedFile> file;  // keeps `data` alive

  uint64_t elements() const {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    return n;
  }
  std::span<const uint8_t> bytes() const { return {data, static_cast<size_t>(nbytes)}; }
};

}  // namespace tessera
