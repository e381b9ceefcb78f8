// The determinism oracle: a fixed corpus of prompts (python/tessera/data/
// oracle_prompts.json, shipped in the Python package), each continued greedily for max_tokens tokens (stop tokens
// ignored), recorded as token ids plus the sha256 of the ids as little-endian
// int32 bytes. A later run — another thread count, chunk count, machine —
// must reproduce every id.
//
// Oracle file:
//   {"format": "tessera-oracle", "version": 1, "max_tokens": 32,
//    "results": [{"prompt": ..., "prompt_ids": [...], "ids": [...], "sha256": ...}, ...],
//    "sha256": sha256 of all results' ids concatenated}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/model.h"

namespace tessera {

struct OracleCorpus {
  int64_t max_tokens = 32;
  std::vector<std::string> prompts;
};

OracleCorpus load_oracle_corpus(const std::string& path);
// Runs the corpus; returns the oracle JSON.
nlohmann::ordered_json run_oracle(const Model& model, const OracleCorpus& corpus);
std::string ids_sha256(const std::vector<int32_t>& ids);

struct OracleMismatch {
  bool match = true;
  std::string message;  // first diverging prompt and position
};
// Compares a fresh run against a recorded oracle (ids of every prompt).
OracleMismatch compare_oracle(const nlohmann::json& recorded, const nlohmann::json& fresh,
                              const std::string& recorded_file);

}  // namespace tessera
