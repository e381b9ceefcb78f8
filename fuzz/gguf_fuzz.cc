// libFuzzer target: GGUF parsing, GGUF metadata -> ModelSpec, and
// dequantization of every tensor the file declares. Any input must end in a
// parsed file or a tessera::Error; anything else (crash, sanitizer report,
// other exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/ggml_dequant.h"
#include "model/architectures.h"
#include "sources/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = tessera::MappedFile::from_bytes("fuzz.gguf", std::vector<uint8_t>(data, data + size));
  try {
    const tessera::GgufFile g = tessera::GgufFile::parse(file);
    for (const auto& t : g.tensors()) (void)tessera::dequantize(t);
    (void)tessera::spec_from_gguf(g);
  } catch (const tessera::Error&) {
  }
  return 0;
}
