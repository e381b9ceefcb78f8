// A converted model on disk (a bundle directory: manifest.json, the weights
// blob, tokenizer files), opened for running: the manifest parsed and
// checked, the weights file mmap'd once, and every tensor a zero-copy
// WeightView into it. Every program of the bundle reads these same views.
//
// Opening validates sizes, offsets and alignment against the file (cheap);
// `verify` also recomputes every tensor's sha256 (reads every byte).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "bundle/manifest.h"
#include "core/weight_format.h"
#include "core/mapped_file.h"

namespace tessera {

class Bundle {
 public:
  // Throws Error naming the bundle file and the problem (missing file, bad
  // manifest, size mismatch, hash mismatch with verify).
  // `memory`: how weights.bin is brought into memory (core/mapped_file.h).
  static Bundle open(const std::string& directory, bool verify = false, FileMemory memory = FileMemory::Mmap);
  // The same, with the manifest read_manifest() already gave.
  // lazy_sections: weights.bin byte ranges kept mapped from the file rather
  // than read (MappedFile::open's `lazy`: tables read a row at a time).
  static Bundle open(const std::string& directory, Manifest manifest, bool verify, FileMemory memory,
                     const std::vector<std::pair<uint64_t, uint64_t>>& lazy_sections = {});
  // Only the manifest, parsed and checked: what a caller needs before (or
  // instead of) bringing weights.bin into memory.
  static Manifest read_manifest(const std::string& directory);
  // True if `path` is a directory holding a manifest.json.
  static bool is_bundle(const std::string& path);

  const std::string& directory() const { return directory_; }
  const Manifest& manifest() const { return manifest_; }
  const std::map<std::string, WeightView>& weights() const { return views_; }
  const std::shared_ptr<const MappedFile>& file() const { return file_; }

 private:
  std::string directory_;
  Manifest manifest_;
  std::shared_ptr<const MappedFile> file_;
  std::map<std::string, WeightView> views_;
};

}  // namespace tessera
