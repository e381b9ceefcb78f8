"""What a batched decode step costs per sequence: Session.decode_batch of
n SmolLM2 sessions (n = 1, 2, 4, 8) against one session's decode step,
in one process (no server, no HTTP). The marginal cost of a row bounds what
continuous batching can give: 8 streams reach 4x one stream only if a step
of 8 costs at most two steps of one.

    PYTHONPATH=python:build/python .venv/bin/python bench/decode_batch_cost.py --model smollm2-135m-instruct
"""

import argparse
import statistics
import time

import tessera


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--arithmetic", choices=["exact", "fast"], default="exact")
    args = ap.parse_args()
    model = tessera.Model(args.model, threads=args.threads, arithmetic=args.arithmetic)
    one = None
    for n in (1, 2, 4, 8):
        sessions = []
        for i in range(n):
            s = tessera.Session(model)
            s.forward([1, 100 + i, 200 + i, 300 + i, 400 + i, 500 + i])  # a short, different prompt each
            sessions.append(s)
        ids = [42] * n
        for _ in range(3):
            tessera.decode_batch(sessions, ids)
        times = []
        for _ in range(args.steps):
            t = time.perf_counter()
            tessera.decode_batch(sessions, ids)
            times.append(time.perf_counter() - t)
        step = statistics.median(times)
        one = one or step
        print(f"{n} sessions: {step * 1000:.2f} ms per step, {n / step:.0f} tok/s, "
              f"{n * one / step:.2f}x one session's rate, marginal {(step - one) / max(n - 1, 1) / one:.2f} of a step per row")


if __name__ == "__main__":
    main()
