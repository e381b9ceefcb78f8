"""OLMo 2, the architecture added as one folder (src/model/olmo2/), one
registry line and tests. Beyond the shared parity suite (test_forward_parity.py
runs the tiny OLMo 2 with every other architecture: prefill, step-by-step
decode, call splits and threads, f16 KV, second turns):

- a GGUF in llama.cpp's `olmo2` layout (tensor names, no q/k permutation),
  written here with the gguf package from the tiny transformers model, loads,
  matches transformers and gives the safetensors checkpoint's bits;
- a long greedy generation is token for token transformers' own, and so is a
  converted bundle's in chunks;
- config.json fields the ModelSpec cannot express are refused by name.
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
def tiny_olmo2(tmp_path_factory):
    directory = tmp_path_factory.mktemp("olmo2")
    return directory, make_tiny_model("olmo2", directory)


def write_olmo2_gguf(hf, path):
    """The tiny model as llama.cpp's convert_hf_to_gguf.py (Olmo2Model) lays it out (f32)."""
    w = tiny_gguf_writer(hf, path, "olmo2")
    names = {
        "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
        "post_attention_layernorm": "post_attention_norm", "post_feedforward_layernorm": "post_ffw_norm",
        "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
    }
    top = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
           "lm_head.weight": "output.weight"}
    for name, p in hf.state_dict().items():
        if name in top:
            g = top[name]
        else:
            _, _, layer, rest = name.split(".", 3)
            g = f"blk.{layer}.{names[rest.rsplit('.', 1)[0]]}.weight"
        w.add_tensor(g, p.detach().numpy().astype(np.float32))
    write_tiny_gguf(w)


def test_gguf_in_llamacpp_layout_matches_transformers(tiny_olmo2, tmp_path):
    directory, hf = tiny_olmo2
    path = tmp_path / "olmo2-tiny.gguf"
    write_olmo2_gguf(hf, path)
    assert_gguf_matches_transformers(hf, path, directory)


def test_long_greedy_generation_is_transformers_own(tiny_olmo2, tmp_path):
    directory, hf = tiny_olmo2
    prompt = [(5 * i + 1) % VOCAB for i in range(16)]
    steps = 120
    want = hf_greedy(hf, prompt, steps)
    assert len(set(want)) > 20  # a varied sequence, not one repeated token
    s = tessera.Session(tessera.Model(str(directory), reference=True))
    logits = s.forward(prompt, all_logits=False)
    got = []
    for _ in range(steps):
        got.append(int(logits[0].argmax()))
        logits = s.forward([got[-1]], all_logits=False)
    assert got == want
    # A converted f32 bundle in two chunks gives the same tokens.
    bundle = tmp_path / "b"
    run_tessera("convert", directory, "-o", bundle, "--weights", "f32", "--embeddings", "f32", "--lm-head", "f32",
                "--chunks", "2")
    r = tessera.Session(tessera.Model(str(bundle))).generate(prompt, max_tokens=steps, ignore_eos=True)
    assert r["ids"] == want


def test_config_fields_it_cannot_express_are_refused():
    spec = tessera.spec_from_hf_config({"model_type": "olmo2"})
    assert spec["arch"] == "olmo2" and spec["qk_norm"] and spec["num_kv_heads"] == spec["num_heads"] == 32
    with pytest.raises(tessera.TesseraError, match="attention_bias"):
        tessera.spec_from_hf_config({"model_type": "olmo2", "attention_bias": True})
