// Reference dequantization of ggml tensor formats to f32.
//
// This is the plain, readable twin of any optimised kernel that consumes ggml
// blocks: one loop per format, written from the block layouts (ggml-common.h)
// and checked bit for bit against gguf-py's `gguf.quants.dequantize`. Every
// result is computed in f32 with the same operations in the same order as
// gguf-py (e.g. Q2_K is (d * scale) * q - (dmin * min), each product rounded
// to f32), so the two agree exactly, NaN payloads aside. The .cc explains each
// block layout.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/tensor_view.h"

namespace tessera {

// Formats dequantize_row accepts: F32, F16, BF16, F64, the integer types
// (I8, U8, I16, I32, I64: converted to the nearest float) and the ggml block
// formats Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL.
bool can_dequantize(DType t);

// Decodes `elems` consecutive values stored in format t at `src` (which must
// hold dtype_bytes(t, elems) bytes; no alignment needed) into dst[0 .. elems).
// Throws Error when elems is not a whole number of blocks of t or t is not a
// supported format.
void dequantize_row(DType t, const uint8_t* src, float* dst, uint64_t elems);

// The 12-byte scale block of Q4_K / Q5_K: eight 6-bit scales and eight
// 6-bit mins of the eight 32-element sub-blocks (layout in the .cc).
void ggml_k_scale_min(const uint8_t* block_scales, int scale[8], int min[8]);

// Decodes a whole tensor (row-major, in the order of its bytes). Throws Error
// naming the tensor when its byte size does not match its shape and format.
std::vector<float> dequantize(const TensorView& t);

}  // namespace tessera
