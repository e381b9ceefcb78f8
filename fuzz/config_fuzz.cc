// libFuzzer target: HF config.json -> ModelSpec. Any input must end in a
// ModelSpec or a tessera::Error (invalid JSON included).
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/architectures.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    (void)tessera::spec_from_hf_config(j, "fuzz/config.json");
  } catch (const tessera::Error&) {
  }
  return 0;
}
