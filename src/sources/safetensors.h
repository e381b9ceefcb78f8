// Reader for Hugging Face safetensors files and checkpoint directories.
//
// File layout:
//   [0, 8)          u64 little-endian N: byte length of the JSON header
//   [8, 8 + N)      UTF-8 JSON object:
//                     { "<tensor name>": { "dtype": "F32", "shape": [d0, d1, ...],
//                                          "data_offsets": [begin, end] },
//                       ...,
//                       "__metadata__": { "<key>": "<string value>", ... } }   (optional)
//   [8 + N, EOF)    data section; a tensor's bytes are [begin, end) relative to its start,
//                   row-major, shape outermost first, little-endian.
//
// Every field of the header is treated as hostile: the header length is bounded,
// the JSON is parsed by a streaming (SAX) parser that builds only the tensor
// table, duplicate keys are rejected at every level, every byte range is checked
// against the data section and against the byte size implied by shape × dtype,
// and ranges may not overlap. Nothing is read outside the mapping.
//
// A checkpoint directory holds either one `model.safetensors`, or shards listed
// by `model.safetensors.index.json` ({"metadata": {...}, "weight_map": {tensor: shard}}).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor_view.h"

namespace tessera {

// Largest JSON header accepted (the format's reference implementation uses the same bound).
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100ull * 1000 * 1000;
// Largest tensor rank accepted; real checkpoints stay below 8.
inline constexpr size_t kSafetensorsMaxRank = 32;

class SafetensorsFile {
 public:
  // Maps `path` and parses it. Throws Error naming the path and the subject
  // ("header", "tensor 'x'", "__metadata__") on any malformed content.
  static SafetensorsFile open(const std::string& path);
  // Parses bytes already mapped (or wrapped with MappedFile::from_bytes).
  static SafetensorsFile parse(std::shared_ptr<const MappedFile> file);

  const std::string& path() const { return file_->path(); }
  const std::shared_ptr<const MappedFile>& file() const { return file_; }
  // Absolute file offset of the data section (8 + header length).
  uint64_t data_offset() const { return data_offset_; }

  // All tensors, sorted by name. Each view's `file` keeps the mapping alive.
  const std::vector<TensorView>& tensors() const { return tensors_; }
  // nullptr when absent.
  const TensorView* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::shared_ptr<const MappedFile> file_;
  uint64_t data_offset_ = 0;
  std::vector<TensorView> tensors_;
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

class SafetensorsCheckpoint {
 public:
  // Opens a model directory: `model.safetensors` if present, else the shards
  // listed by `model.safetensors.index.json` (the order transformers uses). Throws Error if neither exists, if a shard name is
  // not a plain file name inside the directory, if a weight_map entry is missing
  // from its shard, or if a tensor name occurs in more than one shard.
  static SafetensorsCheckpoint open(const std::string& directory);

  const std::string& directory() const { return directory_; }
  bool sharded() const { return sharded_; }
  // The opened files, in order of shard file name (one entry when not sharded).
  const std::vector<SafetensorsFile>& shards() const { return shards_; }
  // The index file's "metadata" object, as JSON text per key (empty when not sharded).
  const std::map<std::string, std::string>& index_metadata() const { return index_metadata_; }

  // All tensors of all shards, sorted by name; each view keeps its shard mapped.
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find(std::string_view name) const;

 private:
  std::string directory_;
  bool sharded_ = false;
  std::vector<SafetensorsFile> shards_;
  std::map<std::string, std::string> index_metadata_;
  std::vector<TensorView> tensors_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace tessera
