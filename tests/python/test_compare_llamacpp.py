"""bench/compare_llamacpp.py end to end: the real `tessera bench` on a tiny
random checkpoint against a stand-in llama-bench (a script answering its
command line with llama-bench's JSON rows, at rates that change from call to
call). Checks the table, the JSON file and the plot, and that with --rounds
the sides alternate and the ratios are the medians of the paired ones."""

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, tessera_bin
from tiny_models import make_tiny_model

SCRIPT = REPO / "bench" / "compare_llamacpp.py"

# Answers `-p P -n 0` with a pp row and `-p 0 -n G -d D1,D2` with one tg row
# per depth. Call k (counted in $FAKE_LOG, which also records the order of
# the calls) runs at 100·(k+1) tok/s for pp and 10·(k+1) for tg at depth 0,
# minus one per 16 tokens of depth, so every round and depth differs.
FAKE_LLAMA_BENCH = r'''#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
if os.environ.get("FAKE_FAIL"):
    sys.exit("fake llama-bench: cannot load model")
def opt(name):
    return args[args.index(name) + 1] if name in args else None
log = os.environ["FAKE_LOG"]
with open(log, "a") as f:
    f.write("llama-bench " + " ".join(args) + "\n")
k = sum(1 for line in open(log) if line.startswith("llama-bench") and "-n 0" in line) - 1
p, n = int(opt("-p")), int(opt("-n"))
rows = []
if n == 0:
    rows.append({"n_prompt": p, "n_gen": 0, "n_depth": 0, "avg_ts": 100.0 * (k + 1), "stddev_ts": 1.0,
                 "build_commit": "fake"})
else:
    for d in map(int, opt("-d").split(",")):
        rows.append({"n_prompt": 0, "n_gen": n, "n_depth": d, "avg_ts": 10.0 * (k + 1) - d / 16,
                     "stddev_ts": 0.5, "build_commit": "fake"})
print(json.dumps(rows))
'''


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("compare_qwen2")
    make_tiny_model("qwen2", path)
    return path


@pytest.fixture()
def fake_llama_bench(tmp_path):
    path = tmp_path / "llama-bench"
    path.write_text(FAKE_LLAMA_BENCH)
    path.chmod(0o755)
    return path


def compare(tiny, fake, tmp_path, *extra, env=None):
    cmd = [sys.executable, str(SCRIPT), "--ours", str(tiny), "--gguf", str(tmp_path / "model.gguf"),
           "--llama-bench", str(fake), "--tessera-bin", tessera_bin(), "--threads", "1", "--prompt", "16",
           "--gen", "4", "--reps", "1", "--depths", "0,16", *extra]
    full_env = {**os.environ, "FAKE_LOG": str(tmp_path / "calls.log"), **(env or {})}
    return subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=300)


def test_one_round_table_json_and_plot(tiny, fake_llama_bench, tmp_path):
    out_json, out_png = tmp_path / "out.json", tmp_path / "out.png"
    proc = compare(tiny, fake_llama_bench, tmp_path, "--json", str(out_json), "--plot", str(out_png))
    assert proc.returncode == 0, proc.stderr
    assert "| pp16 tok/s" in proc.stdout and "tg4 tok/s @ depth 16" in proc.stdout
    assert "ratios per round" not in proc.stdout
    result = json.loads(out_json.read_text())
    ours, peer = result["tessera"], result["llama_cpp"]
    assert peer["pp_tok_s"] == 100.0 and peer["tg_tok_s"] == 10.0 - 1  # tg after pp: depth --prompt
    assert ours["pp_tok_s"] > 0 and ours["tg_tok_s"] > 0
    assert result["ratios"]["pp"] == pytest.approx(ours["pp_tok_s"] / 100.0)
    assert result["ratios"]["tg_at_depth"]["16"] == pytest.approx(ours["depths"][1]["tg_tok_s"] / 9.0)
    assert "rounds" not in result
    # The bound on each decode ratio: ours at its read-bandwidth ceiling
    # against the peer as measured.
    assert "| tg4 ratio if ours ran at the ceiling" in proc.stdout
    assert "| tg4 @ depth 16 ratio if ours ran at the ceiling" in proc.stdout
    bounds = result["ratio_bounds"]
    assert bounds["tg"] == pytest.approx(ours["bandwidth"]["ceiling_tok_s"] / 9.0)
    assert bounds["tg_at_depth"]["16"] == pytest.approx(ours["depths"][1]["bandwidth"]["ceiling_tok_s"] / 9.0)
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rounds_alternate_and_report_median_paired_ratios(tiny, fake_llama_bench, tmp_path):
    out_json = tmp_path / "out.json"
    proc = compare(tiny, fake_llama_bench, tmp_path, "--rounds", "3", "--json", str(out_json))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out_json.read_text())
    rounds = result["rounds"]
    assert len(rounds) == 3
    # The stand-in's rate grows with each call, so the rounds really are
    # separate runs: pp 100, 200, 300 tok/s.
    assert [r["llama_cpp"]["pp_tok_s"] for r in rounds] == [100.0, 200.0, 300.0]
    assert result["llama_cpp"]["pp_tok_s"] == 200.0  # the median
    assert result["llama_cpp"]["pp_tok_s_sd"] == pytest.approx(100.0)
    for key, get in (("pp", lambda r: r["pp_tok_s"]), ("tg", lambda r: r["tg_tok_s"])):
        per_round = [get(r["tessera"]) / get(r["llama_cpp"]) for r in rounds]
        assert result["ratios_per_round"][key] == pytest.approx(per_round)
        assert result["ratios"][key] == pytest.approx(statistics.median(per_round))
    per_round = [r["tessera"]["depths"][1]["tg_tok_s"] / (10.0 * (i + 1) - 1) for i, r in enumerate(rounds)]
    assert result["ratios"]["tg_at_depth"]["16"] == pytest.approx(statistics.median(per_round))
    # Each ceiling is the median of the rounds', and its bound uses it.
    ceilings = [r["tessera"]["bandwidth"]["ceiling_tok_s"] for r in rounds]
    assert result["tessera"]["bandwidth"]["ceiling_tok_s"] == pytest.approx(statistics.median(ceilings))
    assert result["ratio_bounds"]["tg"] == pytest.approx(statistics.median(ceilings) / result["llama_cpp"]["tg_tok_s"])
    depth_ceilings = [r["tessera"]["depths"][1]["bandwidth"]["ceiling_tok_s"] for r in rounds]
    assert result["tessera"]["depths"][1]["bandwidth"]["ceiling_tok_s"] == pytest.approx(statistics.median(depth_ceilings))
    assert "ratios per round (ours / llama.cpp), 3 rounds" in proc.stdout
    assert "median" in proc.stdout
    # Each command is listed once, however many rounds ran it.
    assert len(result["commands"]) == len(set(result["commands"])) == 3


def test_llama_bench_failure_is_a_clear_error(tiny, fake_llama_bench, tmp_path):
    proc = compare(tiny, fake_llama_bench, tmp_path, env={"FAKE_FAIL": "1"})
    assert proc.returncode != 0
    assert "llama-bench failed" in proc.stderr and "cannot load model" in proc.stderr


@pytest.mark.parametrize("bad", [["--rounds", "0"], ["--reps", "0"]])
def test_bad_counts_are_refused(tiny, fake_llama_bench, tmp_path, bad):
    proc = compare(tiny, fake_llama_bench, tmp_path, *bad)
    assert proc.returncode == 2
    assert "must be >= 1" in proc.stderr
