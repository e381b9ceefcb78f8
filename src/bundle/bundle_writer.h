// Writes a bundle directory atomically: everything goes into a sibling
// temporary directory ("OUT.tmp-<pid>") that is renamed to OUT only once
// complete, so an interrupted convert leaves no half-written bundle (a stale
// temporary directory is removed by the next convert to the same OUT).
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bundle/manifest.h"
#include "core/weight_format.h"

namespace tessera {

class BundleWriter {
 public:
  // `out` must not exist unless `overwrite`.
  BundleWriter(std::string out, bool overwrite);
  ~BundleWriter();  // removes the temporary directory unless commit() ran

  const std::string& temp_dir() const { return temp_; }
  // Appends one tensor's sections (64-byte aligned) to the weights file and
  // records it (with its sha256) in `manifest.tensors`.
  void add_tensor(const std::string& name, const WeightView& w);
  // Copies `file` into the bundle under `name`.
  void add_file(const std::string& file, const std::string& name);
  void add_bytes(const std::string& name, const std::vector<uint8_t>& bytes);
  // Writes manifest.json and renames the directory into place.
  void commit();

  Manifest manifest;

 private:
  std::string out_, temp_;
  bool overwrite_ = false;
  bool committed_ = false;
  uint64_t offset_ = 0;
  std::FILE* weights_ = nullptr;
};

}  // namespace tessera
