"""Tessera vs llama.cpp on the same model, thread count and token counts, in
one run: prefill (pp) and decode (tg) tokens per second, TTFT, peak RSS, and
decode CPU-seconds per token, with the ratios ours / llama.cpp; the decode
rate at several context depths for both, as a table and a PNG plot.

    python3 bench/compare_llamacpp.py --ours /tmp/qwen.bundle --gguf /tmp/qwen25-0.5b-random.q4_0.gguf \\
        --threads 2 --prompt 512 --gen 128 --reps 3 --depths 0,512,1024 --rounds 3 --plot out.png --json out.json

Tessera runs `tessera bench --json` (TESSERA_BIN or build/tessera, or
--tessera-bin). llama.cpp runs either through the llama_cpp Python package
(llama-cpp-python), in a child process of this script so that its RSS and CPU
time are its own, or, with --llama-bench PATH, through that llama-bench
binary (-o json). Both sides measure the same way: per repetition prefill of
--prompt pseudo-random token ids from a fresh context, then --gen decode
steps of one token each (no sampling, no tokenizer); for each depth, a fresh
context prefilled with that many tokens (untimed), then --gen timed decode
steps. Rates are mean ± sample sd over the repetitions. TTFT is the prefill
plus the first decode step. llama-bench measures tg at depth 0 after a fresh
context unless its -d option exists (then at depth --prompt, as here).

On a shared machine one pass of each side can land in different load. With
--rounds N the two sides alternate N times (Tessera first in even rounds,
llama.cpp first in odd ones, so a drift in load hits both alike); the table
then shows each side's median over the rounds (± the sd of the rounds'
means), and the ratio column is the median of the N paired ratios, which are
printed too.

Each decode rate is also shown against Tessera's read-bandwidth ceiling (the
bytes its decode step reads over the read rate `tessera bench` measures for
that working set; with rounds, the median ceiling), for both sides, and with
the ratio it bounds: ceiling / llama.cpp's rate, the most ours / llama.cpp
can be on this machine while the peer runs as measured (JSON `ratio_bounds`).
"""

import argparse
import datetime
import json
import math
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def parse_depths(text):
    return [int(x) for x in text.split(",") if x.strip()] if text else []


def mean_sd(values):
    if not values:
        return 0.0, 0.0
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def peak_rss_mib():
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def cpu_seconds():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


# --- llama.cpp through llama-cpp-python (runs in a child process) ------------------------------------------

def llama_cpp_worker(args):
    """Measures llama.cpp through llama_cpp and prints one JSON object."""
    import numpy as np
    import llama_cpp

    depths = parse_depths(args.depths)
    n_ctx = max([args.prompt] + depths) + args.gen
    llm = llama_cpp.Llama(model_path=args.gguf, n_threads=args.threads, n_threads_batch=args.threads,
                          n_ctx=n_ctx, n_batch=512, n_ubatch=512, logits_all=False, verbose=False,
                          seed=args.seed)
    vocab = llm.n_vocab()
    rng = np.random.default_rng(args.seed)

    def take(n):
        return [int(x) for x in rng.integers(0, vocab, size=n)]

    def decode(n, first=None):
        start = time.perf_counter()
        for i in range(n):
            llm.eval([take(1)[0]])
            if i == 0 and first is not None:
                first.append(time.perf_counter() - start)
        return time.perf_counter() - start

    # Warm-up (untimed), as tessera bench does: touches the mmap'd weights.
    llm.reset()
    llm.eval(take(min(args.prompt, 32)))
    decode(min(args.gen, 2))

    pp_runs, tg_runs, ttft, decode_cpu = [], [], [], 0.0
    for _ in range(args.reps):
        llm.reset()
        prompt = take(args.prompt)
        start = time.perf_counter()
        llm.eval(prompt)
        pp = time.perf_counter() - start
        cpu0 = cpu_seconds()
        first = []
        tg = decode(args.gen, first)
        decode_cpu += cpu_seconds() - cpu0
        pp_runs.append(args.prompt / pp)
        tg_runs.append(args.gen / tg)
        ttft.append((pp + first[0]) * 1000.0)
    depth_results = []
    for depth in depths:
        runs = []
        for _ in range(args.reps):
            llm.reset()
            if depth > 0:
                llm.eval(take(depth))
            runs.append(args.gen / decode(args.gen))
        m, sd = mean_sd(runs)
        depth_results.append({"depth": depth, "tg_tok_s": m, "tg_tok_s_sd": sd})
    pp_m, pp_sd = mean_sd(pp_runs)
    tg_m, tg_sd = mean_sd(tg_runs)
    print(json.dumps({
        "runtime": "llama.cpp (llama-cpp-python " + getattr(llama_cpp, "__version__", "?") + ")",
        "model": args.gguf, "threads": args.threads, "n_ctx": n_ctx, "n_batch": 512,
        "prompt": args.prompt, "gen": args.gen, "reps": args.reps,
        "pp_tok_s": pp_m, "pp_tok_s_sd": pp_sd, "tg_tok_s": tg_m, "tg_tok_s_sd": tg_sd,
        "pp_runs": pp_runs, "tg_runs": tg_runs, "ttft_ms": statistics.fmean(ttft),
        "peak_rss_mib": peak_rss_mib(), "cpu_s_per_token": decode_cpu / (args.reps * args.gen),
        "depths": depth_results,
    }))


def run_llama_cpp_python(args, commands):
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--gguf", args.gguf, "--threads",
           str(args.threads), "--prompt", str(args.prompt), "--gen", str(args.gen), "--reps", str(args.reps),
           "--depths", args.depths or "", "--seed", str(args.seed)]
    commands.append(shlex.join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"llama.cpp (llama_cpp) run failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- llama.cpp through llama-bench ----------------------------------------------------------------------------

def run_llama_bench(args, commands):
    depths = parse_depths(args.depths)
    base = [args.llama_bench, "-m", args.gguf, "-t", str(args.threads), "-r", str(args.reps), "-b", "512",
            "-o", "json"]

    def run(extra):
        cmd = base + extra
        commands.append(shlex.join(cmd))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            return None, proc.stderr
        return json.loads(proc.stdout), ""

    pp, err = run(["-p", str(args.prompt), "-n", "0"])
    if pp is None:
        raise SystemExit(f"llama-bench failed:\n{err[-4000:]}")
    depth_list = sorted(set([args.prompt] + depths))
    tg, err = run(["-p", "0", "-n", str(args.gen), "-d", ",".join(map(str, depth_list))])
    has_depth = tg is not None
    if not has_depth:  # an older llama-bench without -d: decode from an empty context only
        print(f"warning: llama-bench has no -d (depth) option; tg is measured at depth 0 only\n{err[-500:]}",
              file=sys.stderr)
        tg, err = run(["-p", "0", "-n", str(args.gen)])
        if tg is None:
            raise SystemExit(f"llama-bench failed:\n{err[-4000:]}")

    def rate(rows, **want):
        for r in rows:
            if all(r.get(k, 0) == v for k, v in want.items()):
                return r["avg_ts"], r.get("stddev_ts", 0.0)
        return float("nan"), float("nan")

    pp_m, pp_sd = rate(pp, n_prompt=args.prompt, n_gen=0)
    if has_depth:
        tg_m, tg_sd = rate(tg, n_prompt=0, n_gen=args.gen, n_depth=args.prompt)
        depth_results = [dict(zip(("depth", "tg_tok_s", "tg_tok_s_sd"),
                                  (d, *rate(tg, n_prompt=0, n_gen=args.gen, n_depth=d)))) for d in depths]
    else:
        tg_m, tg_sd = rate(tg, n_prompt=0, n_gen=args.gen)
        depth_results = [{"depth": 0, "tg_tok_s": tg_m, "tg_tok_s_sd": tg_sd}] if 0 in depths else []
    build = (pp[0].get("build_commit", "?") if pp else "?")
    return {"runtime": f"llama.cpp (llama-bench {build})", "model": args.gguf, "threads": args.threads,
            "prompt": args.prompt, "gen": args.gen, "reps": args.reps, "pp_tok_s": pp_m, "pp_tok_s_sd": pp_sd,
            "tg_tok_s": tg_m, "tg_tok_s_sd": tg_sd, "ttft_ms": float("nan"), "peak_rss_mib": float("nan"),
            "cpu_s_per_token": float("nan"), "depths": depth_results, "raw": pp + tg}


# --- Tessera -----------------------------------------------------------------------------------------------------

def run_tessera(args, commands):
    binary = args.tessera_bin or os.environ.get("TESSERA_BIN") or str(REPO / "build" / "tessera")
    cmd = [binary, "bench", args.ours, "--prompt", str(args.prompt), "--gen", str(args.gen), "--reps",
           str(args.reps), "-t", str(args.threads), "--json"]
    if args.depths:
        cmd += ["--depths", args.depths]
    if args.chunks:
        cmd += ["--chunks", str(args.chunks)]
    if args.arithmetic:
        cmd += ["--arithmetic", args.arithmetic]
    if args.kv_type:
        cmd += ["--kv-type", args.kv_type]
    commands.append(shlex.join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"tessera bench failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    out = json.loads(proc.stdout)
    vnni = ", AVX-VNNI" if out.get("avx_vnni") else ""
    out["runtime"] = f"tessera {out.get('version', '')} (isa {out.get('isa', '?')}{vnni})".strip()
    return out


# --- rounds ------------------------------------------------------------------------------------------------------

RATE_KEYS = ("pp_tok_s", "tg_tok_s", "ttft_ms", "peak_rss_mib", "cpu_s_per_token")


def median_or_nan(values):
    values = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return statistics.median(values) if values else float("nan")


def sd_or_nan(values):
    values = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return statistics.stdev(values) if len(values) > 1 else (0.0 if values else float("nan"))


def combine_rounds(results):
    """One side's rounds as one result: each rate the median of the rounds'
    means, its sd the sd of those means, and each read-bandwidth ceiling the
    median of the rounds' (one round: that round unchanged)."""
    if len(results) == 1:
        return results[0]
    out = dict(results[0])
    for key in RATE_KEYS:
        out[key] = median_or_nan([r[key] for r in results])
    for key in ("pp_tok_s", "tg_tok_s"):
        out[key + "_sd"] = sd_or_nan([r[key] for r in results])
    set_band(out, median_band([r.get("bandwidth") for r in results], out["tg_tok_s"]))
    depths = []
    for d in results[0].get("depths", []):
        same = [x for r in results for x in r.get("depths", []) if x["depth"] == d["depth"]]
        rates = [x["tg_tok_s"] for x in same]
        rate = median_or_nan(rates)
        depth = {**d, "tg_tok_s": rate, "tg_tok_s_sd": sd_or_nan(rates)}
        set_band(depth, median_band([x.get("bandwidth") for x in same], rate))
        depths.append(depth)
    out["depths"] = depths
    return out


def set_band(result, band):
    """result["bandwidth"] = band, or no such key when there is none (the peer's side)."""
    if band:
        result["bandwidth"] = band
    else:
        result.pop("bandwidth", None)


def median_band(bands, rate):
    """The rounds' read-bandwidth ceilings of one decode rate as one: the
    median read rate and ceiling, the efficiency of `rate` against that
    ceiling (None where a round has none: `tessera bench --no-bandwidth`)."""
    if not bands or any(not b for b in bands):
        return None
    ceiling = median_or_nan([b["ceiling_tok_s"] for b in bands])
    return {**bands[0], "read_gb_s": median_or_nan([b["read_gb_s"] for b in bands]), "ceiling_tok_s": ceiling,
            "efficiency": ratio(rate, ceiling)}


def paired_ratios(rounds):
    """Per round, ours / llama.cpp for pp, tg and tg at each depth."""
    out = {"pp": [], "tg": [], "tg_at_depth": {}}
    for r in rounds:
        ours, peer = r["tessera"], r["llama_cpp"]
        out["pp"].append(ratio(ours["pp_tok_s"], peer["pp_tok_s"]))
        out["tg"].append(ratio(ours["tg_tok_s"], peer["tg_tok_s"]))
        peer_depths = {d["depth"]: d["tg_tok_s"] for d in peer.get("depths", [])}
        for d in ours.get("depths", []):
            out["tg_at_depth"].setdefault(str(d["depth"]), []).append(
                ratio(d["tg_tok_s"], peer_depths.get(d["depth"], float("nan"))))
    return out


# --- report ------------------------------------------------------------------------------------------------------

def no_nan(x):
    """NaN / inf -> None, so that the JSON file is standard JSON."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: no_nan(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [no_nan(v) for v in x]
    return x


def ratio(a, b):
    return a / b if b and math.isfinite(a) and math.isfinite(b) and b > 0 else float("nan")


def fmt_rate(m, sd):
    return "n/a" if not math.isfinite(m) else f"{m:.2f} ± {sd:.2f}"


def fmt_num(x, digits=2):
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def report(args, ours, peer, paired=None):
    """The table; `paired` (several rounds): the ratio column of the rate rows
    is the median of each round's ratio instead of the ratio of the medians."""
    def rate_ratio(a, b, *key):
        if paired is None:
            return ratio(a, b)
        values = paired[key[0]] if len(key) == 1 else paired[key[0]].get(key[1], [])
        return median_or_nan(values)

    rows = [
        (f"pp{args.prompt} tok/s", fmt_rate(ours["pp_tok_s"], ours["pp_tok_s_sd"]),
         fmt_rate(peer["pp_tok_s"], peer["pp_tok_s_sd"]), rate_ratio(ours["pp_tok_s"], peer["pp_tok_s"], "pp")),
        (f"tg{args.gen} tok/s (after pp{args.prompt})", fmt_rate(ours["tg_tok_s"], ours["tg_tok_s_sd"]),
         fmt_rate(peer["tg_tok_s"], peer["tg_tok_s_sd"]), rate_ratio(ours["tg_tok_s"], peer["tg_tok_s"], "tg")),
    ]
    peer_depths = {d["depth"]: d for d in peer.get("depths", [])}
    for d in ours.get("depths", []):
        p = peer_depths.get(d["depth"], {"tg_tok_s": float("nan"), "tg_tok_s_sd": float("nan")})
        rows.append((f"tg{args.gen} tok/s @ depth {d['depth']}", fmt_rate(d["tg_tok_s"], d["tg_tok_s_sd"]),
                     fmt_rate(p["tg_tok_s"], p["tg_tok_s_sd"]),
                     rate_ratio(d["tg_tok_s"], p["tg_tok_s"], "tg_at_depth", str(d["depth"]))))
    # Each decode rate as a share of Tessera's read-bandwidth ceiling (bytes
    # its decode step reads over the bandwidth measured for that working set,
    # `tessera bench`); the peer's share is of the same ceiling, for scale.
    bands = [("", ours.get("bandwidth"), ours["tg_tok_s"], peer["tg_tok_s"], ("tg",))]
    bands += [(f" @ depth {d['depth']}", d.get("bandwidth"), d["tg_tok_s"],
               peer_depths.get(d["depth"], {}).get("tg_tok_s", float("nan")), ("tg_at_depth", str(d["depth"])))
              for d in ours.get("depths", [])]
    bounds = ratio_bounds(ours, peer)
    for suffix, band, rate, peer_rate, key in bands:
        if band:
            ceiling = band["ceiling_tok_s"]
            rows.append((f"tg{args.gen}{suffix} % of ceiling ({ceiling:.0f} tok/s)", fmt_num(100 * rate / ceiling, 1),
                         fmt_num(100 * peer_rate / ceiling, 1), rate_ratio(rate, peer_rate, *key)))
            # The most this decode ratio can be on this machine while the
            # peer runs as measured: ours at 100% of the ceiling.
            bound = bounds.get("tg") if len(key) == 1 else bounds.get("tg_at_depth", {}).get(key[1])
            rows.append((f"tg{args.gen}{suffix} ratio if ours ran at the ceiling", "", "", bound))
    for key, label, digits in (("ttft_ms", "TTFT ms", 1), ("peak_rss_mib", "peak RSS MiB", 1),
                               ("cpu_s_per_token", "decode CPU s/token", 4)):
        rows.append((label, fmt_num(ours[key], digits), fmt_num(peer[key], digits), ratio(ours[key], peer[key])))
    widths = [max(len(r[0]) for r in rows + [("metric",)]), 22, 22]
    header = f"| {'metric':<{widths[0]}} | {'Tessera':>{widths[1]}} | {'llama.cpp':>{widths[2]}} | ours/llama.cpp |"
    lines = [header, "|" + "|".join("-" * (w + 2) for w in widths) + "|----------------|"]
    for name, a, b, r in rows:
        lines.append(f"| {name:<{widths[0]}} | {a:>{widths[1]}} | {b:>{widths[2]}} | {fmt_num(r, 3):>14} |")
    return "\n".join(lines), rows


def ratio_bounds(ours, peer):
    """Per decode rate with a measured ceiling: the ratio ours / llama.cpp
    would have if Tessera decoded at 100% of its read-bandwidth ceiling and
    llama.cpp at its measured rate (the upper bound of that ratio on this
    machine while decode reads its weights at the probe's rate)."""
    out = {}
    if ours.get("bandwidth"):
        out["tg"] = ratio(ours["bandwidth"]["ceiling_tok_s"], peer["tg_tok_s"])
    peer_depths = {d["depth"]: d["tg_tok_s"] for d in peer.get("depths", [])}
    at_depth = {str(d["depth"]): ratio(d["bandwidth"]["ceiling_tok_s"], peer_depths[d["depth"]])
                for d in ours.get("depths", []) if d.get("bandwidth") and d["depth"] in peer_depths}
    if at_depth:
        out["tg_at_depth"] = at_depth
    return out


def plot(path, args, ours, peer, machine):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, res, marker in (("Tessera", ours, "o"), ("llama.cpp", peer, "s")):
        pts = sorted((d["depth"], d["tg_tok_s"], d["tg_tok_s_sd"]) for d in res.get("depths", [])
                     if math.isfinite(d["tg_tok_s"]))
        if pts:
            xs, ys, es = zip(*pts)
            ax.errorbar(xs, ys, yerr=es, marker=marker, capsize=3, label=label)
    ax.set_xlabel("context depth (tokens)")
    ax.set_ylabel(f"decode tok/s (tg{args.gen})")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{Path(args.gguf).name}, {args.threads} threads\n{machine}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ours", help="what tessera bench runs: bundle dir, GGUF, HF dir or pulled name")
    ap.add_argument("--gguf", required=True, help="the GGUF llama.cpp runs")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1,
                    help="alternate the two sides this many times; ratios are medians of the paired ones")
    ap.add_argument("--depths", default="0,512,1024", help="comma-separated context depths ('' for none)")
    ap.add_argument("--chunks", type=int, default=0, help="tessera --chunks (0: the bundle's)")
    ap.add_argument("--arithmetic", choices=["exact", "fast"], help="tessera --arithmetic (default: its own)")
    ap.add_argument("--kv-type", choices=["f32", "f16"],
                    help="tessera --kv-type (default: its own, f32; llama.cpp's cache is f16 unless told otherwise)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--plot", help="PNG of decode tok/s vs context depth")
    ap.add_argument("--json", help="write everything measured here")
    ap.add_argument("--tessera-bin", help="tessera binary (default: $TESSERA_BIN or build/tessera)")
    ap.add_argument("--llama-bench", help="use this llama-bench binary instead of the llama_cpp package")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.threads < 1 or args.prompt < 1 or args.gen < 1 or args.reps < 1 or args.rounds < 1:
        ap.error("--threads, --prompt, --gen, --reps and --rounds must be >= 1")
    if args.worker:
        llama_cpp_worker(args)
        return
    if not args.ours:
        ap.error("--ours is required")

    machine = f"{cpu_model()} ({os.cpu_count()} logical CPUs)"
    date = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    commands = []
    print(f"date     {date}\ncpu      {machine}\nthreads  {args.threads}\nkernel   {platform.platform()}\n"
          f"python   {platform.python_version()}", flush=True)
    run_peer = run_llama_bench if args.llama_bench else run_llama_cpp_python
    rounds = []
    for r in range(args.rounds):
        got = {}
        for side in (("tessera", "llama_cpp") if r % 2 == 0 else ("llama_cpp", "tessera")):
            got[side] = run_tessera(args, commands) if side == "tessera" else run_peer(args, commands)
        rounds.append(got)
    ours = combine_rounds([r["tessera"] for r in rounds])
    peer = combine_rounds([r["llama_cpp"] for r in rounds])
    paired = paired_ratios(rounds) if args.rounds > 1 else None
    print("commands:" + (f" (each run in each of {args.rounds} rounds)" if args.rounds > 1 else ""))
    for c in dict.fromkeys(commands):
        print(f"  {c}")
    print(f"Tessera:   {ours['runtime']}, model {args.ours}")
    print(f"llama.cpp: {peer['runtime']}, model {args.gguf}\n")
    table, rows = report(args, ours, peer, paired)
    print(table)
    if paired:
        print(f"\nratios per round (ours / llama.cpp), {args.rounds} rounds:")
        lines = [("pp", paired["pp"]), ("tg", paired["tg"])]
        lines += [(f"tg @ depth {d}", v) for d, v in paired["tg_at_depth"].items()]
        for name, values in lines:
            print(f"  {name:<16} {' '.join(fmt_num(v, 3) for v in values)}  median {fmt_num(median_or_nan(values), 3)}")
    if args.plot:
        plot(args.plot, args, ours, peer, machine)
        print(f"\nplot: {args.plot}")
    if args.json:
        result = {"date": date, "cpu": machine, "threads": args.threads, "platform": platform.platform(),
                  "prompt": args.prompt, "gen": args.gen, "reps": args.reps,
                  "depths": parse_depths(args.depths), "commands": list(dict.fromkeys(commands)),
                  "tessera": ours, "llama_cpp": peer,
                  "ratios": {"pp": ratio(ours["pp_tok_s"], peer["pp_tok_s"]),
                             "tg": ratio(ours["tg_tok_s"], peer["tg_tok_s"]),
                             "tg_at_depth": {str(d["depth"]): ratio(d["tg_tok_s"], p["tg_tok_s"])
                                             for d in ours.get("depths", []) for p in peer.get("depths", [])
                                             if p["depth"] == d["depth"]}},
                  "ratio_bounds": ratio_bounds(ours, peer),
                  "table": [dict(zip(("metric", "tessera", "llama_cpp", "ratio"), r)) for r in rows]}
        if paired:
            # With rounds, "ratios" are the medians of the paired ones.
            result["rounds"] = rounds
            result["ratios_per_round"] = paired
            result["ratios"] = {"pp": median_or_nan(paired["pp"]), "tg": median_or_nan(paired["tg"]),
                                "tg_at_depth": {d: median_or_nan(v) for d, v in paired["tg_at_depth"].items()}}
        Path(args.json).write_text(json.dumps(no_nan(result), indent=1, allow_nan=False) + "\n")
        print(f"json: {args.json}")


if __name__ == "__main__":
    main()
