"""Continuous batching at the runtime level (Session::decode_batch): one
call of the programs advances several sessions of one model by a token each,
and every session's logits, greedy ids and state are bit for bit what its own
decode steps give — on every tiny architecture (sliding rings wrapping, conv
tails, recurrent matrices, KV-sharing layers), with sessions at different
positions joining and leaving the batch, in chunks, on a quantized bundle."""

import numpy as np
import pytest

import tessera
from conftest import run_tessera
from tiny_models import ARCHITECTURES, VOCAB, make_tiny_model


@pytest.fixture(scope="module", params=ARCHITECTURES)
def tiny(request, tmp_path_factory):
    directory = tmp_path_factory.mktemp(request.param)
    make_tiny_model(request.param, directory)
    return request.param, directory


def prompts():
    # Different lengths, so the sessions sit at different positions (and
    # Gemma's 8-token window has wrapped for some and not for others).
    return [[(i * 7 + k * 3 + 1) % VOCAB for i in range(n)] for k, n in enumerate([3, 11, 26, 40, 5])]


def run_alone(model, prompt, steps):
    s = tessera.Session(model)
    rows = [s.forward(prompt, all_logits=False)[0]]
    for _ in range(steps):
        rows.append(s.forward([int(rows[-1].argmax())], all_logits=False)[0])
    return np.stack(rows)


def run_batched(model, all_prompts, steps, joins):
    """Each session prefills alone, then decodes in batched steps with the
    sessions active at that step (session k joins at step joins[k] and leaves
    after `steps` tokens)."""
    sessions = [tessera.Session(model) for _ in all_prompts]
    rows = [[s.forward(p, all_logits=False)[0]] for s, p in zip(sessions, all_prompts)]
    step = 0
    while any(len(r) <= steps for r in rows):
        active = [k for k in range(len(sessions)) if joins[k] <= step and len(rows[k]) <= steps]
        if active:
            out = tessera.decode_batch([sessions[k] for k in active], [int(rows[k][-1].argmax()) for k in active])
            for i, k in enumerate(active):
                rows[k].append(out[i])
        step += 1
    return [np.stack(r) for r in rows]


@pytest.mark.parametrize("threads,chunks", [(1, 1), (2, 2)])
def test_batched_steps_equal_each_sessions_own_decode(tiny, threads, chunks):
    name, directory = tiny
    model = tessera.Model(str(directory), reference=True, threads=threads, chunks=chunks)
    steps = 12
    batched = run_batched(model, prompts(), steps, joins=[0, 0, 3, 5, 9])
    for k, p in enumerate(prompts()):
        alone = run_alone(model, p, steps)
        assert np.array_equal(batched[k], alone), f"{name}: session {k} differs"


def test_quantized_bundle_batched_equals_alone(tiny, tmp_path):
    name, directory = tiny
    bundle = tmp_path / "b"
    run_tessera("convert", directory, "-o", bundle, "--weights", "lut4", "--group-size", "16")
    model = tessera.Model(str(bundle), threads=2)
    steps = 8
    batched = run_batched(model, prompts(), steps, joins=[0, 1, 0, 2, 0])
    for k, p in enumerate(prompts()):
        assert np.array_equal(batched[k], run_alone(model, p, steps)), f"{name} lut4: session {k}"


def test_bad_batches_are_clear_errors(tiny):
    _, directory = tiny
    model = tessera.Model(str(directory), reference=True)
    a, b = tessera.Session(model), tessera.Session(model)
    other = tessera.Session(tessera.Model(str(directory), reference=True))
    with pytest.raises(tessera.TesseraError, match="twice"):
        tessera.decode_batch([a, a], [1, 2])
    with pytest.raises(tessera.TesseraError, match="another model"):
        tessera.decode_batch([a, other], [1, 2])
    with pytest.raises(tessera.TesseraError, match="vocabulary"):
        tessera.decode_batch([a, b], [1, VOCAB])
    with pytest.raises(tessera.TesseraError, match="tokens"):
        tessera.decode_batch([a, b], [1])
    assert a.length == 0 and b.length == 0
