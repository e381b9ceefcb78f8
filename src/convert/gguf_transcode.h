// Lossless transcoding of a quantized GGUF tensor into the blocked formats
// the integer kernels run (core/weight_format.h, blk4 ... blk8).
//
// Every ggml block format Tessera reads is, per sub-block of 16 or 32
// elements, an integer code per element times a sub-block scale, plus (in
// the "_1" and k-quant formats with mins) a sub-block offset, each rounded
// to f32 the way the ggml reference does (core/ggml_dequant.cc):
//
//   format  sub-block  code                  scale            offset         stored as
//   Q4_0    32         q - 8                 d                -              blk4, codebook q - 8
//   Q4_1    32         q                     d                m              blk4, codebook q
//   IQ4_NL  32         kvalues[q]            d                -              blk4, codebook kvalues
//   Q4_K    32         q                     d·scale          -dmin·min      blk4, codebook q
//   Q5_0    32         q - 16                d                -              blk5, codebook q - 16
//   Q5_1    32         q                     d                m              blk5, codebook q
//   Q5_K    32         q                     d·scale          -dmin·min      blk5, codebook q
//   Q6_K    16         q - 32                d·scale          -              blk6, codebook q - 32
//   Q8_0    32         q                     d                -              blk8
//   Q2_K    16         q                     d·scale          -dmin·min      blk8
//   Q3_K    16         q (-4..3)             d·(scale - 32)   -              blk8
//
// so decode_row of the transcoded weight gives the ggml reference's f32
// values bit for bit (tested). Codes keep the source's bits (Q2_K and Q3_K,
// rare, take a byte each). The simple formats' scales and offsets are f16
// and stored so; the k-quants' (d·scale, −dmin·min) are stored as their
// factors, an f16 multiplier per 256 columns (d, or −dmin) and an int8 per
// sub-block, whose f32 product is the value exactly (core/weight_format.h,
// super-blocks). A bundle then takes the GGUF's bytes, plus an eighth of a
// byte per 32 weights for the k-quants' 6-bit scales held as bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "convert/quantize.h"
#include "core/dtype.h"
#include "core/tensor_view.h"

namespace tessera {

// Whether a tensor stored as t transcodes into a blocked format.
bool can_transcode(DType t);

// The format a tensor of type t becomes (blk4 ... blk8); t must transcode.
WeightFormat transcoded_format(DType t);

// v: a [rows, cols] tensor (GGUF order: cols innermost) stored as a format
// that transcodes. Output row r is the source's row row_source[r] (the
// identity when empty: llama's attn_q / attn_k rows are reordered back to
// the Hugging Face order, sources/weight_loader.h). Throws Error naming the
// tensor when its bytes do not match its shape and format.
QuantizedWeight transcode_ggml_blocks(const TensorView& v, const std::vector<int64_t>& row_source = {});

}  // namespace tessera
