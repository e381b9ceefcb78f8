#include "bundle/bundle_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/sha256.h"

namespace tessera {

namespace fs = std::filesystem;

BundleWriter::BundleWriter(std::string out, bool overwrite) : out_(std::move(out)), overwrite_(overwrite) {
  std::error_code ec;
  if (fs::exists(out_, ec) && !overwrite_) fail(out_, "", "already exists (pass --force to replace it)");
  temp_ = out_ + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(temp_, ec);
  if (!fs::create_directories(temp_, ec) || ec) fail(temp_, "", "cannot create directory: {}", ec.message());
  const std::string weights = (fs::path(temp_) / manifest.weights_file).string();
  weights_ = std::fopen(weights.c_str(), "wb");
  if (!weights_) fail(weights, "", "cannot create: {}", std::strerror(errno));
}

BundleWriter::~BundleWriter() {
  if (weights_) std::fclose(weights_);
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(temp_, ec);
  }
}

void BundleWriter::add_tensor(const std::string& name, const WeightView& w) {
  const int64_t rows = w.rows(), cols = w.cols();
  auto write_section = [&](const void* p, uint64_t bytes) -> Section {
    if (bytes == 0) return {};
    static const char zeros[kBundleAlignment] = {};
    const uint64_t pad = (kBundleAlignment - offset_ % kBundleAlignment) % kBundleAlignment;
    if ((pad && std::fwrite(zeros, 1, pad, weights_) != pad) || std::fwrite(p, 1, bytes, weights_) != bytes)
      fail(temp_, name, "write failed: {}", std::strerror(errno));
    Section s{offset_ + pad, bytes};
    offset_ += pad + bytes;
    return s;
  };
  TensorEntry t;
  t.name = name;
  t.format = w.format;
  t.shape = w.shape;
  t.group_size = is_lut(w.format) ? w.group_size : 0;
  if (is_blocked(w.format)) {
    t.block_cols = w.block_cols;
    t.block_f32 = w.block_f32;
    t.block_offsets = w.block_offsets;
    t.block_super = w.block_super;
  }
  const uint64_t data_bytes = weight_data_bytes(w.format, rows, cols);
  const uint64_t scale_bytes = scales_section_bytes(w);
  const uint64_t palette_bytes = palette_section_bytes(w);
  const void* scales = scales_section(w);
  t.data = write_section(w.data, data_bytes);
  t.scales = write_section(scales, scale_bytes);
  t.palette = write_section(w.palette, palette_bytes);
  auto span = [](const void* p, uint64_t n) { return std::span<const uint8_t>(static_cast<const uint8_t*>(p), n); };
  t.sha256 = sha256_hex_of({span(w.data, data_bytes), span(scales, scale_bytes), span(w.palette, palette_bytes)});
  manifest.tensors.push_back(std::move(t));
}

void BundleWriter::add_file(const std::string& file, const std::string& name) {
  std::error_code ec;
  fs::copy_file(file, fs::path(temp_) / name, fs::copy_options::overwrite_existing, ec);
  if (ec) fail(file, "", "cannot copy into the bundle: {}", ec.message());
}

void BundleWriter::add_bytes(const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = (fs::path(temp_) / name).string();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) fail(path, "", "write failed");
}

void BundleWriter::commit() {
  if (std::fflush(weights_) != 0 || ::fsync(fileno(weights_)) != 0 || std::fclose(weights_) != 0) {
    weights_ = nullptr;
    fail(temp_, manifest.weights_file, "write failed: {}", std::strerror(errno));
  }
  weights_ = nullptr;
  manifest.weights_bytes = offset_;
  const std::string path = (fs::path(temp_) / "manifest.json").string();
  {
    std::ofstream out(path, std::ios::binary);
    out << manifest_to_json(manifest).dump(1) << "\n";
    if (!out) fail(path, "", "write failed");
  }
  std::error_code ec;
  if (overwrite_) fs::remove_all(out_, ec);
  fs::rename(temp_, out_, ec);
  if (ec) fail(out_, "", "cannot move the finished bundle into place: {}", ec.message());
  committed_ = true;
}

}  // namespace tessera
