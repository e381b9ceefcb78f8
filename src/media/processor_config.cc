#include "media/processor_config.h"

#include "core/error.h"

namespace tessera {

int64_t processor_positive(const nlohmann::json& config, const char* key, int64_t fallback) {
  if (!config.contains(key) || config[key].is_null()) return fallback;
  if (!config[key].is_number_integer() || config[key].get<int64_t>() <= 0)
    fail(kProcessorConfigFile, key, "must be a positive integer");
  return config[key].get<int64_t>();
}

double processor_number(const nlohmann::json& config, const char* key, double fallback) {
  if (!config.contains(key) || config[key].is_null()) return fallback;
  if (!config[key].is_number()) fail(kProcessorConfigFile, key, "must be a number");
  return config[key].get<double>();
}

}  // namespace tessera
