// Element formats of stored tensors: plain numeric types as found in
// safetensors and GGUF, and the ggml block-quantized formats found in GGUF.
// A block format stores `block_elems` consecutive values of a row in
// `block_bytes` bytes; plain types are blocks of one element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera {

enum class DType : uint8_t {
  F32, F16, BF16, F64, I8, U8, I16, I32, I64, BOOL,
  // ggml block formats (GGUF)
  Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL,
};

struct DTypeInfo {
  std::string_view name;  // canonical upper-case name, e.g. "F32", "Q4_K"
  uint32_t block_elems;   // values per block
  uint32_t block_bytes;   // bytes per block
};

const DTypeInfo& dtype_info(DType t);
inline std::string_view dtype_name(DType t) { return dtype_info(t).name; }
inline bool is_block_quantized(DType t) { return dtype_info(t).block_elems > 1; }

// Parses a canonical name ("F32", "Q4_K", case-insensitive).
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes needed for `elems` values; nullopt when elems is not a whole number of
// blocks or the byte count would overflow.
std::optional<uint64_t> dtype_bytes(DType t, uint64_t elems);

}  // namespace tessera
