#include "core/dtype.h"

#include <array>
#include <cctype>
#include <limits>

namespace tessera {
namespace {

// Block layouts follow ggml: QK4_0 = QK8_0 = 32 with a f16 scale, QK_K = 256
// for the k-quants (super-blocks with 6-bit or 4-bit sub-block scales).
constexpr std::array<DTypeInfo, 21> kInfo = {{
    {"F32", 1, 4},     {"F16", 1, 2},     {"BF16", 1, 2},   {"F64", 1, 8},
    {"I8", 1, 1},      {"U8", 1, 1},      {"I16", 1, 2},    {"I32", 1, 4},
    {"I64", 1, 8},     {"BOOL", 1, 1},
    {"Q4_0", 32, 18},  {"Q4_1", 32, 20},  {"Q5_0", 32, 22}, {"Q5_1", 32, 24},
    {"Q8_0", 32, 34},  {"Q2_K", 256, 84}, {"Q3_K", 256, 110},
    {"Q4_K", 256, 144}, {"Q5_K", 256, 176}, {"Q6_K", 256, 210},
    {"IQ4_NL", 32, 18},
}};

}  // namespace

const DTypeInfo& dtype_info(DType t) { return kInfo[static_cast<size_t>(t)]; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (size_t i = 0; i < kInfo.size(); ++i) {
    const std::string_view n = kInfo[i].name;
    if (n.size() != name.size()) continue;
    bool same = true;
    for (size_t k = 0; k < n.size() && same; ++k)
      same = n[k] == std::toupper(static_cast<unsigned char>(name[k]));
    if (same) return static_cast<DType>(i);
  }
  return std::nullopt;
}

std::optional<uint64_t> dtype_bytes(DType t, uint64_t elems) {
  const DTypeInfo& info = dtype_info(t);
  if (elems % info.block_elems != 0) return std::nullopt;
  const uint64_t blocks = elems / info.block_elems;
  if (blocks > std::numeric_limits<uint64_t>::max() / info.block_bytes) return std::nullopt;
  return blocks * info.block_bytes;
}

}  // namespace tessera
