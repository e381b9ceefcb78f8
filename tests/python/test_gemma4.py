"""Gemma 4 beyond the shared parity suite (test_forward_parity.py runs the
tiny Gemma 4 — per-layer embeddings, 3 KV-sharing layers, sliding and full
layers of different head sizes, proportional RoPE — with every other
architecture): a long greedy generation that is transformers' own token for
token, through the reference path and through a bundle cut into three chunks
(the KV-sharing layers in another chunk than the layers whose KV they read,
so the source k / v of a call cross the chunk boundary), the per-layer
embedding table stored quantized per row in a default bundle, and a GGUF in
llama.cpp's `gemma4` layout, written here from the tiny model as llama.cpp's
converter writes it, that loads and matches transformers."""

import json

import numpy as np
import pytest
import torch

import tessera
from conftest import run_tessera
from tiny_models import VOCAB, add_byte_vocabulary, hf_greedy, make_tiny_model


@pytest.fixture(scope="module")
def tiny_gemma4(tmp_path_factory):
    directory = tmp_path_factory.mktemp("gemma4")
    return directory, make_tiny_model("gemma4", directory)


def test_long_greedy_generation_is_transformers_own(tiny_gemma4, tmp_path):
    directory, hf = tiny_gemma4
    prompt = [(13 * i + 1) % VOCAB for i in range(30)]
    steps = 200  # 25 windows of 8
    want = hf_greedy(hf, prompt, steps)
    assert len(set(want)) > 20  # a varied sequence, not one repeated token
    r = tessera.Session(tessera.Model(str(directory), reference=True)).generate(prompt, max_tokens=steps,
                                                                               ignore_eos=True)
    assert r["ids"] == want
    bundle = tmp_path / "b"
    run_tessera("convert", directory, "-o", bundle, "--weights", "f32", "--embeddings", "f32", "--lm-head", "f32",
                "--chunks", "3")
    programs = json.loads((bundle / "manifest.json").read_text())["programs"]
    last_decode = [p for p in programs if p["name"] == "decode.c2"][0]
    assert {"k.full", "v.full", "k", "v", "ple"} <= set(last_decode["inputs"])  # carried across chunks
    r = tessera.Session(tessera.Model(str(bundle))).generate(prompt, max_tokens=steps, ignore_eos=True)
    assert r["ids"] == want


def test_per_layer_table_is_stored_quantized_and_read_by_row(tiny_gemma4, tmp_path):
    directory, _ = tiny_gemma4
    bundle = tmp_path / "q"
    run_tessera("convert", directory, "-o", bundle, "--weights", "int8")
    tensors = {t["name"]: t for t in json.loads((bundle / "manifest.json").read_text())["tensors"]}
    assert tensors["model.embed_tokens_per_layer.weight"]["format"] == "int8"
    # The audit exits non-zero here: the tiny model's 8-wide per-layer
    # projections are below the integer kernels' 64-column unit (E2B's are 256).
    audit = run_tessera("audit", bundle, "--json", check=False).stdout
    kernels = {k["kernel"] for p in json.loads(audit)["programs"] for k in p["kernels"]}
    assert "embed.int8.gather" in kernels
    ids = list(range(0, VOCAB, 7))
    got = tessera.Session(tessera.Model(str(bundle))).forward(ids)
    ref = tessera.Session(tessera.Model(str(directory), reference=True)).forward(ids)
    assert np.corrcoef(got.ravel(), ref.ravel())[0, 1] > 0.9


# --- GGUF in llama.cpp's gemma4 layout ----------------------------------------

gguf = pytest.importorskip("gguf")

GEMMA4_NAMES = {
    "input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "post_attention_norm.weight",
    "pre_feedforward_layernorm.weight": "ffn_norm.weight", "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "per_layer_input_gate.weight": "inp_gate.weight", "per_layer_projection.weight": "proj.weight",
    "post_per_layer_input_norm.weight": "post_norm.weight", "layer_scalar": "layer_output_scale.weight",
}
GEMMA4_TOP = {
    "model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
    "model.embed_tokens_per_layer.weight": "per_layer_token_embd.weight",
    "model.per_layer_model_projection.weight": "per_layer_model_proj.weight",
    "model.per_layer_projection_norm.weight": "per_layer_proj_norm.weight",
}


def write_gemma4_gguf(hf, directory, path):
    """The tiny model as llama.cpp's convert_hf_to_gguf.py writes Gemma 4 (f32):
    the keys Gemma4Model (over Gemma3Model and TextModel, conversion/gemma.py)
    derives from config.json, with their final values, its tensor names, no norm
    shift (Gemma 4 scales by w), and the rope_freqs divisors that make its
    full-attention RoPE proportional."""
    c = json.loads((directory / "config.json").read_text())
    layers, types = c["num_hidden_layers"], c["layer_types"]
    # Full-attention head size: global_head_dim, else per_layer_config's (as here).
    head_full = c.get("global_head_dim") or next(
        v["head_dim"] for k, v in c["per_layer_config"].items() if types[int(k)] == "full_attention")
    rope_full = c["rope_parameters"]["full_attention"]
    first_shared = layers - c["num_kv_shared_layers"]
    n_ff = [c["intermediate_size"] * (2 if c["use_double_wide_mlp"] and i >= first_shared else 1)
            for i in range(layers)]
    w = gguf.GGUFWriter(str(path), "gemma4")
    w.add_block_count(layers)
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_feed_forward_length(n_ff)
    w.add_head_count(c["num_attention_heads"])
    w.add_head_count_kv(c["num_key_value_heads"])  # no num_global_key_value_heads: one count
    w.add_rope_freq_base(rope_full["rope_theta"])
    w.add_rope_freq_base_swa(c["rope_parameters"]["sliding_attention"]["rope_theta"])
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_final_logit_softcapping(c["final_logit_softcapping"])
    w.add_sliding_window(c["sliding_window"])
    w.add_shared_kv_layers(c["num_kv_shared_layers"])
    w.add_embedding_length_per_layer_input(c["hidden_size_per_layer_input"])
    w.add_sliding_window_pattern([t == "sliding_attention" for t in types])
    w.add_key_length(head_full)
    w.add_value_length(head_full)
    w.add_key_length_swa(c["head_dim"])
    w.add_value_length_swa(c["head_dim"])
    w.add_rope_dimension_count(head_full)
    w.add_rope_dimension_count_swa(c["head_dim"])
    add_byte_vocabulary(w, c["vocab_size"])
    w.add_bos_token_id(c["bos_token_id"])
    w.add_eos_token_id(c["eos_token_id"])
    # Proportional RoPE: the first int(prf · head / 2) pairs turn (divisor 1),
    # the rest are held still by a divisor of 1e30.
    turning = int(head_full * rope_full["partial_rotary_factor"] / 2)
    w.add_tensor("rope_freqs.weight", np.array([1.0] * turning + [1e30] * (head_full // 2 - turning), np.float32))
    for name, p in hf.state_dict().items():
        if name == "lm_head.weight":
            continue  # tied
        if name in GEMMA4_TOP:
            g = GEMMA4_TOP[name]
        else:
            _, _, layer, rest = name.split(".", 3)
            g = f"blk.{layer}.{GEMMA4_NAMES[rest]}"
        w.add_tensor(g, p.detach().float().numpy())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_gguf_in_llamacpp_layout_matches_transformers(tiny_gemma4, tmp_path):
    directory, hf = tiny_gemma4
    path = tmp_path / "gemma4-tiny.gguf"
    write_gemma4_gguf(hf, directory, path)

    # The spec read from the GGUF's keys (and rope_freqs) is the one read from config.json.
    from_gguf = tessera.GgufFile(str(path)).spec()
    from_hf = tessera.spec_from_hf_config((directory / "config.json").read_text())
    from_gguf.pop("source_architecture"), from_hf.pop("source_architecture")
    assert np.float32(from_gguf.pop("norm_eps")) == np.float32(from_hf.pop("norm_eps"))  # an f32 key
    assert from_gguf == from_hf

    ids = torch.randint(0, VOCAB, (1, 60), generator=torch.Generator().manual_seed(9))  # > 7 windows of 8
    with torch.no_grad():
        ref = hf(ids).logits[0].numpy()
    ours = tessera.Session(tessera.Model(str(path), reference=True)).forward(ids[0].tolist(), all_logits=True)
    assert (ours.argmax(-1) == ref.argmax(-1)).all()
    assert np.abs(ours - ref).max() <= 1e-3 * np.abs(ref).max()
    # And the same values as the safetensors checkpoint, bit for bit.
    hf_run = tessera.Session(tessera.Model(str(directory), reference=True)).forward(ids[0].tolist(),
                                                                                    all_logits=True)
    assert np.array_equal(ours, hf_run)
