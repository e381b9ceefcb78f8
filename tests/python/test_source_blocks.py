"""A quantized GGUF converts losslessly by default (blk4 ... blk8 keep the
source's block values, convert/gguf_transcode.h) and runs on the integer
kernels: the default bundles of both real models agree with the reference
path (the GGUF dequantized to f32) on >= 99% of the greedy tokens of the
oracle corpus, teacher-forced, and pass the audit."""

import json
from pathlib import Path

import numpy as np
import pytest

import tessera
from conftest import run_tessera

CORPUS = json.loads(Path(tessera.oracle_corpus_path()).read_text())


@pytest.fixture(scope="module")
def default_bundle(pulled_model_path, tmp_path_factory):
    made = {}

    def get(name):
        if name not in made:
            out = tmp_path_factory.mktemp("blk") / name
            run_tessera("convert", pulled_model_path(name), "-o", out, "-t", "2")
            made[name] = out
        return made[name]

    return get


def teacher_forced_agreement(bundle, source, arithmetic="exact"):
    """Greedy continuations of the corpus by the reference path (the GGUF
    dequantized to f32), then the bundle's argmax at each of those positions
    given the same prefix."""
    ref = tessera.Model(source, threads=2, reference=True)
    test = tessera.Model(str(bundle), threads=2, arithmetic=arithmetic)
    tok = tessera.Tokenizer.from_file(source)
    agree = total = 0
    for prompt in CORPUS["prompts"]:
        ids = tok.encode(prompt)
        out = tessera.Session(ref).generate(ids, CORPUS["max_tokens"], ignore_eos=True)
        seq = list(ids) + list(out["ids"])
        logits = np.asarray(tessera.Session(test).forward(seq[:-1], all_logits=True))
        picked = logits[len(ids) - 1:].argmax(axis=1)
        agree += int((picked == np.asarray(out["ids"])).sum())
        total += len(out["ids"])
    return agree / total, total


@pytest.mark.parametrize("name,formats", [
    ("smollm2-135m-instruct", {"blk4", "blk8", "f32"}),
    ("gemma3-270m", {"blk4", "blk5", "blk6", "blk8", "f32"}),  # Q4_K, Q5_0, Q6_K, Q8_0
])
def test_default_bundle_keeps_the_gguf_values_and_agrees(default_bundle, pulled_model_path, name, formats):
    bundle = default_bundle(name)
    m = json.loads((bundle / "manifest.json").read_text())
    assert m["quantization"]["source_blocks_kept"] is True
    assert {t["format"] for t in m["tensors"]} == formats
    assert all(err == 0 for err in m["quantization"]["mse"].values())
    audit = run_tessera("audit", bundle, "--threads", "2")
    assert "PASS" in audit.stdout
    rate, total = teacher_forced_agreement(bundle, pulled_model_path(name))
    print(f"\n{name}: default bundle agrees with the reference path on {rate:.2%} of {total} greedy tokens")
    assert rate >= 0.99
    # The fast level (one activation pass) is judged against llama.cpp's own
    # arithmetic (docs/QUANTIZATION.md); its agreement here is reported, and
    # held to the floor it measured with margin (2026-12-06: docs/QUANTIZATION.md).
    fast, _ = teacher_forced_agreement(bundle, pulled_model_path(name), "fast")
    print(f"{name}: at --arithmetic fast on {fast:.2%}")
    assert fast >= 0.9


def test_explicit_format_requantizes(pulled_model_path, tmp_path):
    out = tmp_path / "lut"
    run_tessera("convert", pulled_model_path("smollm2-135m-instruct"), "-o", out, "--weights", "lut4",
                "--calibration", "none", "--kmeans-iterations", "2")
    m = json.loads((out / "manifest.json").read_text())
    assert m["quantization"]["source_blocks_kept"] is False
    assert "lut4" in {t["format"] for t in m["tensors"]}
    bad = run_tessera("convert", pulled_model_path("smollm2-135m-instruct"), "-o", tmp_path / "x",
                      "--weights", "blk4", check=False)
    assert bad.returncode == 2 and "blk4" in bad.stderr
