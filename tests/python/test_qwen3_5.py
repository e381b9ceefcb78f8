"""Qwen3.5 beyond the shared parity suite (test_forward_parity.py runs the
tiny Qwen3.5 with every other architecture on 48 tokens): sequences longer
than transformers' delta-rule chunk (64 positions), where its prefill takes
the chunked form across several chunks and its decode the recurrent form, and
a long greedy generation that is transformers' own token for token, also
through a converted bundle in two chunks."""

import numpy as np
import pytest
import torch

import tessera
from conftest import run_tessera
from tiny_models import VOCAB, make_tiny_model

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


def hf_greedy(hf, prompt, steps):
    out, past = [], None
    x = torch.tensor([prompt])
    with torch.no_grad():
        for _ in range(steps):
            o = hf(x, past_key_values=past, use_cache=True)
            past = o.past_key_values
            out.append(int(o.logits[0, -1].argmax()))
            x = torch.tensor([[out[-1]]])
    return out


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
