"""LFM2, Qwen3.5, Gemma 4 and OLMo 2 through the same tools as the dense models:
converted to palettized bundles in chunks, their determinism oracle (token
ids and sha256 over the oracle corpus) recorded at one thread and one chunk
and checked at two threads and another chunk split, `tessera run` on text,
`tessera bench`, and the compute-plan audit (<= 5% of ops and time on
fallback kernels) where the tiny shapes reach the integer kernels' 64-column
unit. Parity with transformers is in test_forward_parity.py and the
per-architecture files."""

import json

import pytest

from conftest import run_tessera
from tiny_models import add_byte_tokenizer, make_tiny_model

NEW = ["lfm2", "qwen3_5", "gemma4", "olmo2"]


@pytest.fixture(scope="module", params=NEW)
def tiny_bundle(request, tmp_path_factory):
    src = tmp_path_factory.mktemp(request.param)
    make_tiny_model(request.param, src)
    add_byte_tokenizer(src)
    bundle = src.parent / (src.name + "-lut4")
    run_tessera("convert", src, "-o", bundle, "--weights", "lut4", "--group-size", "16", "--chunks", "2")
    return request.param, src, bundle


def test_oracle_is_split_and_thread_free(tiny_bundle, tmp_path):
    name, _, bundle = tiny_bundle
    oracle = tmp_path / "oracle.json"
    run_tessera("oracle", bundle, "--record", oracle, "--threads", "1", "--chunks", "1")
    recorded = json.loads(oracle.read_text())
    assert recorded, name
    run_tessera("oracle", bundle, "--check", oracle, "--threads", "2", "--chunks", "3")


def test_run_and_bench(tiny_bundle):
    name, _, bundle = tiny_bundle
    out = run_tessera("run", bundle, "-p", "Once upon a time", "-n", "12", "--ignore-eos", "--threads", "2")
    assert out.stdout, name
    bench = json.loads(run_tessera("bench", bundle, "-p", "32", "-n", "8", "-r", "1", "--json",
                                   "--no-bandwidth").stdout)
    assert bench, name


def test_audit_places_every_op(tiny_bundle):
    name, _, bundle = tiny_bundle
    proc = run_tessera("audit", bundle, "--json", check=False)
    audit = json.loads(proc.stdout)
    kernels = {k["kernel"] for p in audit["programs"] for k in p["kernels"]}
    expected = {"lfm2": "short_conv", "qwen3_5": "delta_rule", "gemma4": "embed", "olmo2": "rms_norm"}[name]
    assert any(k.startswith(expected) and not k.endswith(".reference") for k in kernels), kernels
    if name == "gemma4":
        # The tiny per-layer projections are 8 wide, below the integer kernels'
        # 64-column unit (Gemma 4 E2B's are 256): those alone fall back.
        fallback = {k["kernel"] for p in audit["programs"] for k in p["kernels"] if k["fallback"]}
        assert fallback <= {"linear.lut4.reference"}, fallback
    else:
        assert audit["pass"], audit["fallback_op_percent"]
