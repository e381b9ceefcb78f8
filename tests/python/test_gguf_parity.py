"""Parity of Tessera's GGUF reader, ggml dequantizer and spec_from_gguf with the
reference implementations: gguf-py (`gguf.GGUFReader`, `gguf.quants.dequantize`)
and transformers' GGUF config loading.

(a) synthetic blocks of every supported format, dequantized bit for bit equal;
(b) the two real GGUF models: metadata, tensor list and every tensor's values;
(c) ModelSpec of the real models against hard facts and transformers' config.
"""

import zlib
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as Q  # noqa: E402

import tessera  # noqa: E402

core = tessera._core

# Formats and, for the block formats, the byte offsets of their f16 scale fields.
FORMATS = {
    "F32": [], "F16": [], "BF16": [],
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
    "IQ4_NL": [0],
}


def reference(fmt: str, raw: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf scales in the "raw" cases
        return np.asarray(gguf.quants.dequantize(raw, Q[fmt]), dtype=np.float32).reshape(-1)


def assert_bits_equal(ours: np.ndarray, ref: np.ndarray, nan_aware: bool):
    assert ours.dtype == np.float32 and ref.dtype == np.float32
    assert ours.shape == ref.shape
    if nan_aware:
        nan = np.isnan(ref)
        np.testing.assert_array_equal(np.isnan(ours), nan)
        ours, ref = ours[~nan], ref[~nan]
    diff = np.flatnonzero(ours.view(np.uint32) != ref.view(np.uint32))
    assert diff.size == 0, (f"{diff.size} of {ref.size} values differ, first at {diff[0]}: "
                            f"ours {ours[diff[0]]!r} reference {ref[diff[0]]!r}")


def random_blocks(fmt: str, n_blocks: int, rng, sane_scales: bool) -> np.ndarray:
    block_elems, block_bytes = gguf.GGML_QUANT_SIZES[Q[fmt]]
    if fmt == "F32" and sane_scales:
        return rng.standard_normal(n_blocks).astype(np.float32).view(np.uint8)
    if fmt in ("F16", "BF16") and sane_scales:
        values = rng.standard_normal(n_blocks).astype(np.float32)
        if fmt == "F16":
            return values.astype(np.float16).view(np.uint8)
        return (values.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
    raw = rng.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)
    if sane_scales:
        for off in FORMATS[fmt]:
            # Finite scales over a wide range, including f16 subnormals and zero.
            scale = (rng.standard_normal(n_blocks) * np.exp2(rng.integers(-20, 6, n_blocks)))
            scale[::17] = 0.0
            raw[:, off:off + 2] = scale.astype(np.float16).reshape(-1, 1).view(np.uint8)
    return raw.reshape(-1)


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("sane_scales", [True, False], ids=["sane", "raw"])
def test_synthetic_blocks_bit_equal(fmt, sane_scales):
    rng = np.random.default_rng(zlib.crc32(f"{fmt}/{sane_scales}".encode()))
    block_elems, _ = gguf.GGML_QUANT_SIZES[Q[fmt]]
    n_blocks = 4096 if block_elems > 1 else 65536
    raw = random_blocks(fmt, n_blocks, rng, sane_scales)
    ref = reference(fmt, raw)
    ours = core.dequantize(fmt, raw.tobytes(), ref.size)
    # Random bit patterns include NaNs, whose payload the two may propagate differently.
    assert_bits_equal(ours, ref, nan_aware=not sane_scales)
    if sane_scales:
        assert np.isfinite(ours).all()


def test_dequantize_rejects_bad_input():
    with pytest.raises(tessera.TesseraError, match="whole number"):
        core.dequantize("Q4_0", b"\0" * 18, 31)
    with pytest.raises(ValueError, match="need 18 bytes"):
        core.dequantize("Q4_0", b"\0" * 17, 32)
    with pytest.raises(ValueError, match="unknown format"):
        core.dequantize("Q9_X", b"", 0)


# ---------------------------------------------------------------------------
# Real models

MODELS = ["smollm2-135m-instruct", "gemma3-270m"]


@pytest.fixture(scope="module")
def real(pulled_model_path):
    """real(name) -> (path, GGUFReader, tessera GgufFile), built once per model."""
    cache = {}

    def get(name):
        if name not in cache:
            path = pulled_model_path(name)
            cache[name] = (str(path), gguf.GGUFReader(str(path)), core.GgufFile(str(path)))
        return cache[name]

    return get


@pytest.mark.parametrize("name", MODELS)
def test_header_and_metadata_match_gguf_py(real, name):
    path, reader, ours = real(name)
    assert ours.version == reader.fields["GGUF.version"].contents()
    assert ours.alignment == reader.alignment
    assert ours.data_offset == reader.data_offset
    expected = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    got = ours.metadata
    assert list(got) == list(expected)  # same keys, same order
    for key, value in expected.items():
        assert got[key] == value, key
        assert type(got[key]) is type(value), key


@pytest.mark.parametrize("name", MODELS)
def test_tensor_list_matches_gguf_py(real, name):
    path, reader, ours = real(name)
    listed = ours.tensors
    assert [t[0] for t in listed] == [t.name for t in reader.tensors]
    for (tname, dtype, shape), ref in zip(listed, reader.tensors):
        assert dtype == ref.tensor_type.name, tname
        assert shape == tuple(reversed(ref.shape.tolist())), tname  # outermost first
        info = ours.tensor_info(tname)
        assert info["offset"] == ref.data_offset, tname
        assert info["nbytes"] == ref.n_bytes, tname


@pytest.mark.parametrize("name", MODELS)
def test_every_tensor_dequantizes_bit_equal(real, name):
    path, reader, ours = real(name)
    for ref in reader.tensors:
        expected = np.asarray(gguf.quants.dequantize(ref.data, ref.tensor_type), dtype=np.float32)
        got = ours.dequantize(ref.name)
        assert got.shape == tuple(reversed(ref.shape.tolist())), ref.name
        assert_bits_equal(got.reshape(-1), expected.reshape(-1), nan_aware=False)


def test_missing_tensor_and_bad_file_raise_tessera_error(real, tmp_path):
    path, reader, ours = real("smollm2-135m-instruct")
    with pytest.raises(tessera.TesseraError, match="no such tensor"):
        ours.dequantize("nope.weight")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(Path(path).read_bytes()[:4096])
    with pytest.raises(ValueError, match="bad.gguf"):
        core.GgufFile(str(bad))


# ---------------------------------------------------------------------------
# ModelSpec

def transformers_config(monkeypatch, path, reader):
    """transformers' config for a GGUF, reusing our already-parsed GGUFReader
    (parsing the 262k-token Gemma vocabulary again would cost ~20 s)."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    monkeypatch.setattr(gguf, "GGUFReader", lambda p, *a, **k: reader)
    p = Path(path)
    return transformers.AutoConfig.from_pretrained(str(p.parent), gguf_file=p.name)


def test_spec_smollm2(real, monkeypatch):
    path, reader, ours = real("smollm2-135m-instruct")
    s = ours.spec()
    # SmolLM2-135M model card / config.json
    assert s["arch"] == "llama"
    assert (s["num_layers"], s["hidden_size"], s["num_heads"], s["num_kv_heads"]) == (30, 576, 9, 3)
    assert (s["head_dim"], s["intermediate_size"], s["vocab_size"]) == (64, 1536, 49152)
    assert s["tie_word_embeddings"] is True
    assert s["activation"] == "silu"
    assert s["layer_types"] == ["full_attention"] * 30
    assert s["rope_local"] is None and s["sliding_window"] == 0

    c = transformers_config(monkeypatch, path, reader)
    assert s["num_layers"] == c.num_hidden_layers
    assert s["hidden_size"] == c.hidden_size
    assert s["intermediate_size"] == c.intermediate_size
    assert s["num_heads"] == c.num_attention_heads
    assert s["num_kv_heads"] == c.num_key_value_heads
    assert s["head_dim"] == c.head_dim
    assert s["vocab_size"] == c.vocab_size
    assert s["context_length"] == c.max_position_embeddings
    assert s["norm_eps"] == c.rms_norm_eps
    assert s["rope"]["theta"] == c.rope_parameters["rope_theta"]
    assert s["rope"]["scaling"]["type"] == c.rope_parameters["rope_type"]
    assert s["tie_word_embeddings"] == c.tie_word_embeddings
    assert s["attention_bias"] == c.attention_bias
    assert s["bos_token_id"] == c.bos_token_id
    assert s["eos_token_ids"] == [c.eos_token_id]


def test_spec_gemma3(real, monkeypatch):
    path, reader, ours = real("gemma3-270m")
    s = ours.spec()
    # Gemma 3 270M model card / config.json
    assert s["arch"] == "gemma3"
    assert (s["num_layers"], s["hidden_size"], s["num_heads"], s["num_kv_heads"]) == (18, 640, 4, 1)
    assert (s["head_dim"], s["intermediate_size"], s["vocab_size"]) == (256, 2048, 262144)
    assert s["sliding_window"] == 512
    assert s["layer_types"] == (["sliding_attention"] * 5 + ["full_attention"]) * 3
    assert s["activation"] == "gelu_pytorch_tanh"
    assert s["norm_weight_plus_one"] and s["scale_embeddings"] and s["qk_norm"]
    assert s["tie_word_embeddings"] is True
    assert s["rope"]["theta"] == 1e6 and s["rope_local"]["theta"] == 1e4
    assert s["eos_token_ids"] == [1, 106]  # <eos>, <end_of_turn> (as generation_config.json)

    c = transformers_config(monkeypatch, path, reader)
    assert c.model_type == "gemma3_text"
    assert s["num_layers"] == c.num_hidden_layers
    assert s["hidden_size"] == c.hidden_size
    assert s["intermediate_size"] == c.intermediate_size
    assert s["num_heads"] == c.num_attention_heads
    assert s["num_kv_heads"] == c.num_key_value_heads
    assert s["head_dim"] == c.head_dim
    assert s["vocab_size"] == c.vocab_size
    assert s["context_length"] == c.max_position_embeddings
    assert s["norm_eps"] == c.rms_norm_eps
    assert s["sliding_window"] == c.sliding_window
    assert s["layer_types"] == list(c.layer_types)
    assert s["query_pre_attn_scalar"] == c.query_pre_attn_scalar
    assert s["activation"] == c.hidden_activation
    assert s["rope"]["theta"] == c.rope_parameters["full_attention"]["rope_theta"]
    assert s["rope_local"]["theta"] == c.rope_parameters["sliding_attention"]["rope_theta"]
    assert s["attn_logit_softcap"] == (c.attn_logit_softcapping or 0.0)
    assert s["final_logit_softcap"] == (c.final_logit_softcapping or 0.0)
    assert s["tie_word_embeddings"] == c.tie_word_embeddings
    assert s["bos_token_id"] == c.bos_token_id
    assert s["eos_token_ids"][0] == c.eos_token_id
