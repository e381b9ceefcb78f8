"""Qwen3.5 beyond the shared parity suite (test_forward_parity.py runs the
tiny Qwen3.5 with every other architecture on 48 tokens): sequences longer
than transformers' delta-rule chunk (64 positions), where its prefill takes
the chunked form across several chunks and its decode the recurrent form, and
a long greedy generation that is transformers' own token for token, also
through a converted bundle in two chunks; and a GGUF in llama.cpp's `qwen35`
layout, written here from the tiny model as llama.cpp's converter writes it,
loads and matches transformers."""

import json

import numpy as np
import pytest
import torch

import tessera
from conftest import run_tessera
from tiny_models import VOCAB, add_byte_vocabulary, hf_greedy, make_tiny_model

LONG = 150  # > two of transformers' 64-position chunks


@pytest.fixture(scope="module")
def tiny_qwen3_5(tmp_path_factory):
    directory = tmp_path_factory.mktemp("qwen3_5")
    return directory, make_tiny_model("qwen3_5", directory)


def assert_close(ours, ref, what):
    assert (ours.argmax(-1) == ref.argmax(-1)).all(), what
    err, scale = np.abs(ours - ref).max(), np.abs(ref).max()
    assert err <= 1e-3 * scale, f"{what}: max |Δlogit| {err:.3g} > 1e-3 · {scale:.3g}"


def test_prefill_and_decode_past_the_chunk_size_match_transformers(tiny_qwen3_5):
    directory, hf = tiny_qwen3_5
    ids = torch.randint(0, VOCAB, (1, LONG), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        ref = hf(ids).logits[0].numpy()  # chunked gated delta rule over 3 chunks
    model = tessera.Model(str(directory), reference=True)
    assert_close(tessera.Session(model).forward(ids[0].tolist(), all_logits=True), ref, "prefill")
    # transformers' decode: the recurrent form from its cache, one token per call.
    steps, past = [], None
    with torch.no_grad():
        for t in range(LONG):
            out = hf(ids[:, t:t + 1], past_key_values=past, use_cache=True)
            past = out.past_key_values
            steps.append(out.logits[0, -1].numpy())
    s = tessera.Session(model)
    ours = np.concatenate([s.forward([i], all_logits=True) for i in ids[0].tolist()])
    assert_close(ours, np.stack(steps), "decode")


def test_long_greedy_generation_is_transformers_own(tiny_qwen3_5, tmp_path):
    directory, hf = tiny_qwen3_5
    prompt = [(11 * i + 5) % VOCAB for i in range(70)]
    steps = 200
    want = hf_greedy(hf, prompt, steps)
    assert len(set(want)) > 20  # a varied sequence, not one repeated token
    r = tessera.Session(tessera.Model(str(directory), reference=True)).generate(prompt, max_tokens=steps,
                                                                               ignore_eos=True)
    assert r["ids"] == want
    bundle = tmp_path / "b"
    run_tessera("convert", directory, "-o", bundle, "--weights", "f32", "--embeddings", "f32", "--lm-head", "f32",
                "--chunks", "2")
    r = tessera.Session(tessera.Model(str(bundle))).generate(prompt, max_tokens=steps, ignore_eos=True)
    assert r["ids"] == want


# --- GGUF in llama.cpp's qwen35 layout ----------------------------------------

gguf = pytest.importorskip("gguf")


def tiled_v_heads(t, dim, n_k, n_v, head):
    """llama.cpp's value-head order along `dim`: HF groups the n_v value heads
    by key head (head g·r + j is key head g's j-th, r = n_v / n_k); the
    converter tiles them (GGUF head j·n_k + g) for ggml's broadcast."""
    shape = list(t.shape)
    r = n_v // n_k
    t = t.reshape(shape[:dim] + [n_k, r, head] + shape[dim + 1:])
    return t.swapaxes(dim, dim + 1).reshape(shape)


def write_qwen3_5_gguf(hf, path, matrix_type=None):
    """The tiny model as llama.cpp's convert_hf_to_gguf.py writes Qwen3.5:
    Qwen3_5TextModel's keys, tensor names and value changes (conversion/qwen.py);
    f32, or the projection matrices in `matrix_type` (a gguf ggml type)."""
    c = hf.config
    n_k, n_v = c.linear_num_key_heads, c.linear_num_value_heads
    d_k, d_v = c.linear_key_head_dim, c.linear_value_head_dim
    w = gguf.GGUFWriter(str(path), "qwen35")
    w.add_block_count(c.num_hidden_layers)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_rope_dimension_sections([11, 11, 10, 0])  # the converter's default mrope_section
    w.add_rope_freq_base(c.rope_parameters["rope_theta"])
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_key_length(c.head_dim)
    w.add_value_length(c.head_dim)
    w.add_ssm_conv_kernel(c.linear_conv_kernel_dim)
    w.add_ssm_state_size(d_k)
    w.add_ssm_group_count(n_k)
    w.add_ssm_time_step_rank(n_v)
    w.add_ssm_inner_size(d_v * n_v)
    # (this gguf package has no add_recurrent_layers; the key is the converter's)
    w.add_array("qwen35.attention.recurrent_layers", [t == "linear_attention" for t in c.layer_types])
    w.add_full_attention_interval(4)
    w.add_rope_dimension_count(int(c.head_dim * c.rope_parameters["partial_rotary_factor"]))
    add_byte_vocabulary(w, c.vocab_size)
    names = {
        "input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "post_attention_norm.weight",
        "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
        "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
        "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
        "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
        "mlp.down_proj.weight": "ffn_down.weight",
        "linear_attn.in_proj_qkv.weight": "attn_qkv.weight", "linear_attn.in_proj_z.weight": "attn_gate.weight",
        "linear_attn.in_proj_b.weight": "ssm_beta.weight", "linear_attn.in_proj_a.weight": "ssm_alpha.weight",
        "linear_attn.A_log": "ssm_a", "linear_attn.dt_bias": "ssm_dt.bias",
        "linear_attn.conv1d.weight": "ssm_conv1d.weight", "linear_attn.norm.weight": "ssm_norm.weight",
        "linear_attn.out_proj.weight": "ssm_out.weight",
    }
    for name, p in hf.state_dict().items():
        t, rest = p.detach().float(), ""
        if name == "model.embed_tokens.weight":
            g = "token_embd.weight"
        elif name == "model.norm.weight":
            g = "output_norm.weight"
        elif name == "lm_head.weight":
            g = "output.weight"
        else:
            _, _, layer, rest = name.split(".", 3)
            g = f"blk.{layer}.{names[rest]}"
        # Value heads tiled (grouped by key head in HF).
        if rest.startswith("linear_attn."):
            if rest in ("linear_attn.in_proj_qkv.weight", "linear_attn.conv1d.weight"):
                t = t.reshape(t.shape[0], -1) if rest.endswith("conv1d.weight") else t  # taps squeezed
                qk = 2 * n_k * d_k
                t = torch.cat([t[:qk], tiled_v_heads(t[qk:], 0, n_k, n_v, d_v)])
            elif rest == "linear_attn.in_proj_z.weight":
                t = tiled_v_heads(t, 0, n_k, n_v, d_v)
            elif rest in ("linear_attn.in_proj_b.weight", "linear_attn.in_proj_a.weight"):
                t = tiled_v_heads(t, 0, n_k, n_v, 1)
            elif rest in ("linear_attn.A_log", "linear_attn.dt_bias"):
                t = tiled_v_heads(t.reshape(-1, 1), 0, n_k, n_v, 1).reshape(-1)
            elif rest == "linear_attn.out_proj.weight":
                t = tiled_v_heads(t, 1, n_k, n_v, d_v)
        if rest == "linear_attn.A_log":
            t = -torch.exp(t)
        elif g.endswith("norm.weight") and not g.endswith("ssm_norm.weight"):
            t = t + 1  # the HF model scales by 1 + w
        data = t.contiguous().numpy().astype(np.float32)
        if matrix_type is not None and data.ndim == 2 and g != "token_embd.weight" and "conv1d" not in g:
            w.add_tensor(g, gguf.quants.quantize(data, matrix_type), raw_dtype=matrix_type)
        else:
            w.add_tensor(g, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def exact_a_log(hf):
    """Moves each A_log by at most an ulp or two so that log(-(-exp(A_log))),
    as the loader computes it (exp in f32 as the converter, log in double),
    gives A_log back: then the GGUF holds the checkpoint's values exactly."""
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if not name.endswith("A_log"):
                continue
            for _ in range(8):
                back = np.log(np.exp(p.numpy()).astype(np.float64)).astype(np.float32)
                if np.array_equal(back, p.numpy()):
                    break
                p.copy_(torch.from_numpy(back))
            assert np.array_equal(np.log(np.exp(p.numpy()).astype(np.float64)).astype(np.float32), p.numpy())


def test_gguf_in_llamacpp_layout_matches_transformers(tmp_path):
    directory = tmp_path / "hf"
    hf = make_tiny_model("qwen3_5", directory)
    assert hf.config.linear_num_value_heads != hf.config.linear_num_key_heads  # the value heads get reordered
    exact_a_log(hf)
    hf.save_pretrained(directory)
    path = tmp_path / "qwen3_5-tiny.gguf"
    write_qwen3_5_gguf(hf, path)

    # The spec read from the GGUF's keys is the one read from config.json.
    from_gguf = tessera.GgufFile(str(path)).spec()
    from_hf = tessera.spec_from_hf_config((directory / "config.json").read_text())
    from_gguf.pop("source_architecture"), from_hf.pop("source_architecture")
    assert np.float32(from_gguf.pop("norm_eps")) == np.float32(from_hf.pop("norm_eps"))  # an f32 key
    assert from_gguf == from_hf

    ids = torch.randint(0, VOCAB, (1, 90), generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        ref = hf(ids).logits[0].numpy()
    ours = tessera.Session(tessera.Model(str(path), reference=True)).forward(ids[0].tolist(), all_logits=True)
    assert_close(ours, ref, "GGUF")
    # And the same values as the safetensors checkpoint, bit for bit.
    hf_run = tessera.Session(tessera.Model(str(directory), reference=True)).forward(ids[0].tolist(),
                                                                                    all_logits=True)
    assert np.array_equal(ours, hf_run)


def test_quantized_gguf_converts_with_its_blocks_in_hf_row_order(tmp_path):
    """A converted bundle keeps a quantized GGUF's blocks (rows moved, values
    not): the delta-net matrices whose value heads llama.cpp reordered by rows
    must come out in HF row order, ssm_out (reordered columns) through f32."""
    hf = make_tiny_model("qwen3_5", tmp_path / "hf")
    path = tmp_path / "qwen3_5-tiny.q8_0.gguf"
    write_qwen3_5_gguf(hf, path, gguf.GGMLQuantizationType.Q8_0)
    bundle = tmp_path / "b"
    # The tensors that are not transcoded (ssm_out, the tied-free head and the
    # embedding) kept f32, so that only the transcoded blocks differ from f32.
    run_tessera("convert", path, "-o", bundle, "--keep", r".*out_proj\.weight=f32", "--keep", "lm_head.weight=f32",
                "--keep", r"model\.embed_tokens\.weight=f32")
    tensors = {t["name"]: t for t in json.loads((bundle / "manifest.json").read_text())["tensors"]}
    for name in ("in_proj_qkv", "in_proj_z", "in_proj_a", "in_proj_b"):  # the GGUF's own Q8_0 blocks
        assert tensors[f"model.layers.0.linear_attn.{name}.weight"]["format"] == "blk8"
    assert tensors["model.layers.0.linear_attn.out_proj.weight"]["format"] == "f32"
    ids = torch.randint(0, VOCAB, (1, 40), generator=torch.Generator().manual_seed(11)).tolist()[0]
    ref = tessera.Session(tessera.Model(str(path), reference=True)).forward(ids, all_logits=True)
    got = tessera.Session(tessera.Model(str(bundle), arithmetic="exact")).forward(ids, all_logits=True)
    err, scale = np.abs(got - ref).max(), np.abs(ref).max()
    assert err <= 2e-3 * scale, f"max |Δlogit| {err:.3g} vs {scale:.3g}"  # measured: 5e-4


def test_gguf_with_a_non_negative_ssm_a_is_a_clear_error(tmp_path):
    """ssm_a is -exp(A_log): a value >= 0 has no A_log, and loading says which tensor."""
    hf = make_tiny_model("qwen3_5", tmp_path / "hf")
    path = tmp_path / "bad.gguf"
    write_qwen3_5_gguf(hf, path)
    reader = gguf.GGUFReader(str(path), "r+")
    [t] = [t for t in reader.tensors if t.name == "blk.1.ssm_a"]
    t.data[2] = 0.25
    reader.data.flush()
    del reader
    with pytest.raises(tessera.TesseraError, match=r"blk\.1\.ssm_a.*entry 0\.25 is not a finite negative number"):
        tessera.Session(tessera.Model(str(path), reference=True)).forward([1, 2, 3])
