"""Speculative decoding, ours against plain decode and llama.cpp's lookup
decoding, side by side in one run.

    python3 bench/speculative.py --models smollm2-135m-instruct,gemma3-270m --threads 2 --reps 3 \\
        --llama-server /path/to/llama.cpp/build/bin/llama-server --json out.json

Three workloads, each one greedy chat request (the model's chat template):
  rewrite  repeat a given paragraph word for word (lookup-friendly: the
           answer is in the prompt);
  code     rename a function in a given piece of code and print it all
           (mostly copied, with edits);
  chat     an open question (little to look up).

Ours: `tessera run MODEL --chat -p ... -n N --json --speculative MODE` for
MODE off, auto and lookup; the decode rate is decode_tokens /
decode_seconds (the tokens after the first over the time after it, so
prefill and TTFT are out), and the acceptance is accepted / drafted.
llama.cpp: llama-server (`--parallel 1 -c 2048 -t THREADS`) started twice
per model, with `--spec-type none` and `--spec-type ngram-simple`, the same
request through /v1/chat/completions (temperature 0, max_tokens N);
its rate is timings.predicted_per_second, and its drafts
timings.draft_n / draft_n_accepted where the server reports them. The
GGUF is the one `tessera pull` fetched (the file our bundle was converted
from).

--verify-cost instead measures what decides the speed-up: the wall time of
a greedy verify call of k drafts (k + 1 rows, Session.argmax_as_decode)
against a decode step, at a context depth of 300 tokens, k = 1, 2, 4, 8,
16, interleaved with decode steps (median of --reps × 8 calls each; the
Python module, build/python on PYTHONPATH).

Runs alternate: within a repetition every (side, mode) pair runs once per
workload, in an order rotated every repetition, so a change of load hits
them alike; the report gives per cell the median rate over the repetitions
and, for the speed-ups, the median of the per-repetition ratios against
the same side's plain decode.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PARAGRAPH = (
    "The old lighthouse stood at the edge of the cliff for more than a hundred years. Every night its keeper "
    "climbed the spiral stairs, trimmed the wick and wound the clockwork that turned the great lens. Ships "
    "passing in the dark saw its beam sweep across the water every ten seconds, and they knew where the rocks "
    "were. When the keeper grew old, the lamp was replaced by an electric light, and the clockwork by a motor. "
    "Nobody climbs the stairs at night any more, but the beam still turns, and the ships still pass safely.")

CODE = '''def compute_total(items, tax_rate):
    """Returns the total price of the items with tax."""
    subtotal = 0.0
    for item in items:
        subtotal += item.price * item.quantity
    tax = subtotal * tax_rate
    return subtotal + tax


def print_receipt(items, tax_rate):
    for item in items:
        print(f"{item.name:20} {item.quantity:3} x {item.price:8.2f}")
    total = compute_total(items, tax_rate)
    print(f"{'Total':20} {total:16.2f}")
'''

WORKLOADS = {
    "rewrite": "Repeat the following paragraph exactly, word for word, and nothing else:\n\n" + PARAGRAPH,
    "code": "Rename the function compute_total to sum_prices everywhere in this code and print the whole "
            "updated code:\n\n```python\n" + CODE + "```",
    "chat": "Write a short story about a robot who learns to paint.",
}


def tessera_bin(args):
    return args.tessera_bin or os.environ.get("TESSERA_BIN") or str(REPO / "build" / "tessera")


def cpu_model():
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def run_ours(args, model, prompt, mode):
    cmd = [tessera_bin(args), "run", model, "--chat", "-p", prompt, "-n", str(args.max_tokens), "--json",
           "--threads", str(args.threads), "--speculative", mode, "--draft-max", str(args.draft_max),
           "--arithmetic", args.arithmetic]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    s = out["speculative"]
    return {"tok_s": out["decode_tokens"] / out["decode_seconds"], "tokens": len(out["ids"]),
            "drafted": s["drafted"], "accepted": s["accepted"], "verify_calls": s["verify_calls"],
            "ids": out["ids"]}


def pulled_gguf(args, model):
    proc = subprocess.run([tessera_bin(args), "pull", model], check=True, capture_output=True, text=True)
    return proc.stdout.strip().splitlines()[-1]


class LlamaServer:
    def __init__(self, binary, gguf, threads, port, spec_type):
        self.port = port
        cmd = [binary, "-m", gguf, "-t", str(threads), "--parallel", "1", "-c", "2048", "--host", "127.0.0.1",
               "--port", str(port), "--spec-type", spec_type]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        self.close()
        raise RuntimeError(f"llama-server {' '.join(cmd)} did not come up")

    def chat(self, prompt, max_tokens):
        body = json.dumps({"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
                           "temperature": 0, "top_k": 1, "cache_prompt": False}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            out = json.load(r)
        t = out.get("timings", {})
        return {"tok_s": t.get("predicted_per_second", 0.0), "tokens": t.get("predicted_n", 0),
                "drafted": t.get("draft_n", 0), "accepted": t.get("draft_n_accepted", 0)}

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def verify_cost(args):
    import random

    import tessera

    ks = [1, 2, 4, 8, 16]
    rows = []
    for model_name in args.models.split(","):
        model = tessera.Model(model_name, threads=args.threads, arithmetic=args.arithmetic)
        session = tessera.Session(model, 2048)
        rng = random.Random(1)
        session.forward([rng.randrange(100, 5000) for _ in range(300)], all_logits=False)
        base = session.length
        times = {k: [] for k in [0] + ks}
        for _ in range(args.reps * 8):
            for k in [0] + ks:
                ids = [rng.randrange(100, 5000) for _ in range(k + 1)]
                t = time.perf_counter()
                if k == 0:
                    session.forward(ids[:1], all_logits=False)
                else:
                    session.argmax_as_decode(ids)
                times[k].append(time.perf_counter() - t)
                session.truncate(base)
        c1 = median(times[0])
        row = {"model": model_name, "decode_ms": c1 * 1e3,
               "verify_ms": {k: median(times[k]) * 1e3 for k in ks},
               "ratio": {k: median(times[k]) / c1 for k in ks}}
        rows.append(row)
        print(f"{model_name}: decode {c1 * 1e3:.2f} ms; verify / decode: "
              + ", ".join(f"k={k} {row['ratio'][k]:.2f}" for k in ks))
    return rows


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="smollm2-135m-instruct,gemma3-270m")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--arithmetic", choices=["exact", "fast"], default="exact", help="tessera's arithmetic level")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--draft-max", type=int, default=8)
    ap.add_argument("--modes", default="off,auto,lookup")
    ap.add_argument("--tessera-bin")
    ap.add_argument("--llama-server", help="llama-server binary (omit to skip the peer)")
    ap.add_argument("--port", type=int, default=18431)
    ap.add_argument("--json")
    ap.add_argument("--verify-cost", action="store_true", help="measure verify calls against decode steps only")
    args = ap.parse_args()
    if args.verify_cost:
        rows = verify_cost(args)
        if args.json:
            Path(args.json).write_text(json.dumps({"machine": cpu_model(), "threads": args.threads, "rows": rows},
                                                  indent=1))
        return
    modes = args.modes.split(",")
    workloads = args.workloads.split(",")

    results = {}  # (model, workload, side) -> list of run dicts, one per repetition
    for model in args.models.split(","):
        servers = {}
        if args.llama_server:
            gguf = pulled_gguf(args, model)
            for i, spec in enumerate(("none", "ngram-simple")):
                servers[spec] = LlamaServer(args.llama_server, gguf, args.threads, args.port + i, spec)
        try:
            for rep in range(args.reps):
                for workload in workloads:
                    prompt = WORKLOADS[workload]
                    runs = [(f"ours {m}", lambda m=m: run_ours(args, model, prompt, m)) for m in modes]
                    runs += [(f"llama.cpp {s}", lambda s=s: servers[s].chat(prompt, args.max_tokens)) for s in servers]
                    shift = rep % len(runs)
                    for side, fn in runs[shift:] + runs[:shift]:
                        r = fn()
                        results.setdefault((model, workload, side), []).append(r)
                        print(f"{model} {workload} rep {rep} {side}: {r['tok_s']:.1f} tok/s, {r['tokens']} tokens, "
                              f"accepted {r['accepted']}/{r['drafted']}", file=sys.stderr, flush=True)
                    # Greedy speculative output must be the plain output.
                    plain = results[(model, workload, "ours off")][-1]["ids"]
                    for m in modes:
                        assert results[(model, workload, f"ours {m}")][-1]["ids"] == plain, (model, workload, m)
        finally:
            for s in servers.values():
                s.close()

    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": cpu_model(), "cpus": os.cpu_count(), "threads": args.threads, "reps": args.reps,
              "max_tokens": args.max_tokens, "draft_max": args.draft_max,
              "commit": subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                       capture_output=True, text=True).stdout.strip(),
              "command": " ".join(sys.argv), "cells": []}
    print(f"\n{report['machine']}, {args.threads} threads, {args.reps} reps, {report['date']}, "
          f"commit {report['commit']}")
    print(f"{'model':24} {'workload':8} {'side':24} {'tok/s':>8} {'x plain':>8} {'accepted':>12} {'tokens':>7}")
    for (model, workload, side), runs in results.items():
        base_side = "ours off" if side.startswith("ours") else "llama.cpp none"
        base = results.get((model, workload, base_side), [])
        ratios = [r["tok_s"] / b["tok_s"] for r, b in zip(runs, base) if b["tok_s"] > 0]
        drafted = sum(r["drafted"] for r in runs)
        accepted = sum(r["accepted"] for r in runs)
        cell = {"model": model, "workload": workload, "side": side, "tok_s": median([r["tok_s"] for r in runs]),
                "tok_s_runs": [r["tok_s"] for r in runs], "speedup": median(ratios), "speedup_runs": ratios,
                "drafted": drafted, "accepted": accepted, "tokens": median([r["tokens"] for r in runs])}
        report["cells"].append(cell)
        acc = f"{accepted}/{drafted}" if drafted else "-"
        print(f"{model:24} {workload:8} {side:24} {cell['tok_s']:8.1f} {cell['speedup']:8.2f} {acc:>12} "
              f"{cell['tokens']:7.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
