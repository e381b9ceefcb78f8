"""Writes a GGUF with random weights and the real shapes of a small model, for
speed comparisons that need no downloaded weights: llama.cpp and
`tessera convert` / `tessera run` both load it.

Weights are seeded N(0, 0.02²), RMSNorm weights 1, biases N(0, 0.02²); the
layers' matrices are stored as --type (Q4_0 by default, quantized with
gguf-py), norms and biases as F32. The token embedding, which both shapes tie
to the output head, is stored as `llama-quantize` stores it (--head-type
auto): for a quantized --type, llama.cpp's quantizer gives the output tensor
(or a tied embedding) Q6_K, and Q8_0 where the row length is not a multiple
of Q6_K's 256-value blocks, as here (576 and 896 columns): so Q8_0, the head
of the issue's 334 MiB Qwen2.5-0.5B Q4_0 file (src/llama-quant.cpp,
llama_tensor_get_type). Files written before 2026-12-03 had a Q4_0 head
(--head-type q4_0 writes one again). The tokenizer is a
synthetic GPT-2-style byte-level BPE of exactly the vocabulary size: the 256
byte tokens, then the tokens of simple merges (every pair of byte tokens,
then byte-pair + byte), then the special tokens at the end.

    python3 bench/make_random_gguf.py -o /tmp/qwen25-0.5b-random.q4_0.gguf
    python3 bench/make_random_gguf.py --shape smollm2-135m --type q8_0 -o /tmp/smol-random.q8_0.gguf

Shapes:
    qwen2.5-0.5b   qwen2: hidden 896, 24 layers, 14 heads, 2 kv heads, head_dim 64,
                   ffn 4864, vocab 151936, tied embeddings, rope theta 1e6, qkv bias
    smollm2-135m   llama: hidden 576, 30 layers, 9 heads, 3 kv heads, head_dim 64,
                   ffn 1536, vocab 49152, tied embeddings, rope theta 100000
    lfm2-350m      lfm2: hidden 1024, 16 layers (attention at 2, 5, 8, 10, 12, 14; gated
                   short convolutions of 3 taps elsewhere), 16 heads, 8 kv heads, head_dim 64,
                   ffn 4608, vocab 65536, tied embeddings, rope theta 1e6 (needs --head-type:
                   its 1024-wide head is one llama-quantize would make Q6_K)
    qwen3.5-0.8b   qwen35: Qwen3.5-0.8B's text decoder (its config.json text_config, as in
                   tests/python/hf_config_expectations.py "qwen3_5_multimodal_0_8b_style"):
                   hidden 1024, 24 layers (gated attention at 3, 7, ..., 23; gated delta-net
                   elsewhere), 8 heads, 2 kv heads, head_dim 256 (q_proj 2x for the output
                   gate), rope theta 1e7 over 64 of the 256 dims, delta-net 16 key heads and
                   16 value heads of 128, conv kernel 4, ffn 3584, vocab 248320, tied
                   embeddings, ctx 262144, no multi-token-prediction block (needs --head-type)
    gemma4-e2b     gemma4: Gemma 4 E2B's text decoder (tests/python/hf_config_expectations.py
                   _E2B_TEXT): hidden 1536, 35 layers (full attention at 4, 9, ..., 34, sliding
                   window 512 elsewhere), 8 heads, 1 kv head, head_dim 256 sliding / 512 full,
                   the last 20 layers sharing KV (no k/v of their own) with double-wide MLPs
                   (ffn 6144, 12288 when shared), per-layer embeddings of 256 per layer
                   (table [262144][35*256], stored like the token embedding), rope theta 1e4
                   sliding / 1e6 proportional over a quarter of the full heads, final logit
                   softcap 30, vocab 262144, tied embeddings (needs --head-type). Its
                   tokenizer is the synthetic byte-level BPE with the GPT-2 pre-tokenizer
                   (Gemma 4's own "gemma4" tokenizer model is not synthesized)

Values the model's math needs that N(0, 0.02²) would not give: Qwen3.5's
ssm_a = -exp(A_log) is drawn in [-16, -1], its dt bias 1; Gemma 4's layer
output scales are 1 and its rope_freqs the converter's divisors (1 for the
64 turning pairs, 1e30 for the rest).
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

import gguf
from gguf import GGMLQuantizationType as Q

SHAPES = {
    "qwen2.5-0.5b": dict(arch="qwen2", name="Qwen2.5-0.5B (random weights)", hidden=896, layers=24, heads=14,
                         kv_heads=2, head_dim=64, ffn=4864, vocab=151936, ctx=32768, theta=1e6, eps=1e-6,
                         qkv_bias=True, pre="qwen2",
                         specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>"], bos=None, eos="<|endoftext|>"),
    "smollm2-135m": dict(arch="llama", name="SmolLM2-135M (random weights)", hidden=576, layers=30, heads=9,
                         kv_heads=3, head_dim=64, ffn=1536, vocab=49152, ctx=8192, theta=100000.0, eps=1e-5,
                         qkv_bias=False, pre="smollm",
                         specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>"], bos="<|im_start|>",
                         eos="<|im_end|>"),
    "qwen3.5-0.8b": dict(arch="qwen35", name="Qwen3.5-0.8B (random weights)", hidden=1024, layers=24, heads=8,
                         kv_heads=2, head_dim=256, ffn=3584, vocab=248320, ctx=262144, theta=1e7, eps=1e-6,
                         qkv_bias=False, pre="qwen35", rot_dims=64, full_interval=4, lin_k_heads=16,
                         lin_v_heads=16, lin_k_dim=128, lin_v_dim=128, conv_taps=4,
                         specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>"], bos=None, eos="<|im_end|>"),
    "gemma4-e2b": dict(arch="gemma4", name="Gemma 4 E2B (random weights)", hidden=1536, layers=35, heads=8,
                       kv_heads=1, head_dim=256, global_head_dim=512, ffn=6144, vocab=262144, ctx=131072,
                       theta=1e6, theta_swa=1e4, eps=1e-6, qkv_bias=False, pre="gpt-2", window=512,
                       full_layers=list(range(4, 35, 5)), kv_shared=20, double_wide=True, per_layer=256,
                       partial_rotary=0.25, softcap=30.0,
                       specials=["<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>"], bos="<bos>",
                       eos="<eos>"),
    "lfm2-350m": dict(arch="lfm2", name="LFM2-350M (random weights)", hidden=1024, layers=16, heads=16,
                      kv_heads=8, head_dim=64, ffn=4608, vocab=65536, ctx=128000, theta=1e6, eps=1e-5,
                      qkv_bias=False, pre="lfm2", attention_layers=[2, 5, 8, 10, 12, 14], conv_taps=3,
                      specials=["<|startoftext|>", "<|im_start|>", "<|im_end|>"], bos="<|startoftext|>",
                      eos="<|im_end|>"),
}

TYPES = {"q4_0": (Q.Q4_0, gguf.LlamaFileType.MOSTLY_Q4_0), "q8_0": (Q.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0),
         "f16": (Q.F16, gguf.LlamaFileType.MOSTLY_F16), "f32": (Q.F32, gguf.LlamaFileType.ALL_F32)}


def byte_alphabet():
    """GPT-2's bytes_to_unicode, in byte order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return [chr(table[b]) for b in range(256)]


def synthetic_vocab(size, specials):
    """(tokens, token_types, merges): byte tokens, merged tokens, specials last."""
    chars = byte_alphabet()
    n_merged = size - 256 - len(specials)
    if n_merged < 0:
        raise SystemExit(f"vocabulary of {size} is too small")
    tokens = list(chars)
    merges = []
    pairs = ((a, b) for a in chars for b in chars)
    triples = ((a + b, c) for a in chars for b in chars for c in chars)
    for left, right in (p for gen in (pairs, triples) for p in gen):
        if len(merges) == n_merged:
            break
        merges.append(f"{left} {right}")
        tokens.append(left + right)
    tokens += specials
    types = [gguf.TokenType.NORMAL] * (size - len(specials)) + [gguf.TokenType.CONTROL] * len(specials)
    assert len(tokens) == size and len(set(tokens)) == size
    return tokens, [int(t) for t in types], merges


def model_metadata(w, s):
    """The `{arch}.*` keys of shape `s` (the tokenizer's are written apart), in
    the order that keeps the files of the first shapes byte for byte as before."""
    w.add_context_length(s["ctx"])
    w.add_embedding_length(s["hidden"])
    w.add_block_count(s["layers"])
    if s["arch"] != "gemma4":  # (Gemma 4: one width per layer, below)
        w.add_feed_forward_length(s["ffn"])
    w.add_head_count(s["heads"])
    lfm2 = s["arch"] == "lfm2"
    attention = set(s["attention_layers"]) if lfm2 else set(range(s["layers"]))
    # LFM2 lists KV heads per layer, 0 for its convolution layers.
    w.add_head_count_kv([s["kv_heads"] if i in attention else 0 for i in range(s["layers"])] if lfm2
                        else s["kv_heads"])
    if lfm2:
        w.add_shortconv_l_cache(s["conv_taps"])
        w.add_vocab_size(s["vocab"])
    w.add_rope_freq_base(s["theta"])
    if s["arch"] not in ("qwen35", "gemma4"):
        w.add_rope_dimension_count(s["head_dim"])
    w.add_layer_norm_rms_eps(s["eps"])
    if s["arch"] == "qwen35":
        qwen35_metadata(w, s)
    elif s["arch"] == "gemma4":
        gemma4_metadata(w, s)
    else:
        if s["head_dim"] * s["heads"] != s["hidden"]:
            w.add_key_length(s["head_dim"])
            w.add_value_length(s["head_dim"])


def qwen35_metadata(w, s):
    """llama.cpp's qwen35 keys (its converter's Qwen3_5TextModel)."""
    w.add_key_length(s["head_dim"])
    w.add_value_length(s["head_dim"])
    w.add_rope_dimension_count(s["rot_dims"])
    w.add_rope_dimension_sections([11, 11, 10, 0])
    w.add_ssm_conv_kernel(s["conv_taps"])
    w.add_ssm_state_size(s["lin_k_dim"])
    w.add_ssm_group_count(s["lin_k_heads"])
    w.add_ssm_time_step_rank(s["lin_v_heads"])
    w.add_ssm_inner_size(s["lin_v_dim"] * s["lin_v_heads"])
    w.add_full_attention_interval(s["full_interval"])


def gemma4_metadata(w, s):
    """llama.cpp's gemma4 keys (its converter's Gemma4Model)."""
    layers, first_shared = s["layers"], s["layers"] - s["kv_shared"]
    w.add_feed_forward_length([s["ffn"] * (2 if s["double_wide"] and i >= first_shared else 1)
                               for i in range(layers)])
    w.add_rope_freq_base_swa(s["theta_swa"])
    w.add_final_logit_softcapping(s["softcap"])
    w.add_sliding_window(s["window"])
    w.add_shared_kv_layers(s["kv_shared"])
    w.add_embedding_length_per_layer_input(s["per_layer"])
    w.add_sliding_window_pattern([i not in s["full_layers"] for i in range(layers)])
    w.add_key_length(s["global_head_dim"])
    w.add_value_length(s["global_head_dim"])
    w.add_key_length_swa(s["head_dim"])
    w.add_value_length_swa(s["head_dim"])
    w.add_rope_dimension_count(s["global_head_dim"])
    w.add_rope_dimension_count_swa(s["head_dim"])


def gemma4_rope_freqs(s):
    """The converter's per-pair RoPE divisors of the full-attention layers:
    1 for the int(prf · head / 2) turning pairs, 1e30 (never turning) beyond."""
    g = s["global_head_dim"]
    turning = int(g * s["partial_rotary"] / 2)
    return np.array([1.0] * turning + [1e30] * (g // 2 - turning), np.float32)


def progress(i, s):
    print(f"\rlayer {i + 1}/{s['layers']}", end="", file=sys.stderr, flush=True)


def qwen35_tensors(s, rng, matrix, vector, head_qtype, w):
    """Qwen3.5's tensors as llama.cpp's qwen35 loader reads them: gated
    attention every full_interval-th layer, gated delta-net elsewhere."""
    hidden, hd = s["hidden"], s["head_dim"]
    nk, nv, dk, dv = s["lin_k_heads"], s["lin_v_heads"], s["lin_k_dim"], s["lin_v_dim"]
    conv_dim = 2 * nk * dk + nv * dv
    vector("output_norm.weight", hidden, 1.0)  # stored 1 + w: w = 0
    for i in range(s["layers"]):
        b = f"blk.{i}."
        vector(b + "attn_norm.weight", hidden, 1.0)
        vector(b + "post_attention_norm.weight", hidden, 1.0)
        if (i + 1) % s["full_interval"] == 0:
            matrix(b + "attn_q.weight", 2 * s["heads"] * hd, hidden)  # queries and their output gate
            matrix(b + "attn_k.weight", s["kv_heads"] * hd, hidden)
            matrix(b + "attn_v.weight", s["kv_heads"] * hd, hidden)
            matrix(b + "attn_output.weight", hidden, s["heads"] * hd)
            vector(b + "attn_q_norm.weight", hd, 1.0)
            vector(b + "attn_k_norm.weight", hd, 1.0)
        else:
            matrix(b + "attn_qkv.weight", conv_dim, hidden)
            matrix(b + "attn_gate.weight", nv * dv, hidden)
            w.add_tensor(b + "ssm_conv1d.weight",
                         rng.standard_normal((conv_dim, s["conv_taps"]), dtype=np.float32) * np.float32(0.2))
            vector(b + "ssm_dt.bias", nv, 1.0)
            w.add_tensor(b + "ssm_a", -rng.uniform(1.0, 16.0, nv).astype(np.float32))  # -exp(A_log)
            matrix(b + "ssm_beta.weight", nv, hidden)
            matrix(b + "ssm_alpha.weight", nv, hidden)
            vector(b + "ssm_norm.weight", dv, 1.0)
            matrix(b + "ssm_out.weight", hidden, nv * dv)
        matrix(b + "ffn_gate.weight", s["ffn"], hidden)
        matrix(b + "ffn_up.weight", s["ffn"], hidden)
        matrix(b + "ffn_down.weight", hidden, s["ffn"])
        progress(i, s)


def gemma4_tensors(s, rng, matrix, vector, head_qtype, w):
    """Gemma 4's tensors as llama.cpp's gemma4 loader reads them."""
    hidden, layers, P = s["hidden"], s["layers"], s["per_layer"]
    first_shared = layers - s["kv_shared"]
    # The per-layer table, [vocab][layers * P], drawn and quantized in row
    # blocks: as f32 it would take 4 bytes x 2.3 G values.
    table_rows, table_cols = s["vocab"], layers * P
    if head_qtype in (Q.F32, Q.F16):
        matrix("per_layer_token_embd.weight", table_rows, table_cols, head_qtype)
    else:
        parts = []
        for r0 in range(0, table_rows, 8192):
            n = min(8192, table_rows - r0)
            block = rng.standard_normal((n, table_cols), dtype=np.float32) * np.float32(0.02)
            parts.append(gguf.quants.quantize(block, head_qtype))
        w.add_tensor("per_layer_token_embd.weight", np.concatenate(parts), raw_dtype=head_qtype)
    matrix("per_layer_model_proj.weight", table_cols, hidden, Q.F16)  # llama-quantize leaves it as converted
    vector("per_layer_proj_norm.weight", P, 1.0)
    vector("output_norm.weight", hidden, 1.0)
    g = s["global_head_dim"]
    w.add_tensor("rope_freqs.weight", gemma4_rope_freqs(s))
    for i in range(layers):
        b = f"blk.{i}."
        hd = g if i in s["full_layers"] else s["head_dim"]
        ff = s["ffn"] * (2 if s["double_wide"] and i >= first_shared else 1)
        vector(b + "attn_norm.weight", hidden, 1.0)
        matrix(b + "attn_q.weight", s["heads"] * hd, hidden)
        vector(b + "attn_q_norm.weight", hd, 1.0)
        if i < first_shared:  # the KV-sharing layers have no k / v of their own
            matrix(b + "attn_k.weight", s["kv_heads"] * hd, hidden)
            matrix(b + "attn_v.weight", s["kv_heads"] * hd, hidden)
            vector(b + "attn_k_norm.weight", hd, 1.0)
        matrix(b + "attn_output.weight", hidden, s["heads"] * hd)
        vector(b + "post_attention_norm.weight", hidden, 1.0)
        vector(b + "ffn_norm.weight", hidden, 1.0)
        matrix(b + "ffn_gate.weight", ff, hidden)
        matrix(b + "ffn_up.weight", ff, hidden)
        matrix(b + "ffn_down.weight", hidden, ff)
        vector(b + "post_ffw_norm.weight", hidden, 1.0)
        matrix(b + "inp_gate.weight", P, hidden)
        matrix(b + "proj.weight", hidden, P)
        vector(b + "post_norm.weight", hidden, 1.0)
        vector(b + "layer_output_scale.weight", 1, 1.0)
        progress(i, s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", required=True, help="GGUF file to write (keep it out of the repository)")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="qwen2.5-0.5b")
    ap.add_argument("--type", choices=sorted(TYPES), default="q4_0", help="format of the matrices and embedding")
    ap.add_argument("--head-type", choices=["auto"] + sorted(TYPES), default="auto",
                    help="format of the tied embedding / output head (auto: llama-quantize's choice, above)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=0, help="override the layer count (0: the model's)")
    args = ap.parse_args()

    s = dict(SHAPES[args.shape])
    if args.layers > 0:
        if s["arch"] == "gemma4":
            raise SystemExit("--layers: not for gemma4-e2b (its layer kinds and KV sharing are laid out over 35)")
        s["layers"] = args.layers
    qtype, ftype = TYPES[args.type]
    head_type = args.head_type
    if head_type == "auto":
        quantized = qtype not in (Q.F32, Q.F16)
        head_type = "q8_0" if quantized and s["hidden"] % 256 != 0 else args.type
        if quantized and s["hidden"] % 256 == 0:
            raise SystemExit("llama-quantize would pick Q6_K for this head, which this script cannot write: "
                             "pass --head-type")
    head_qtype = TYPES[head_type][0]
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    rng = np.random.default_rng(args.seed)
    t0 = time.time()

    w = gguf.GGUFWriter(str(tmp), s["arch"])
    w.add_name(s["name"])
    w.add_file_type(ftype)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    model_metadata(w, s)
    lfm2 = s["arch"] == "lfm2"
    attention = set(s["attention_layers"]) if lfm2 else set(range(s["layers"]))

    tokens, types, merges = synthetic_vocab(s["vocab"], s["specials"])
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(s["pre"])
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    if s["bos"]:
        w.add_bos_token_id(tokens.index(s["bos"]))
    w.add_eos_token_id(tokens.index(s["eos"]))
    w.add_add_bos_token(False)

    def matrix(name, rows, cols, t=qtype):
        data = (rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(0.02))
        if t == Q.F32:
            w.add_tensor(name, data)
        elif t == Q.F16:
            w.add_tensor(name, data.astype(np.float16))
        else:
            w.add_tensor(name, gguf.quants.quantize(data, t), raw_dtype=t)

    def vector(name, n, value=None):
        data = np.full(n, value, dtype=np.float32) if value is not None else \
            rng.standard_normal(n, dtype=np.float32) * np.float32(0.02)
        w.add_tensor(name, data)

    hidden, hd = s["hidden"], s["head_dim"]
    q_dim, kv_dim = s["heads"] * hd, s["kv_heads"] * hd
    matrix("token_embd.weight", s["vocab"], hidden, head_qtype)  # tied: no output.weight
    own_layers = s["arch"] in ("qwen35", "gemma4")  # written by their own functions
    if own_layers:
        (qwen35_tensors if s["arch"] == "qwen35" else gemma4_tensors)(s, rng, matrix, vector, head_qtype, w)
    if not own_layers:
        vector("token_embd_norm.weight" if lfm2 else "output_norm.weight", hidden, 1.0)
    for i in range(0 if own_layers else s["layers"]):
        b = f"blk.{i}."
        vector(b + "attn_norm.weight", hidden, 1.0)
        if i not in attention:  # LFM2's gated short convolution
            w.add_tensor(b + "shortconv.conv.weight",
                         rng.standard_normal((hidden, s["conv_taps"]), dtype=np.float32) * np.float32(0.2))
            matrix(b + "shortconv.in_proj.weight", 3 * hidden, hidden)
            matrix(b + "shortconv.out_proj.weight", hidden, hidden)
            vector(b + "ffn_norm.weight", hidden, 1.0)
            matrix(b + "ffn_gate.weight", s["ffn"], hidden)
            matrix(b + "ffn_up.weight", s["ffn"], hidden)
            matrix(b + "ffn_down.weight", hidden, s["ffn"])
            continue
        matrix(b + "attn_q.weight", q_dim, hidden)
        matrix(b + "attn_k.weight", kv_dim, hidden)
        matrix(b + "attn_v.weight", kv_dim, hidden)
        if s["qkv_bias"]:
            vector(b + "attn_q.bias", q_dim)
            vector(b + "attn_k.bias", kv_dim)
            vector(b + "attn_v.bias", kv_dim)
        if lfm2:
            vector(b + "attn_q_norm.weight", hd, 1.0)
            vector(b + "attn_k_norm.weight", hd, 1.0)
        matrix(b + "attn_output.weight", hidden, q_dim)
        vector(b + "ffn_norm.weight", hidden, 1.0)
        matrix(b + "ffn_gate.weight", s["ffn"], hidden)
        matrix(b + "ffn_up.weight", s["ffn"], hidden)
        matrix(b + "ffn_down.weight", hidden, s["ffn"])
        print(f"\rlayer {i + 1}/{s['layers']}", end="", file=sys.stderr, flush=True)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, out)
    print(f"\nwrote {out} ({out.stat().st_size / 2**20:.1f} MiB, {args.shape}, {args.type}, head {head_type}, "
          f"seed {args.seed}) "
          f"in {time.time() - t0:.1f} s", file=sys.stderr)
    print(out)


if __name__ == "__main__":
    main()
