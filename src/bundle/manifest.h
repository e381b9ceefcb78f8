// manifest.json of a bundle directory (schema version 1):
//
//   {
//     "format": "tessera-bundle", "schema_version": 1, "tessera_version": "0.1.0",
//     "source": {"path": ..., "format": "gguf" | "hf"},
//     "spec": { ModelSpec (core/model_spec_json.h) },
//     "build": {"chunks": N, "prefill_sizes": [8, 32, 512]},
//     "tokenizer": {"kind": "gguf", "file": "tokenizer.gguf"} | {"kind": "hf", "files": [...]} | {"kind": "none"},
//     "stop_token_ids": [...],
//     "quantization": {"weights": "lut4", "embeddings": "int8", "lm_head": "int8", "group_size": 32,
//                      "seed": 0, "keep": ["regex=format", ...]},
//     "weights_file": "weights.bin", "weights_bytes": B,
//     "tensors": [{"name": HF name, "format": "lut4", "shape": [rows, cols], "group_size": 32,
//                  "data": [offset, bytes], "scales": [offset, bytes], "palette": [offset, bytes],
//                  blk4 ... blk8 only: "block": {"cols": 32, "scale_type": "f16" | "f32", "offsets": bool,
//                                                "super_cols": 256 (super-block scales; absent: none)},
//                  "sha256": hex of data ‖ scales ‖ palette}],
//     "programs": [ program_to_json(...) for every program ]
//   }
//
// blk4 ... blk8 keep their block section (core/weight_format.h) under
// "scales" and blk4 / blk5 / blk6's codebook under "palette".
// Offsets are into weights_file and 64-byte aligned; absent sections are
// [0, 0]. parse_manifest checks everything it can without reading the blob:
// types, formats, shapes against formats, section sizes against
// weight_data_bytes, alignment, bounds, overlaps — each failure an Error
// naming the tensor and field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/weight_format.h"
#include "core/model_spec.h"

namespace tessera {

constexpr int kBundleSchemaVersion = 1;
constexpr uint64_t kBundleAlignment = 64;

struct Section {
  uint64_t offset = 0, bytes = 0;
};

struct TensorEntry {
  std::string name;
  WeightFormat format = WeightFormat::F32;
  std::vector<int64_t> shape;
  int64_t group_size = 0;
  int64_t block_cols = 0;  // blk4 ... blk8
  bool block_f32 = false, block_offsets = false;
  int64_t block_super = 0;  // columns per super-block (0: none)
  Section data, scales, palette;
  std::string sha256;
};

struct Manifest {
  std::string tessera_version;
  nlohmann::ordered_json source = nlohmann::ordered_json::object();
  ModelSpec spec;
  int64_t chunks = 1;
  std::vector<int64_t> prefill_sizes;
  nlohmann::ordered_json tokenizer = nlohmann::ordered_json::object();
  std::vector<int32_t> stop_token_ids;
  nlohmann::ordered_json quantization = nlohmann::ordered_json::object();
  std::string weights_file = "weights.bin";
  uint64_t weights_bytes = 0;
  std::vector<TensorEntry> tensors;
  nlohmann::ordered_json programs = nlohmann::ordered_json::array();
};

nlohmann::ordered_json manifest_to_json(const Manifest& m);
// The view of entry t over the weights file's bytes at `base` (null: only
// format, shape, group and block fields, no pointers).
WeightView entry_view(const TensorEntry& t, const uint8_t* base);
// `file` names the manifest in errors.
Manifest parse_manifest(const nlohmann::json& j, const std::string& file);

}  // namespace tessera
