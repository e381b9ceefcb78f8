#include "bundle/bundle.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/json_file.h"
#include "core/sha256.h"

namespace tessera {

namespace fs = std::filesystem;

bool Bundle::is_bundle(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::is_regular_file(fs::path(path) / "manifest.json", ec);
}

Manifest Bundle::read_manifest(const std::string& directory) {
  const std::string path = (fs::path(directory) / "manifest.json").string();
  return parse_manifest(read_json_file(path, "the bundle manifest"), path);
}

Bundle Bundle::open(const std::string& directory, bool verify, FileMemory memory) {
  return open(directory, read_manifest(directory), verify, memory);
}

Bundle Bundle::open(const std::string& directory, Manifest manifest, bool verify, FileMemory memory,
                    const std::vector<std::pair<uint64_t, uint64_t>>& lazy_sections) {
  Bundle b;
  b.directory_ = directory;
  const std::string manifest_path = (fs::path(directory) / "manifest.json").string();
  b.manifest_ = std::move(manifest);
  const std::string weights_path = (fs::path(directory) / b.manifest_.weights_file).string();
  std::error_code ec;
  if (!fs::is_regular_file(weights_path, ec)) fail(weights_path, "", "the bundle's weights file is missing");
  b.file_ = MappedFile::open(weights_path, memory, lazy_sections);
  if (b.file_->size() != b.manifest_.weights_bytes)
    fail(weights_path, "", "{} bytes, the manifest says {} (truncated or replaced?)", b.file_->size(),
         b.manifest_.weights_bytes);
  const uint8_t* base = b.file_->data();
  for (const TensorEntry& t : b.manifest_.tensors) {
    WeightView v = entry_view(t, base);
    if (verify) {
      const std::string got = sha256_hex_of({{base + t.data.offset, t.data.bytes},
                                             {base + t.scales.offset, t.scales.bytes},
                                             {base + t.palette.offset, t.palette.bytes}});
      if (got != t.sha256) fail(weights_path, t.name, "sha256 {} does not match the manifest's {}", got, t.sha256);
    }
    if (!b.views_.emplace(t.name, std::move(v)).second) fail(manifest_path, t.name, "tensor listed twice");
  }
  return b;
}

}  // namespace tessera
