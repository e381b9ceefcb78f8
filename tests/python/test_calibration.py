"""Activation-aware palettes (convert/calibration.h): the input moments
E[x_c²] that `tessera convert` weighs LUT palettes with are those of the f32
model (checked against transformers forward hooks on the same tokens); the
bundle records its calibration; conversion stays deterministic for any
thread count; a bad calibration text is a clear error."""

import hashlib
import json

import numpy as np
import pytest
import torch

import tessera
from conftest import run_tessera
from tiny_models import make_tiny_model


def hf_moments(model, ids):
    """E[x_c²] of every decoder-layer linear's input, by forward hooks."""
    sums = {}
    hooks = []
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.Linear) and ".layers." in name:
            def hook(mod, inp, out, name=name):
                x = inp[0].reshape(-1, inp[0].shape[-1]).double()
                sums[name + ".weight"] = (x * x).mean(0).numpy()
            hooks.append(m.register_forward_hook(hook))
    with torch.no_grad():
        model(torch.tensor([ids]))
    for h in hooks:
        h.remove()
    return sums


@pytest.mark.parametrize("arch", ["llama", "qwen2", "gemma3"])
def test_moments_match_transformers(tmp_path, arch):
    hf = make_tiny_model(arch, tmp_path)
    cal = tessera.calibrate(str(tmp_path), max_tokens=100, threads=2)
    assert cal["random_ids"]  # tiny models have no tokenizer
    assert len(cal["ids"]) == 100 and len(set(cal["ids"])) > 50
    ref = hf_moments(hf, cal["ids"])
    got = {k: v for k, v in cal["input_moments"].items() if ".layers." in k}
    assert sorted(got) == sorted(ref)
    for name, m in ref.items():
        np.testing.assert_allclose(got[name], m, rtol=2e-4, atol=1e-7, err_msg=name)
    # Linears sharing an input share its moments.
    assert np.array_equal(got["model.layers.0.self_attn.q_proj.weight"], got["model.layers.0.self_attn.v_proj.weight"])
    # The same tokens every time.
    assert tessera.calibrate(str(tmp_path), max_tokens=100)["ids"] == cal["ids"]


def test_real_tokenizer_text_and_limit(pulled_model_path):
    gguf = pulled_model_path("smollm2-135m-instruct")
    cal = tessera.calibrate(gguf, text="Hello there, this is a short calibration text.", max_tokens=6)
    assert not cal["random_ids"]
    assert cal["ids"] == tessera.Tokenizer.from_file(gguf).encode("Hello there, this is a short calibration text.")[:6]


def manifest(bundle):
    return json.loads((bundle / "manifest.json").read_text())


def weights_sha(bundle):
    return hashlib.sha256((bundle / "weights.bin").read_bytes()).hexdigest()


def test_convert_records_calibration_and_is_deterministic(tmp_path):
    src = tmp_path / "src"
    make_tiny_model("qwen3", src)
    a = tmp_path / "a"
    run_tessera("convert", src, "-o", a, "-t", "1", "--calibration-tokens", "64")
    assert manifest(a)["quantization"]["calibration"] == {"text": "builtin", "tokens": 64, "random_ids": True}
    b = tmp_path / "b"
    run_tessera("convert", src, "-o", b, "-t", "2", "--calibration-tokens", "64")
    assert weights_sha(a) == weights_sha(b)
    plain = tmp_path / "plain"
    run_tessera("convert", src, "-o", plain, "--calibration", "none")
    assert manifest(plain)["quantization"]["calibration"] == {"text": "none"}
    assert weights_sha(plain) != weights_sha(a)
    # Formats without palettes skip calibration.
    i8 = tmp_path / "i8"
    run_tessera("convert", src, "-o", i8, "--weights", "int8")
    assert manifest(i8)["quantization"]["calibration"] == {"text": "none"}
    # Either bundle runs.
    for bundle in (a, plain):
        logits = tessera.Session(tessera.Model(str(bundle))).forward([1, 2, 3])
        assert np.isfinite(logits).all()


def test_bad_calibration_options_are_clear_errors(tmp_path):
    src = tmp_path / "src"
    make_tiny_model("llama", src)
    proc = run_tessera("convert", src, "-o", tmp_path / "x", "--calibration", str(tmp_path / "missing.txt"), check=False)
    assert proc.returncode == 2 and "missing.txt" in proc.stderr and "calibration" in proc.stderr
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    proc = run_tessera("convert", src, "-o", tmp_path / "x", "--calibration", str(empty), check=False)
    assert proc.returncode == 2 and "empty" in proc.stderr
    proc = run_tessera("convert", src, "-o", tmp_path / "x", "--calibration-tokens", "0", check=False)
    assert proc.returncode == 2 and "--calibration-tokens" in proc.stderr
    assert not (tmp_path / "x").exists()
