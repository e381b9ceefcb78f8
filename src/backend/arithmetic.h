// The arithmetic level a model runs its integer-dot linears at, chosen once
// per model at load (LoadOptions::arithmetic). Both levels are deterministic:
// a request's bits depend only on its own tokens, never on the thread count,
// the chunking of its prompt, what it is batched with, or speculation.
//
// fast is the default (LoadOptions::arithmetic): on both real models its mean
// KL to an F32 copy of the GGUF is 4-9x below llama.cpp's own run of it.
//
//   exact  Two int8 activation passes (x, then its rounding residual;
//          kernels/int8_activations.h) on the layers' linears, about 15
//          significant bits; the determinism oracle and the transformers
//          parity tests run at this level. Prefill of palettized (lut)
//          weights takes the AMX / int16 GEMMs where the CPU has them.
//   fast   One int8 pass with a scale per 8 columns: half the integer work
//          per weight read. Every call, whatever its token count, runs the
//          integer-dot kernels, so a prompt token, a batched row and a
//          verify row all get a decode step's bits. Quality against an F32
//          copy of the source, beside llama.cpp's own arithmetic on the same
//          GGUF: docs/QUANTIZATION.md.
//
// The output head is the same at both: one pass, then the logits that could
// be the top one recomputed with two (kernels/qlinear_refine.h).
#pragma once

#include <string>

namespace tessera {

enum class Arithmetic { Exact, Fast };

const char* arithmetic_name(Arithmetic a);
// "exact" or "fast"; throws Error naming the value otherwise.
Arithmetic parse_arithmetic(const std::string& name);
// int8 activation passes of the layers' integer-dot linears at `a`.
inline int layer_act_passes(Arithmetic a) { return a == Arithmetic::Exact ? 2 : 1; }

}  // namespace tessera
