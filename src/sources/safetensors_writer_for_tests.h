// Test-only safetensors writer: builds files in memory the way the reference
// Python writer does (tensors packed back to back in the given order, header
// padded with spaces to a multiple of 8 bytes), plus a raw form that takes any
// header text so tests can build malformed files.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::testing {

struct StTensor {
  std::string name;
  std::string dtype;             // safetensors spelling, e.g. "BF16"
  std::vector<uint64_t> shape;
  std::vector<uint8_t> data;     // raw little-endian bytes
};

// 8-byte little-endian length, the header bytes as given, then `data`.
inline std::vector<uint8_t> safetensors_raw(const std::string& header, const std::vector<uint8_t>& data,
                                            uint64_t declared_length) {
  std::vector<uint8_t> out(8 + header.size() + data.size());
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(declared_length >> (8 * i));
  if (!header.empty()) std::memcpy(out.data() + 8, header.data(), header.size());
  if (!data.empty()) std::memcpy(out.data() + 8 + header.size(), data.data(), data.size());
  return out;
}

inline std::vector<uint8_t> safetensors_raw(const std::string& header, const std::vector<uint8_t>& data = {}) {
  return safetensors_raw(header, data, header.size());
}

inline std::vector<uint8_t> write_safetensors(const std::vector<StTensor>& tensors,
                                              const std::map<std::string, std::string>& metadata = {}) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<uint8_t> data;
  for (const StTensor& t : tensors) {
    const uint64_t begin = data.size();
    data.insert(data.end(), t.data.begin(), t.data.end());
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';
  return safetensors_raw(text, data);
}

inline void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  write_file(path, std::vector<uint8_t>(text.begin(), text.end()));
}

}  // namespace tessera::testing
