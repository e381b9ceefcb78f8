"""LFM2 end to end beyond the shared parity suite (test_forward_parity.py
runs the tiny LFM2 with every other architecture):

- a GGUF in llama.cpp's `lfm2` layout (tensor names, per-layer KV head
  counts with 0 for the conv layers, squeezed [channels][taps] conv weights),
  written here with the gguf package from the tiny transformers model, loads
  and matches transformers;
- a long greedy generation is token for token transformers' own: the system
  this runtime carries over saw LFM2 collapse into repetition from reduction
  noise in the conv's zero-padded taps, so the conv's sums are exact
  (ref::short_conv) and checked over hundreds of steps here, in decode and
  through a converted bundle's chunks.
"""

import numpy as np
import pytest
import torch

import tessera
from conftest import run_tessera
from tiny_models import (VOCAB, assert_gguf_matches_transformers, hf_greedy, make_tiny_model, tiny_gguf_writer,
                         write_tiny_gguf)

gguf = pytest.importorskip("gguf")


@pytest.fixture(scope="module")
def tiny_lfm2(tmp_path_factory):
    directory = tmp_path_factory.mktemp("lfm2")
    return directory, make_tiny_model("lfm2", directory)


def write_lfm2_gguf(hf, path):
    """The tiny model as llama.cpp's convert_hf_to_gguf.py lays out LFM2 (f32)."""
    c = hf.config
    w = tiny_gguf_writer(hf, path, "lfm2", rms_eps=c.norm_eps,
                         head_count_kv=[0 if t == "conv" else c.num_key_value_heads for t in c.layer_types])
    w.add_shortconv_l_cache(c.conv_L_cache)
    names = {
        "operator_norm": "attn_norm", "ffn_norm": "ffn_norm",
        "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
        "self_attn.out_proj": "attn_output", "self_attn.q_layernorm": "attn_q_norm",
        "self_attn.k_layernorm": "attn_k_norm", "conv.conv": "shortconv.conv", "conv.in_proj": "shortconv.in_proj",
        "conv.out_proj": "shortconv.out_proj", "feed_forward.w1": "ffn_gate", "feed_forward.w3": "ffn_up",
        "feed_forward.w2": "ffn_down",
    }
    for name, p in hf.state_dict().items():
        data = p.detach().numpy().astype(np.float32)
        if name == "model.embed_tokens.weight":
            g = "token_embd.weight"
        elif name == "model.embedding_norm.weight":
            g = "token_embd_norm.weight"
        elif name == "lm_head.weight":
            continue  # tied
        else:
            _, _, layer, rest = name.split(".", 3)
            stem = rest.rsplit(".", 1)[0]
            g = f"blk.{layer}.{names[stem]}.weight"
            if stem == "conv.conv":
                data = data.squeeze(1)  # [channels][1][taps] -> [channels][taps], as llama.cpp's converter
        w.add_tensor(g, data)
    write_tiny_gguf(w)


def test_gguf_in_llamacpp_layout_matches_transformers(tiny_lfm2, tmp_path):
    directory, hf = tiny_lfm2
    path = tmp_path / "lfm2-tiny.gguf"
    write_lfm2_gguf(hf, path)
    assert_gguf_matches_transformers(hf, path, directory)


STEPS = 300


def test_long_greedy_generation_is_transformers_own(tiny_lfm2, tmp_path):
    directory, hf = tiny_lfm2
    prompt = [(7 * i + 3) % VOCAB for i in range(20)]
    want = hf_greedy(hf, prompt, STEPS)
    assert len(set(want)) > 50  # a varied sequence (measured: 109 distinct tokens), not one repeated token
    # The reference path, one decode call per token.
    s = tessera.Session(tessera.Model(str(directory), reference=True))
    logits = s.forward(prompt, all_logits=False)
    got = []
    for _ in range(STEPS):
        got.append(int(logits[0].argmax()))
        logits = s.forward([got[-1]], all_logits=False)
    assert got == want
    # A converted f32 bundle in two chunks, through generate().
    bundle = tmp_path / "b"
    run_tessera("convert", directory, "-o", bundle, "--weights", "f32", "--embeddings", "f32", "--lm-head", "f32",
                "--chunks", "2")
    r = tessera.Session(tessera.Model(str(bundle))).generate(prompt, max_tokens=STEPS, ignore_eos=True)
    assert r["ids"] == want
