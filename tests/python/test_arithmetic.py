"""The fast arithmetic level (backend/arithmetic.h, the default): one int8 activation pass
on every integer-dot linear, and every call on those kernels whatever its
token count, so a request's bits depend on nothing but its tokens: not the
thread count, the chunks, how the prompt is split into calls, what it is
batched with, or speculation. Each case below compares bits, not tolerances.
"""

import json
import os

import numpy as np
import pytest

import tessera
from conftest import run_tessera
from test_decode_batch import prompts, run_alone, run_batched
from tiny_models import ARCHITECTURES, VOCAB, make_tiny_model


@pytest.fixture(scope="module", params=ARCHITECTURES)
def tiny_bundle(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(request.param)
    make_tiny_model(request.param, d / "src")
    run_tessera("convert", d / "src", "-o", d / "b", "--weights", "lut4", "--group-size", "16", "--chunks", "2")
    return request.param, str(d / "b")


def ids(n=40, seed=5):
    return [(i * 13 + seed * 7 + 3) % VOCAB for i in range(n)]


def test_prompt_rows_equal_decode_steps_at_any_split_threads_and_chunks(tiny_bundle):
    """At exact a call of many tokens may take a GEMM (AMX, int16) whose bits
    differ from a decode step's; at fast every row of every call is the row a
    decode step computes, so any split gives the same logits."""
    name, bundle = tiny_bundle
    stepwise = tessera.Session(tessera.Model(bundle, arithmetic="fast", threads=1, chunks=1)).forward(
        ids(), max_tokens_per_call=1)
    for threads, chunks, per_call in [(1, 1, 0), (2, 2, 0), (2, 1, 7), (1, 2, 33), (2, 2, 16)]:
        model = tessera.Model(bundle, arithmetic="fast", threads=threads, chunks=chunks)
        got = tessera.Session(model).forward(ids(), max_tokens_per_call=per_call)
        assert np.array_equal(got, stepwise), f"{name}: threads={threads} chunks={chunks} per_call={per_call}"
    exact = tessera.Session(tessera.Model(bundle, threads=2, arithmetic="exact")).forward(ids(), max_tokens_per_call=1)
    if tessera.Model(bundle).isa != "scalar":
        assert not np.array_equal(exact, stepwise), f"{name}: fast should be one pass, exact two"


def test_every_vector_level_gives_the_same_bits(tiny_bundle):
    """The integer-dot kernels of every level are specified to the bit
    (kernels/qlinear.h) and one pass takes the full int8 range everywhere,
    so at fast the avx2, avx512 and amx levels give identical logits (at
    exact the AVX2 kernels' two passes take a narrower range)."""
    name, bundle = tiny_bundle
    levels = ["avx2", "avx512", "amx"]
    best = tessera.Model(bundle).isa
    if best not in levels:
        pytest.skip("no x86 vector level here")
    got = {level: tessera.Session(tessera.Model(bundle, isa=level, arithmetic="fast")).forward(ids())
           for level in levels[:levels.index(best) + 1]}
    for level, logits in got.items():
        assert np.array_equal(logits, got["avx2"]), f"{name}: {level} differs from avx2"


def test_batched_rows_equal_each_sessions_own_decode(tiny_bundle):
    name, bundle = tiny_bundle
    model = tessera.Model(bundle, arithmetic="fast", threads=2)
    batched = run_batched(model, prompts(), 6, joins=[0, 1, 0, 2, 0])
    for k, p in enumerate(prompts()):
        assert np.array_equal(batched[k], run_alone(model, p, 6)), f"{name}: session {k}"


def test_speculative_greedy_equals_plain_greedy(tmp_path):
    """Verify calls at fast carry decode's bits, so greedy lookup speculation
    gives plain greedy's ids (on a repetitive prompt that drafts well)."""
    make_tiny_model("llama", tmp_path / "src")
    run_tessera("convert", tmp_path / "src", "-o", tmp_path / "b", "--weights", "lut4", "--group-size", "16")
    model = tessera.Model(str(tmp_path / "b"), arithmetic="fast", threads=2)
    prompt = ids(12) * 4
    plain = tessera.Session(model).generate(prompt, 32, ignore_eos=True)
    spec = tessera.Session(model).generate(prompt, 32, ignore_eos=True, speculative="lookup")
    assert spec["ids"] == plain["ids"]
    assert spec["speculative"]["verify_calls"] > 0


REAL_BLK_MODELS = ["smollm2-135m-instruct", "gemma3-270m"]


@pytest.mark.parametrize("name", REAL_BLK_MODELS)
def test_real_blk_bundle_prefill_equals_decode_steps(pulled_model_path, name):
    """The default bundle of a quantized GGUF (blk4 / blk8 weights, run on
    their interleaved layout, kernels/interleaved_linear.h) at fast: a
    40-token prompt in one call, in calls of 9, and one token per call give
    the same bits, at 1 and 2 threads. SmolLM2 stores Q4_1 (codes with
    offsets), Gemma 3 Q4_K, Q5_0 and Q8_0 (signed values)."""
    gguf = pulled_model_path(name)
    prompt = ids(40)
    base = tessera.Session(tessera.Model(gguf, arithmetic="fast", threads=2)).forward(prompt, max_tokens_per_call=1)
    for threads, per_call in [(1, 0), (2, 9)]:
        got = tessera.Session(tessera.Model(gguf, arithmetic="fast", threads=threads)).forward(
            prompt, max_tokens_per_call=per_call)
        assert np.array_equal(got, base), f"{name}: threads={threads} per_call={per_call}"


@pytest.mark.parametrize("name", REAL_BLK_MODELS)
def test_real_blk_bundle_levels_and_batches_agree(pulled_model_path, name):
    """The interleaved kernels of every x86 vector level give the same bits
    on a real blk bundle, and a batched step's rows are each session's own
    decode rows."""
    gguf = pulled_model_path(name)
    levels = ["avx2", "avx512", "amx"]
    best = tessera.Model(gguf).isa
    if best in levels:
        got = {level: tessera.Session(tessera.Model(gguf, isa=level, arithmetic="fast")).forward(ids(24))
               for level in levels[:levels.index(best) + 1]}
        for level, logits in got.items():
            assert np.array_equal(logits, got["avx2"]), f"{name}: {level} differs from avx2"
    model = tessera.Model(gguf, arithmetic="fast", threads=2)
    real_prompts = [[(i * 7 + k * 3 + 1) % 5000 + 10 for i in range(n)] for k, n in enumerate([3, 11, 26, 40, 5])]
    batched = run_batched(model, real_prompts, 4, joins=[0, 1, 0, 2, 0])
    for k, p in enumerate(real_prompts):
        assert np.array_equal(batched[k], run_alone(model, p, 4)), f"{name}: session {k}"


def test_doors_report_threads_and_arithmetic(tiny_bundle, tmp_path):
    """Every door takes the level and states it; threads default to this
    machine's physical cores and are stated too."""
    name, bundle = tiny_bundle
    if name != "llama":
        pytest.skip("one architecture is enough for the doors")
    bench = json.loads(run_tessera("bench", bundle, "-p", "8", "-n", "2", "-r", "1", "--no-bandwidth",
                                   "--arithmetic", "fast", "--json").stdout)
    assert bench["arithmetic"] == "fast"
    physical = bench["threads"]
    assert 1 <= physical <= (os.cpu_count() or 1)
    info = json.loads(run_tessera("info", bundle, "--json").stdout)
    assert info["runtime"]["threads"] == physical and info["runtime"]["arithmetic"] == "fast"
    assert tessera.Model(bundle).threads == physical
    assert tessera.Model(bundle, threads=1).threads == 1
    out = json.loads(run_tessera("run", bundle, "--prompt-ids", "1,2,3", "-n", "4", "--json",
                                 "--arithmetic", "fast", "--ignore-eos").stdout)
    model = tessera.Model(bundle, arithmetic="fast")
    assert out["ids"] == tessera.Session(model).generate([1, 2, 3], 4, ignore_eos=True)["ids"]
    engine = tessera.Engine(bundle, arithmetic="fast")
    assert engine.generate(prompt_ids=[1, 2, 3], max_tokens=4, ignore_eos=True).ids == out["ids"]
