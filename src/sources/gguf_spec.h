// ModelSpec from GGUF metadata (llama.cpp's `{arch}.*` and `tokenizer.ggml.*` keys).
//
// The spec describes the model as Hugging Face transformers defines it, i.e. what
// `AutoConfig.from_pretrained(dir, gguf_file=...)` yields for the same file, with
// the architecture facts llama.cpp hard-codes (Gemma 3: every 6th layer global,
// local RoPE base 10000, GELU-tanh, (1 + w) norms, sqrt(hidden) embedding scale).
//
// Supported GGUF architectures: llama, qwen2, qwen3, gemma3, lfm2, qwen35 (its
// gated delta-net geometry from the ssm.* keys, layer kinds from
// attention.recurrent_layers or full_attention_interval, multi-token-prediction
// blocks past the decoder skipped) and gemma4 (layer kinds from
// attention.sliding_window_pattern, per-kind head sizes and KV heads, KV sharing,
// double-wide MLPs from per-layer feed_forward_length, per-layer embeddings, and
// proportional RoPE from the rope_freqs.weight divisors). Any other
// `general.architecture` is an Error naming it (qwen35moe and other
// mixture-of-experts models among them).
//
// Two conventions of llama.cpp's converter change the STORED tensors but not the
// model, and whoever loads GGUF weights against this spec must undo them exactly
// as transformers does (modeling_gguf_pytorch_utils.py):
//   * llama: attn_q / attn_k rows are permuted for interleaved-pair RoPE; the spec
//     says neox_style (rotate-half) like HF, so un-permute the rows per head
//     (reshape [heads, 2, head_dim/2, in] <- [heads, head_dim/2, 2, in]).
//   * gemma3: every `*norm.weight` tensor is stored as (1 + w); the spec keeps
//     HF's norm_weight_plus_one = true, so subtract 1 on load.
//   * qwen35: likewise (1 + w) for every norm but the delta-net's ssm_norm; A_log
//     stored as -exp(A_log); the delta-net's value heads reordered (weight_loader.cc).
#pragma once

#include "core/model_spec.h"
#include "sources/gguf.h"

namespace tessera {

// Throws Error (file = the GGUF path, subject = the metadata key or tensor) when
// a required key is missing, has the wrong type, or values are inconsistent.
ModelSpec spec_from_gguf(const GgufFile& file);

}  // namespace tessera
