// libFuzzer target: safetensors header and tensor table validation. Any input
// must end in a parsed file or a tessera::Error.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "sources/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = tessera::MappedFile::from_bytes("fuzz.safetensors",
                                              std::vector<uint8_t>(data, data + size));
  try {
    const tessera::SafetensorsFile st = tessera::SafetensorsFile::parse(file);
    uint64_t total = 0;
    for (const auto& t : st.tensors()) total += t.nbytes;  // views must lie inside the file
    if (total > size) __builtin_trap();
  } catch (const tessera::Error&) {
  }
  return 0;
}
