// Reference dequantization of ggml block formats.
//
// Bit-exactness with gguf-py (numpy, f32) needs every multiply and add rounded
// to f32 on its own. In the formats below each product that feeds an addition
// (d * q, (d * scale) * q, dmin * min) is exact in f32 (at most 11 + 6 + 5
// significant bits), so a fused multiply-add would give the same bits; the
// pragmas keep contraction off anyway so that stays true for any format added
// later (compilers fuse `a * b - c` on FMA targets, e.g. -march=haswell, aarch64).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "core/ggml_dequant.h"

#include <bit>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/half.h"

namespace tessera {
namespace {

// Unaligned little-endian loads (block fields have no alignment guarantee).
inline uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
inline uint64_t le64(const uint8_t* p) {
  return static_cast<uint64_t>(le32(p)) | (static_cast<uint64_t>(le32(p + 4)) << 32);
}
// A ggml_half field: IEEE binary16.
inline float half_at(const uint8_t* p) { return f16_to_f32(le16(p)); }

constexpr int QK = 32;    // elements per block of the simple formats (QK4_0 = QK8_0 = 32)
constexpr int QK_K = 256;  // elements per super-block of the k-quants

// ---------------------------------------------------------------------------
// Simple 32-element formats. In all 4-bit ones the 16 bytes `qs` hold element
// j in the low nibble of qs[j] and element j + 16 in the high nibble.

// Q4_0 (18 bytes): f16 d | u8 qs[16].  x = d * (q - 8), q in 0..15.
void q4_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < QK / 2; ++j) {
    y[j] = d * static_cast<float>((qs[j] & 0x0f) - 8);
    y[j + QK / 2] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}

// Q4_1 (20 bytes): f16 d | f16 m | u8 qs[16].  x = d * q + m, q in 0..15.
void q4_1(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const float m = half_at(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < QK / 2; ++j) {
    y[j] = d * static_cast<float>(qs[j] & 0x0f) + m;
    y[j + QK / 2] = d * static_cast<float>(qs[j] >> 4) + m;
  }
}

// Q5_0 (22 bytes): f16 d | u8 qh[4] | u8 qs[16].  The 5th bit of element i is
// bit i of qh read as a little-endian u32.  x = d * (q - 16), q in 0..31.
void q5_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const uint32_t qh = le32(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < QK / 2; ++j) {
    const int lo = (qs[j] & 0x0f) | static_cast<int>(((qh >> j) & 1u) << 4);
    const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + QK / 2)) & 1u) << 4);
    y[j] = d * static_cast<float>(lo - 16);
    y[j + QK / 2] = d * static_cast<float>(hi - 16);
  }
}

// Q5_1 (24 bytes): f16 d | f16 m | u8 qh[4] | u8 qs[16].  x = d * q + m.
void q5_1(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const float m = half_at(b + 2);
  const uint32_t qh = le32(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < QK / 2; ++j) {
    const int lo = (qs[j] & 0x0f) | static_cast<int>(((qh >> j) & 1u) << 4);
    const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + QK / 2)) & 1u) << 4);
    y[j] = d * static_cast<float>(lo) + m;
    y[j + QK / 2] = d * static_cast<float>(hi) + m;
  }
}

// Q8_0 (34 bytes): f16 d | i8 qs[32].  x = d * q.
void q8_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < QK; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// IQ4_NL (18 bytes): f16 d | u8 qs[16], nibbles as in Q4_0, but each nibble
// indexes a fixed non-linear table of 16 levels.  x = d * kvalues[q].
constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                     1,    13,   25,  38,  53,  69,  89,  113};
void iq4_nl(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < QK / 2; ++j) {
    y[j] = d * static_cast<float>(kIq4nlValues[qs[j] & 0x0f]);
    y[j + QK / 2] = d * static_cast<float>(kIq4nlValues[qs[j] >> 4]);
  }
}

// ---------------------------------------------------------------------------
// k-quants: 256-element super-blocks split into sub-blocks (16 or 32 elements)
// with their own small integer scale (and min), themselves scaled by f16
// super-block factors.
//
// The 2-bit and 3-bit quants are packed "by planes": a 32-byte group of `qs`
// covers 128 elements, element (g * 128 + j * 32 + l) being bits 2j..2j+1 of
// qs[g * 32 + l], for g = 0..1, j = 0..3, l = 0..31.

// Q2_K (84 bytes): u8 scales[16] | u8 qs[64] | f16 d | f16 dmin.
// 16 sub-blocks of 16 elements; scales[s] low nibble = scale, high nibble = min.
// x = (d * scale) * q - (dmin * min), q in 0..3.
void q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = half_at(b + 80);
  const float dmin = half_at(b + 82);
  for (int e = 0; e < QK_K; ++e) {
    const int g = e / 128, j = (e % 128) / 32, l = e % 32;
    const int q = (qs[g * 32 + l] >> (2 * j)) & 3;
    const uint8_t sc = scales[e / 16];
    const float dl = d * static_cast<float>(sc & 0x0f);
    const float ml = dmin * static_cast<float>(sc >> 4);
    y[e] = dl * static_cast<float>(q) - ml;
  }
}

// Q3_K (110 bytes): u8 hmask[32] | u8 qs[64] | u8 scales[12] | f16 d.
// Low 2 bits of element e come from qs (planes, as in Q2_K); its 3rd bit is bit
// (e / 32) of hmask[e % 32], and a CLEAR bit means "subtract 4": q = low - 4 *
// (1 - hbit), in -4..3. 16 sub-blocks of 16 elements with 6-bit scales stored
// offset by 32: the low 4 bits of scale s are nibble (s / 8) of scales[s % 8],
// the high 2 bits are bits 2 * (s / 4) .. +1 of scales[8 + s % 4].
// x = (d * (scale - 32)) * q.
void q3_k(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* sc = b + 96;
  const float d = half_at(b + 108);
  int scale[16];
  for (int s = 0; s < 16; ++s) {
    const int low = (sc[s % 8] >> (4 * (s / 8))) & 0x0f;
    const int high = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
    scale[s] = (low | (high << 4)) - 32;
  }
  for (int e = 0; e < QK_K; ++e) {
    const int g = e / 128, j = (e % 128) / 32, l = e % 32;
    const int low = (qs[g * 32 + l] >> (2 * j)) & 3;
    const int hbit = (hmask[l] >> (e / 32)) & 1;
    const int q = low - (hbit ? 0 : 4);
    const float dl = d * static_cast<float>(scale[e / 16]);
    y[e] = dl * static_cast<float>(q);
  }
}

// The 12-byte scale block of Q4_K / Q5_K: eight 6-bit scales and eight 6-bit
// mins for eight 32-element sub-blocks.
//   bytes 0..3 : scale[0..3] in bits 0..5, bits 6..7 = high bits of scale[4..7]
//   bytes 4..7 : min[0..3]   in bits 0..5, bits 6..7 = high bits of min[4..7]
//   bytes 8..11: low 4 bits of scale[4..7] (low nibble) and min[4..7] (high nibble)

// Q4_K (144 bytes): f16 d | f16 dmin | u8 scales[12] | u8 qs[128].
// Sub-block s (32 elements) takes the low (s even) or high (s odd) nibbles of
// qs[32 * (s / 2) .. +32].  x = (d * scale[s]) * q - (dmin * min[s]), q in 0..15.
void q4_k(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const float dmin = half_at(b + 2);
  int sc[8], mn[8];
  ggml_k_scale_min(b + 4, sc, mn);
  const uint8_t* qs = b + 16;
  for (int s = 0; s < 8; ++s) {
    const float dl = d * static_cast<float>(sc[s]);
    const float ml = dmin * static_cast<float>(mn[s]);
    for (int l = 0; l < 32; ++l) {
      const int q = (qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0x0f;
      y[s * 32 + l] = dl * static_cast<float>(q) - ml;
    }
  }
}

// Q5_K (176 bytes): f16 d | f16 dmin | u8 scales[12] | u8 qh[32] | u8 qs[128].
// Low 4 bits as in Q4_K; the 5th bit of element l of sub-block s is bit s of qh[l].
// x = (d * scale[s]) * q - (dmin * min[s]), q in 0..31.
void q5_k(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const float dmin = half_at(b + 2);
  int sc[8], mn[8];
  ggml_k_scale_min(b + 4, sc, mn);
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int s = 0; s < 8; ++s) {
    const float dl = d * static_cast<float>(sc[s]);
    const float ml = dmin * static_cast<float>(mn[s]);
    for (int l = 0; l < 32; ++l) {
      const int low = (qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0x0f;
      const int high = (qh[l] >> s) & 1;
      y[s * 32 + l] = dl * static_cast<float>(low | (high << 4)) - ml;
    }
  }
}

// Q6_K (210 bytes): u8 ql[128] | u8 qh[64] | i8 scales[16] | f16 d.
// Element e = g * 128 + r (g = 0..1, r = 0..127): its low 4 bits are nibble
// (r / 64) of ql[g * 64 + r % 64], its high 2 bits are bits 2 * (r / 32) .. +1
// of qh[g * 32 + r % 32]; q = (low | high << 4) - 32, in -32..31. 16 sub-blocks
// of 16 elements with signed 8-bit scales.  x = (d * scale[e / 16]) * q.
void q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half_at(b + 208);
  for (int e = 0; e < QK_K; ++e) {
    const int g = e / 128, r = e % 128;
    const int low = (ql[g * 64 + r % 64] >> (4 * (r / 64))) & 0x0f;
    const int high = (qh[g * 32 + r % 32] >> (2 * (r / 32))) & 3;
    const int q = (low | (high << 4)) - 32;
    const float dl = d * static_cast<float>(scales[e / 16]);
    y[e] = dl * static_cast<float>(q);
  }
}

using BlockFn = void (*)(const uint8_t*, float*);

BlockFn block_fn(DType t) {
  switch (t) {
    case DType::Q4_0: return q4_0;
    case DType::Q4_1: return q4_1;
    case DType::Q5_0: return q5_0;
    case DType::Q5_1: return q5_1;
    case DType::Q8_0: return q8_0;
    case DType::Q2_K: return q2_k;
    case DType::Q3_K: return q3_k;
    case DType::Q4_K: return q4_k;
    case DType::Q5_K: return q5_k;
    case DType::Q6_K: return q6_k;
    case DType::IQ4_NL: return iq4_nl;
    default: return nullptr;
  }
}

}  // namespace

void ggml_k_scale_min(const uint8_t* s, int sc[8], int mn[8]) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = s[j] & 63;
    mn[j] = s[4 + j] & 63;
    sc[4 + j] = (s[8 + j] & 0x0f) | ((s[j] >> 6) << 4);
    mn[4 + j] = (s[8 + j] >> 4) | ((s[4 + j] >> 6) << 4);
  }
}

bool can_dequantize(DType t) {
  switch (t) {
    case DType::F32: case DType::F16: case DType::BF16: case DType::F64:
    case DType::I8: case DType::U8: case DType::I16: case DType::I32: case DType::I64:
      return true;
    case DType::BOOL:
      return false;
    default:
      return block_fn(t) != nullptr;
  }
}

void dequantize_row(DType t, const uint8_t* src, float* dst, uint64_t elems) {
  const DTypeInfo& info = dtype_info(t);
  if (!can_dequantize(t)) fail("", "dequantize", "format {} cannot be dequantized", info.name);
  if (elems % info.block_elems != 0)
    fail("", "dequantize", "{} elements are not a whole number of {}-element {} blocks", elems,
         info.block_elems, info.name);
  switch (t) {
    case DType::F32:
      if (elems > 0) std::memcpy(dst, src, elems * 4);
      return;
    case DType::F16:
      for (uint64_t i = 0; i < elems; ++i) dst[i] = f16_to_f32(le16(src + 2 * i));
      return;
    case DType::BF16:
      for (uint64_t i = 0; i < elems; ++i) dst[i] = bf16_to_f32(le16(src + 2 * i));
      return;
    case DType::F64:
      for (uint64_t i = 0; i < elems; ++i)
        dst[i] = static_cast<float>(std::bit_cast<double>(le64(src + 8 * i)));
      return;
    case DType::I8:
      for (uint64_t i = 0; i < elems; ++i) dst[i] = static_cast<float>(static_cast<int8_t>(src[i]));
      return;
    case DType::U8:
      for (uint64_t i = 0; i < elems; ++i) dst[i] = static_cast<float>(src[i]);
      return;
    case DType::I16:
      for (uint64_t i = 0; i < elems; ++i)
        dst[i] = static_cast<float>(static_cast<int16_t>(le16(src + 2 * i)));
      return;
    case DType::I32:
      for (uint64_t i = 0; i < elems; ++i)
        dst[i] = static_cast<float>(static_cast<int32_t>(le32(src + 4 * i)));
      return;
    case DType::I64:
      for (uint64_t i = 0; i < elems; ++i)
        dst[i] = static_cast<float>(static_cast<int64_t>(le64(src + 8 * i)));
      return;
    default:
      break;
  }
  const BlockFn fn = block_fn(t);
  const uint64_t blocks = elems / info.block_elems;
  for (uint64_t i = 0; i < blocks; ++i)
    fn(src + i * info.block_bytes, dst + i * info.block_elems);
}

std::vector<float> dequantize(const TensorView& t) {
  const std::string file = t.file ? t.file->path() : std::string();
  const std::string subject = fmt::format("tensor '{}'", t.name);
  uint64_t elems = 1;
  for (uint64_t d : t.shape) {
    if (d != 0 && elems > std::numeric_limits<uint64_t>::max() / d)
      fail(file, subject, "element count overflows");
    elems *= d;
  }
  const std::optional<uint64_t> nbytes = dtype_bytes(t.dtype, elems);
  if (!nbytes || *nbytes != t.nbytes)
    fail(file, subject, "{} bytes do not hold {} {} elements", t.nbytes, elems, dtype_name(t.dtype));
  if (!can_dequantize(t.dtype))
    fail(file, subject, "format {} cannot be dequantized", dtype_name(t.dtype));
  if (elems > std::numeric_limits<size_t>::max() / sizeof(float))
    fail(file, subject, "{} elements do not fit in memory", elems);
  std::vector<float> out(static_cast<size_t>(elems));
  dequantize_row(t.dtype, t.data, out.data(), elems);
  return out;
}

}  // namespace tessera
