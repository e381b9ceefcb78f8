"""Parity of Tessera's fp32 reference path with transformers on tiny random
models of every supported architecture, at every position.

Tolerance: top-1 identical at 100% of positions and
max |Δlogit| <= 1e-3 · max |logit|. Both sides compute in fp32; they differ
only in summation order (Tessera's fixed 16-lane dot products vs PyTorch's
BLAS), which moves logits by ~1e-6 relative on these models. 1e-3 leaves two
orders of magnitude of headroom while still failing on any wrong formula
(a misplaced norm, a wrong RoPE pair, an off-by-one window moves logits by
>1e-2 relative).

Tessera's own results must not depend on how the sequence is cut into calls
(one prefill call, calls of 8 or 5 tokens, token-by-token decode), nor on the
thread count: those are compared bit for bit."""

import numpy as np
import pytest
import torch

import tessera
from tiny_models import ARCHITECTURES, VOCAB, make_tiny_model

SEQ = 48  # > 5 Gemma 3 windows of 8


@pytest.fixture(scope="module", params=ARCHITECTURES)
def tiny(request, tmp_path_factory):
    directory = tmp_path_factory.mktemp(request.param)
    hf = make_tiny_model(request.param, directory)
    ids = torch.randint(0, VOCAB, (1, SEQ), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = hf(ids).logits[0].numpy()
    return request.param, directory, hf, ids, ref


def assert_close_to_hf(ours, ref, what):
    assert ours.shape == ref.shape
    top1 = (ours.argmax(-1) == ref.argmax(-1)).mean()
    err = np.abs(ours - ref).max()
    scale = np.abs(ref).max()
    assert top1 == 1.0, f"{what}: top-1 agreement {top1:.3f}"
    assert err <= 1e-3 * scale, f"{what}: max |Δlogit| {err:.3g} > 1e-3 · {scale:.3g}"


def test_prefill_matches_transformers(tiny):
    name, directory, _, ids, ref = tiny
    model = tessera.Model(str(directory), reference=True)
    ours = tessera.Session(model).forward(ids[0].tolist(), all_logits=True)
    assert_close_to_hf(ours, ref, f"{name} prefill")


def test_decode_matches_transformers_step_by_step(tiny):
    """transformers decoding with its KV cache, one token per call, against
    Tessera's decode program (T=1)."""
    name, directory, hf, ids, _ = tiny
    steps = []
    past = None
    with torch.no_grad():
        for t in range(SEQ):
            out = hf(ids[:, t:t + 1], past_key_values=past, use_cache=True)
            past = out.past_key_values
            steps.append(out.logits[0, -1].numpy())
    ref = np.stack(steps)
    session = tessera.Session(tessera.Model(str(directory), reference=True))
    ours = np.concatenate([session.forward([i], all_logits=True) for i in ids[0].tolist()])
    assert_close_to_hf(ours, ref, f"{name} decode")


def test_call_split_and_threads_do_not_change_bits(tiny):
    name, directory, _, ids, _ = tiny
    seq = ids[0].tolist()
    one = tessera.Session(tessera.Model(str(directory), reference=True)).forward(seq, all_logits=True)
    for threads, chunks, per_call in [(1, 1, 8), (1, 1, 5), (1, 1, 1), (2, 1, 0), (2, 1, 3), (1, 2, 0), (2, 2, 7)]:
        model = tessera.Model(str(directory), reference=True, threads=threads, chunks=chunks)
        got = tessera.Session(model).forward(seq, all_logits=True, max_tokens_per_call=per_call)
        assert np.array_equal(got, one), f"{name}: threads={threads} chunks={chunks} per_call={per_call} differs"


def test_last_logits_only_equal_the_last_row(tiny):
    _, directory, _, ids, _ = tiny
    model = tessera.Model(str(directory), reference=True)
    all_rows = tessera.Session(model).forward(ids[0].tolist(), all_logits=True)
    last = tessera.Session(model).forward(ids[0].tolist(), all_logits=False)
    assert last.shape == (1, VOCAB)
    assert np.array_equal(last[0], all_rows[-1])


def test_f16_kv_cache_is_split_free_and_close_to_transformers(tiny):
    """kv_type="f16" keeps K and V as IEEE f16 (state/kv_cache.h). Every row
    is rounded to f16 before attention reads it, from the call or the cache,
    so the call split and the thread count still change no bit. Against
    transformers the logits move by that rounding (relative 2^-11 of each key
    and value; measured max |Δlogit| 4-7e-4 · max |logit| on these models):
    top-1 still identical at every position and max |Δlogit| <= 3e-3 ·
    max |logit|, three times the f32 cache's tolerance, while a wrong row,
    slot or window moves logits by 1e-2 and more. Gemma 4 is the exception:
    its attention has scale 1 over normalized q and k (scores up to about
    head_dim), so a key's f16 rounding moves its score ~head_dim times more
    (measured 9e-3 · max |logit| on its tiny model): 1.5e-2 there, top-1
    still identical. The cache takes half the f32 cache's bytes."""
    name, directory, _, ids, ref = tiny
    seq = ids[0].tolist()
    base = tessera.Model(str(directory), reference=True, kv_type="f16")
    assert base.kv_type == "f16"
    session = tessera.Session(base)
    one = session.forward(seq, all_logits=True)
    for threads, per_call in [(1, 5), (1, 1), (2, 0), (2, 7)]:
        model = tessera.Model(str(directory), reference=True, threads=threads, kv_type="f16")
        got = tessera.Session(model).forward(seq, all_logits=True, max_tokens_per_call=per_call)
        assert np.array_equal(got, one), f"{name}: f16 KV, threads={threads} per_call={per_call} differs"
    top1 = (one.argmax(-1) == ref.argmax(-1)).mean()
    err, scale = np.abs(one - ref).max(), np.abs(ref).max()
    print(f"\n{name} f16 KV vs transformers: top-1 {top1:.3f}, max |Δlogit| {err:.3g} (scale {scale:.3g})")
    assert top1 == 1.0, f"{name}: f16 KV top-1 agreement {top1:.3f}"
    bound = 1.5e-2 if name == "gemma4" else 3e-3
    assert err <= bound * scale, f"{name}: f16 KV max |Δlogit| {err:.3g} > {bound} · {scale:.3g}"
    f32 = tessera.Session(tessera.Model(str(directory), reference=True))
    f32.forward(seq, all_logits=False)
    assert 2 * session.kv_bytes == f32.kv_bytes


def test_second_turn_rollbacks_and_snapshots_equal_a_fresh_run(tiny):
    """The per-layer state contract (state/sequence_state.h) on every
    architecture: a second turn on a session, rollbacks of up to the margin
    after Gemma 3's 8-token window and LFM2's and Qwen3.5's conv tails have
    wrapped many times and Qwen3.5's recurrent checkpoints have moved on (the
    matrices are rebuilt from the checkpoint and the logged updates), and a
    restored snapshot all give the logits of a run from scratch,
    bit for bit. Going back further than the bounded states keep is refused
    (and the session reset) rather than silently wrong."""
    name, directory, _, ids, _ = tiny
    seq = ids[0].tolist()
    model = tessera.Model(str(directory), reference=True)
    fresh = tessera.Session(model).forward(seq, all_logits=True)
    s = tessera.Session(model)
    s.forward(seq[:30], all_logits=True)
    assert np.array_equal(s.forward(seq[30:], all_logits=True), fresh[30:]), f"{name}: second turn"
    margin = s.rollback_margin
    assert margin >= 8
    other = [(t * 7 + 3) % VOCAB for t in seq]
    snap = s.snapshot()
    for k in (1, 5, margin):
        assert s.rollback(k), f"{name}: rollback of {k}"
        got = s.forward(other[:k], all_logits=True)
        want = tessera.Session(model).forward(seq[:SEQ - k] + other[:k], all_logits=True)[-k:]
        assert np.array_equal(got, want), f"{name}: after a rollback of {k}"
        s.restore(snap)
        assert s.length == SEQ
    got = s.forward(other[:3], all_logits=True)
    assert np.array_equal(got, tessera.Session(model).forward(seq + other[:3], all_logits=True)[-3:]), name
    bounded = name.startswith("gemma") or name in ("lfm2", "qwen3_5")
    far = SEQ + 3 - (margin + 12)
    assert s.can_truncate(far) == (not bounded), name
    assert s.truncate(far) == (not bounded), name
    assert s.length == (0 if bounded else far)
