"""Numpy/torch prototype of palette quantizers, on the transformers model of
a GGUF (SmolLM2-135M-Instruct by default), for trying an idea before it goes
into the C++ converter. Records of what it measured: docs/QUANTIZATION.md and
docs/REJECTED_APPROACHES.md.

Each layer linear gets lut4 palettes (rows normalized by their largest
magnitude, 16 entries per group of rows, k-means++ and Lloyd, snapped to the
int8 grid) — the converter's recipe, re-implemented here — with one of:

    plain      k-means on the normalized values (tessera convert --calibration none)
    weighted   k-means weighted by scale_r^2 * E[x_c^2] of the layer's input
               (tessera convert's default, activation-aware)
    gptq       weighted palettes, then GPTQ-style column-by-column assignment
               with error feedback through the inverse input Hessian
    refit      weighted palettes, then 3 rounds of a least-squares per-row
               scale refit and re-assignment

Calibration: the first 512 tokens of tests/data/quality/text.txt; scored by
KL(ref || quantized) and top-1 on the next 512 tokens, and by teacher-forced
greedy agreement on the oracle corpus (as bench/lut_agreement.py).

    python3 bench/palette_prototype.py weighted [--group-size 16]
"""

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

REPO = Path(__file__).resolve().parents[1]


def kmeans1d(v, w, k=16, iters=25, seed=0):
    """Weighted 1-D k-means (k-means++ init, Lloyd); returns sorted centroids."""
    o = np.argsort(v, kind="stable")
    sv, sw = v[o].astype(np.float64), w[o].astype(np.float64)
    rng = np.random.default_rng(seed)
    n = len(sv)
    c = [sv[rng.integers(n)]]
    d2 = (sv - c[0]) ** 2
    for _ in range(1, k):
        p = d2 * sw
        s = p.sum()
        if s <= 0:
            break
        i = min(np.searchsorted(np.cumsum(p), rng.random() * s, side="right"), n - 1)
        c.append(sv[i])
        d2 = np.minimum(d2, (sv - sv[i]) ** 2)
    c = np.sort(np.array(c))
    pw, pv = np.concatenate([[0], np.cumsum(sw)]), np.concatenate([[0], np.cumsum(sw * sv)])
    for _ in range(iters):
        L = np.concatenate([[0], np.searchsorted(sv, (c[1:] + c[:-1]) / 2, side="right"), [n]])
        cw = pw[L[1:]] - pw[L[:-1]]
        nc = np.sort(np.where(cw > 0, (pv[L[1:]] - pv[L[:-1]]) / np.maximum(cw, 1e-300), c))
        if np.array_equal(nc, c):
            break
        c = nc
    return c.astype(np.float32)


def snap(c):
    m = np.abs(c).max()
    return c if m == 0 else (np.clip(np.rint(c * 127 / m), -127, 127) * (m / 127)).astype(np.float32)


def palettes(W, colw, gs):
    """Row scales and one palette per group of gs rows (weighted when colw is given)."""
    s = np.abs(W).max(1)
    s[s == 0] = 1
    N = W / s[:, None]
    pals = []
    for g in range(W.shape[0] // gs):
        blk = N[g * gs:(g + 1) * gs]
        wt = np.ones_like(blk) if colw is None else (s[g * gs:(g + 1) * gs, None] ** 2) * colw[None, :]
        pals.append(snap(kmeans1d(blk.ravel(), wt.ravel() + 1e-30, seed=g)))
    return s.astype(np.float32), np.repeat(np.stack(pals), gs, axis=0)


def nearest(W, s, P):
    idx = np.abs((W / s[:, None])[:, :, None] - P[:, None, :]).argmin(-1)
    return np.take_along_axis(P, idx, 1) * s[:, None]


def refit(W, s, P, colw, rounds=3):
    s = s.astype(np.float64).copy()
    for _ in range(rounds):
        Q = nearest(W, s, P) / s[:, None]
        num, den = (colw[None] * W * Q).sum(1), (colw[None] * Q * Q).sum(1)
        s = np.where(den > 0, num / np.maximum(den, 1e-300), s)
    return nearest(W, s, P)


def gptq(W, H, s, P, damp=0.01, block=128):
    W = torch.tensor(W, dtype=torch.float64).clone()
    H = torch.tensor(H, dtype=torch.float64).clone()
    cols = W.shape[1]
    P, S = torch.tensor(P, dtype=torch.float64), torch.tensor(s, dtype=torch.float64)[:, None]
    dead = torch.diag(H) == 0
    H[dead, dead] = 1
    W[:, dead] = 0
    H += damp * torch.mean(torch.diag(H)) * torch.eye(cols, dtype=torch.float64)
    Hinv = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(H)), upper=True)
    Q = torch.zeros_like(W)
    for i1 in range(0, cols, block):
        i2 = min(i1 + block, cols)
        W1, E1, Hi = W[:, i1:i2].clone(), torch.zeros(W.shape[0], i2 - i1, dtype=torch.float64), Hinv[i1:i2, i1:i2]
        for i in range(i2 - i1):
            w = W1[:, i]
            q = torch.gather(P, 1, (w[:, None] / S - P).abs().argmin(1, keepdim=True))[:, 0] * S[:, 0]
            Q[:, i1 + i] = q
            e = (w - q) / Hi[i, i]
            W1[:, i:] -= e[:, None] * Hi[i, i:][None, :]
            E1[:, i] = e
        W[:, i2:] -= E1 @ Hinv[i1:i2, i2:]
    return Q.float().numpy()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["plain", "weighted", "gptq", "refit"])
    ap.add_argument("--group-size", type=int, default=16)
    ap.add_argument("--gguf", default=os.path.expanduser(
        "~/.cache/tessera/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf"))
    args = ap.parse_args()
    torch.set_num_threads(2)
    d, f = os.path.dirname(args.gguf), os.path.basename(args.gguf)
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32).eval()
    corpus = json.loads((REPO / "python/tessera/data/oracle_prompts.json").read_text())
    text_ids = tok((REPO / "tests/data/quality/text.txt").read_text(), return_tensors="pt").input_ids[:, :1024]
    with torch.no_grad():
        refs = []
        for p in corpus["prompts"]:
            ids = tok(p, return_tensors="pt").input_ids
            out = model.generate(ids, max_new_tokens=32, min_new_tokens=32, do_sample=False)
            refs.append((ids[0].tolist(), out[0, ids.shape[1]:].tolist()))
        lin = {n: m for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and ".layers." in n}
        H = {}
        hooks = [m.register_forward_hook(lambda m, i, o, n=n: H.__setitem__(n, H.get(n, 0) + (
            lambda x: x.T @ x)(i[0].reshape(-1, i[0].shape[-1]).double()))) for n, m in lin.items()]
        model(text_ids[:, :512])
        for h in hooks:
            h.remove()
        ref_lp = model(text_ids[:, 512:]).logits[0].log_softmax(-1)
        E = model.model.embed_tokens.weight  # int8 per row, as the bundles store it
        sc = E.abs().amax(1, keepdim=True) / 127
        E.copy_(torch.round(E / sc).clamp(-127, 127) * sc)
        t0 = time.time()
        for n, m in lin.items():
            W, Hn = m.weight.numpy().astype(np.float32), H[n].numpy()
            colw = None if args.mode == "plain" else np.diag(Hn).copy()
            s, P = palettes(W, colw, args.group_size)
            Q = {"gptq": lambda: gptq(W, Hn, s, P), "refit": lambda: refit(W, s, P, colw)}.get(
                args.mode, lambda: nearest(W, s, P))()
            m.weight.copy_(torch.tensor(Q))
        lp = model(text_ids[:, 512:]).logits[0].log_softmax(-1)
        agree = total = 0
        for ids, gen in refs:
            lg = model(torch.tensor([ids + gen[:-1]])).logits[0, len(ids) - 1:]
            agree += int((lg.argmax(-1) == torch.tensor(gen)).sum())
            total += len(gen)
    kl = float((ref_lp.exp() * (ref_lp - lp)).sum(-1).mean())
    top1 = float((ref_lp.argmax(-1) == lp.argmax(-1)).float().mean())
    print(f"{args.mode} group {args.group_size}: KL {kl:.4f}, top-1 {top1:.3f} (tokens 512-1023 of the quality text), "
          f"oracle agreement {agree / total:.3f}, quantize {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
