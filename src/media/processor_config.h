// Reading a Hugging Face processor's preprocessor_config.json: the typed
// lookups every media processor here shares. Each throws
// Error("preprocessor_config.json", key, problem) for a value of the wrong
// kind and returns `fallback` for a key that is absent or null.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

namespace tessera {

inline constexpr const char* kProcessorConfigFile = "preprocessor_config.json";

int64_t processor_positive(const nlohmann::json& config, const char* key, int64_t fallback);
double processor_number(const nlohmann::json& config, const char* key, double fallback);

}  // namespace tessera
