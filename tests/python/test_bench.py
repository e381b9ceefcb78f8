"""`tessera bench` on a tiny random checkpoint: the --json object has every
key with positive finite values, one timing per chunk program, the depth
sweep, and clear errors (exit 2) for bad requests."""

import json
import math
from pathlib import Path

import pytest

from conftest import run_tessera
from tiny_models import make_tiny_model

KEYS = ["model", "threads", "isa", "pp_tok_s", "pp_tok_s_sd", "tg_tok_s", "tg_tok_s_sd", "ttft_ms", "peak_rss_mib",
        "cpu_s_per_token", "chunk_ms", "depths", "prompt", "gen", "reps", "bundle_bytes", "avx_vnni"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench_qwen2")
    make_tiny_model("qwen2", path)
    return path


def bench_json(*args):
    return json.loads(run_tessera("bench", *args, "--json", timeout=120).stdout)


def test_json_has_every_key_with_sane_values(tiny, monkeypatch):
    monkeypatch.setenv("TESSERA_ISA", "scalar")
    out = bench_json(tiny, "--prompt", "40", "--gen", "16", "--reps", "2", "--chunks", "2", "-t", "2",
                     "--depths", "0,100")
    for key in KEYS:
        assert key in out, key
    assert out["isa"] == "scalar"  # the level the kernels ran, as forced by TESSERA_ISA
    assert out["avx_vnni"] is False  # only the avx2 level's kernels have AVX-VNNI variants
    assert (out["threads"], out["prompt"], out["gen"], out["reps"]) == (2, 40, 16, 2)
    for key in ("pp_tok_s", "tg_tok_s", "ttft_ms", "peak_rss_mib", "cpu_s_per_token", "bundle_bytes"):
        assert math.isfinite(out[key]) and out[key] > 0, (key, out[key])
    for key in ("pp_tok_s_sd", "tg_tok_s_sd"):
        assert math.isfinite(out[key]) and out[key] >= 0, (key, out[key])
    assert len(out["pp_runs"]) == len(out["tg_runs"]) == 2
    # TTFT covers the prefill and the first decode step.
    assert out["ttft_ms"] >= out["prefill_ms"] > 0
    # One entry per chunk program of each variant that ran: 40 tokens run as
    # one call of the 512-token prefill variant, 16 decode steps.
    programs = {p["program"]: p for p in out["chunk_ms"]}
    decode = sorted(n for n in programs if n.startswith("decode."))
    prefill = sorted(n for n in programs if n.startswith("prefill"))
    assert decode == ["decode.c0", "decode.c1"], programs
    assert len(prefill) == 2 and [n.split(".")[1] for n in prefill] == ["c0", "c1"], programs
    for name in decode:
        assert programs[name]["calls"] == 16
    for p in out["chunk_ms"]:
        assert math.isfinite(p["ms_per_step"]) and p["ms_per_step"] > 0, p
    # The decode programs of a step cannot take longer than the whole step.
    assert sum(programs[n]["ms_per_step"] for n in decode) <= 1000.0 / min(out["tg_runs"]) * 1.01
    assert [d["depth"] for d in out["depths"]] == [0, 100]
    for d in out["depths"]:
        assert math.isfinite(d["tg_tok_s"]) and d["tg_tok_s"] > 0, d
    # The checkpoint ran through its cached default bundle: that bundle's weights.bin.
    assert out["from_bundle"] is True and out["path"] != str(tiny)
    assert out["bundle_bytes"] == (Path(out["path"]) / "weights.bin").stat().st_size


def test_reference_benches_the_checkpoint_itself(tiny):
    out = bench_json(tiny, "--prompt", "8", "--gen", "2", "--reps", "1", "--reference")
    assert out["from_bundle"] is False and out["path"] == str(tiny) and out["weights_memory"] is None
    # The checkpoint's safetensors file.
    assert out["bundle_bytes"] == sum(f.stat().st_size for f in tiny.glob("*.safetensors"))


def test_single_rep_has_zero_sd_and_table_output(tiny):
    out = bench_json(tiny, "--prompt", "8", "--gen", "4", "--reps", "1")
    assert out["pp_tok_s_sd"] == 0 and out["tg_tok_s_sd"] == 0 and out["depths"] == []
    assert [p["program"] for p in out["chunk_ms"]] == ["prefill8.c0", "decode.c0"]
    table = run_tessera("bench", tiny, "--prompt", "8", "--gen", "4", "--reps", "1", "--depths", "16").stdout
    assert "pp8" in table and "tg4" in table and "tg4 @ d16" in table and "decode.c0" in table


def test_bundle_bytes_is_weights_bin(tiny, tmp_path):
    bundle = tmp_path / "tiny.bundle"
    run_tessera("convert", tiny, "-o", bundle, "--weights", "f32")
    out = bench_json(bundle, "--prompt", "8", "--gen", "4", "--reps", "1")
    assert out["bundle_bytes"] == (bundle / "weights.bin").stat().st_size


def test_gen_0_times_prefill_only(tiny):
    """--gen 0 (llama-bench -n 0): prefill rates and programs, no decode
    rate, TTFT, CPU per token or ceiling (null / absent), no decode program."""
    out = bench_json(tiny, "--prompt", "8", "--gen", "0", "--reps", "2")
    assert out["pp_tok_s"] > 0 and len(out["pp_runs"]) == 2
    assert out["tg_tok_s"] is None and out["tg_runs"] == [] and out["ttft_ms"] is None
    assert out["cpu_s_per_token"] is None and "bandwidth" not in out and out["prefill_ms"] > 0
    assert out["chunk_ms"] and not any(p["program"].startswith("decode") for p in out["chunk_ms"])
    table = run_tessera("bench", tiny, "--prompt", "8", "--gen", "0", "--reps", "1").stdout
    assert "pp8" in table and "tg0" not in table and "no decode steps" in table


@pytest.mark.parametrize("args,needle", [
    (["--reps", "0"], "--reps"),
    (["--gen", "-1"], "--gen"),
    (["--gen", "0", "--depths", "0"], "--depths"),
    (["--prompt", "0"], "--prompt"),
    (["--prompt", "500", "--gen", "20"], "context length 512"),
    (["--prompt", "8", "--gen", "8", "--depths", "0,600"], "context length 512"),
    (["--prompt", "8", "--gen", "8", "--ctx", "12"], "context length 12"),
    (["--depths", "0,-4"], "--depths"),
    (["--chunks", "99"], "chunks"),
    (["--row-block", "-1"], "--row-block"),
    (["--kv-type", "q8_0"], "--kv-type"),
    (["--arithmetic", "half"], "--arithmetic"),
    (["--threads", "0"], "--threads"),
])
def test_bad_requests_are_clear_errors(tiny, args, needle):
    proc = run_tessera("bench", tiny, *args, "--json", check=False)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr, proc.stderr
    assert proc.stdout == ""
    assert "terminate" not in proc.stderr and "Traceback" not in proc.stderr


def test_missing_model_is_a_clear_error(tmp_path):
    proc = run_tessera("bench", tmp_path / "nope", "--json", check=False)
    assert proc.returncode == 2
    assert "nope" in proc.stderr and "no such file" in proc.stderr


def test_random_gguf_loads_and_benches(tmp_path):
    """bench/make_random_gguf.py (one layer of SmolLM2-135M's shape): tessera
    reads its shapes and tokenizer, runs it and benchmarks it."""
    import subprocess
    import sys

    from conftest import REPO
    path = tmp_path / "smol-random.q8_0.gguf"
    subprocess.run([sys.executable, str(REPO / "bench" / "make_random_gguf.py"), "--shape", "smollm2-135m",
                    "--type", "q8_0", "--layers", "1", "-o", str(path)], check=True, capture_output=True, timeout=120)
    info = json.loads(run_tessera("info", path, "--json").stdout)
    spec = info["spec"]
    assert (spec["hidden_size"], spec["num_layers"], spec["vocab_size"], spec["intermediate_size"]) == \
        (576, 1, 49152, 1536)
    # The synthetic BPE: byte-pair merges (llama.cpp's llama_cpp tokenizes it the same way).
    lines = run_tessera("tokenize", path, "Hello world").stdout.splitlines()
    ids = [int(line.split()[0]) for line in lines if line.strip().startswith(tuple("0123456789")) and '"' in line]
    assert ids == [18789, 28012, 111, 8567, 28786, 28004], lines
    # --reference: the GGUF itself (dequantized), not a cached conversion of a throwaway file.
    out = json.loads(run_tessera("run", path, "--prompt-ids", "1,2,3", "-n", "4", "--ignore-eos", "--json",
                                 "--reference").stdout)
    assert len(out["ids"]) == 4
    bench = bench_json(path, "--prompt", "8", "--gen", "2", "--reps", "1", "--reference")
    assert bench["bundle_bytes"] == path.stat().st_size and bench["tg_tok_s"] > 0
    # The bandwidth probe reads a buffer as large as a decode step's reads
    # (here the f32 head alone is 108 MiB); peak RSS is taken before it.
    assert bench["bandwidth"]["decode_bytes_per_token"] > 100 * 2**20
    quiet = bench_json(path, "--prompt", "8", "--gen", "2", "--reps", "1", "--no-bandwidth", "--reference")
    assert abs(bench["peak_rss_mib"] - quiet["peak_rss_mib"]) < 32, (bench["peak_rss_mib"], quiet["peak_rss_mib"])


def test_random_gguf_head_is_stored_as_llama_quantize_stores_it(tmp_path):
    """The tied embedding of a Q4_0 file is Q8_0, as llama-quantize makes it
    for these row lengths (Q6_K needs a multiple of 256 columns); --head-type
    overrides it; layer matrices keep --type."""
    import subprocess
    import sys

    import gguf
    from conftest import REPO

    def types(*extra):
        path = tmp_path / f"smol{len(extra)}.gguf"
        subprocess.run([sys.executable, str(REPO / "bench" / "make_random_gguf.py"), "--shape", "smollm2-135m",
                        "--layers", "1", "-o", str(path), *extra], check=True, capture_output=True, timeout=120)
        return {t.name: t.tensor_type.name for t in gguf.GGUFReader(path).tensors}

    auto = types()
    assert auto["token_embd.weight"] == "Q8_0" and auto["blk.0.ffn_up.weight"] == "Q4_0"
    forced = types("--head-type", "q4_0")
    assert forced["token_embd.weight"] == "Q4_0" and forced["blk.0.attn_q.weight"] == "Q4_0"


def test_decode_rates_are_set_against_the_read_bandwidth_ceiling(tiny):
    """The bytes a decode step reads are every weight once (the embedding one
    row; the tied head its full matrix) plus the K and V rows attention sees
    at the step's depth; the ceiling is the measured read bandwidth over them.
    (--reference: the checkpoint's own f32 weights, whose bytes are counted here.)"""
    from safetensors import safe_open
    config = json.loads((tiny / "config.json").read_text())
    hidden, vocab, layers = config["hidden_size"], config["vocab_size"], config["num_hidden_layers"]
    kv_width = config["num_key_value_heads"] * (config.get("head_dim") or hidden // config["num_attention_heads"])
    weights = 0
    for f in tiny.glob("*.safetensors"):
        with safe_open(f, "np") as st:
            for name in st.keys():
                if name != "model.embed_tokens.weight":
                    weights += 4 * math.prod(st.get_slice(name).get_shape())
    weights += 4 * hidden + (4 * vocab * hidden if config["tie_word_embeddings"] else 0)

    def expected(depth, element=4):  # the mean depth of the timed steps; bytes per K/V value
        return weights + layers * 2 * kv_width * element * (depth + 1)

    prompt, gen = 24, 9
    out = bench_json(tiny, "--prompt", prompt, "--gen", gen, "--reps", "1", "--depths", "0,50", "--reference")
    assert out["kv_type"] == "f32"
    bands = [out["bandwidth"]] + [d["bandwidth"] for d in out["depths"]]
    assert [b["decode_bytes_per_token"] for b in bands] == [expected(prompt + 4), expected(4), expected(54)]
    # An f16 cache: two bytes per cached key and value.
    half = bench_json(tiny, "--prompt", prompt, "--gen", gen, "--reps", "1", "--depths", "50", "--kv-type", "f16", "--reference")
    assert half["kv_type"] == "f16"
    assert half["depths"][0]["bandwidth"]["decode_bytes_per_token"] == expected(54, element=2)
    for b, rate in zip(bands, [out["tg_tok_s"]] + [d["tg_tok_s"] for d in out["depths"]]):
        assert b["read_gb_s"] > 0 and math.isfinite(b["read_gb_s"]), b
        assert b["ceiling_tok_s"] == pytest.approx(b["read_gb_s"] * 1e9 / b["decode_bytes_per_token"])
        assert b["efficiency"] == pytest.approx(rate / b["ceiling_tok_s"])
    assert "bandwidth" not in bench_json(tiny, "--prompt", "8", "--gen", "2", "--reps", "1", "--no-bandwidth")
    table = run_tessera("bench", tiny, "--prompt", "8", "--gen", "2", "--reps", "1").stdout
    assert "GB/s: ceiling" in table and "% of it" in table


@pytest.mark.parametrize("name", ["smollm2-135m-instruct", "gemma3-270m"])
def test_peak_rss_is_within_the_bundle_its_kv_and_64_mib(real_bundle, name):
    """The memory bound of the kernels issue: a 512-token prefill and 4 decode
    steps peak within weights.bin + the f32 KV of their 516 positions (a
    sliding layer holds its window) + 64 MiB, with the default weights memory
    (huge pages where the kernel grants them: all of weights.bin is resident
    from load on, so what loading builds beside it counts in full; Gemma 3's
    tokenizer, built after the weights, once took it over the bound)."""
    path = real_bundle(name)
    out = bench_json(path, "-t", "2", "--prompt", "512", "--gen", "4", "--reps", "1", "--no-bandwidth")
    spec = json.loads(run_tessera("info", path, "--json").stdout)["spec"]
    positions = 512 + 4
    kv_bytes = 0
    for kind in spec["layer_types"]:
        held = min(spec["sliding_window"], positions) if kind == "sliding_attention" else positions
        kv_bytes += 2 * spec["num_kv_heads"] * spec["head_dim"] * 4 * held
    bound_mib = (out["bundle_bytes"] + kv_bytes) / 2**20 + 64
    assert out["peak_rss_mib"] <= bound_mib, (out["peak_rss_mib"], bound_mib, out["weights_memory"])


@pytest.mark.parametrize("shape, config", [("qwen3.5-0.8b", "qwen3_5_multimodal_0_8b_style"),
                                           ("gemma4-e2b", "gemma4_e2b_it_hub")])
def test_random_gguf_shapes_are_the_real_models(shape, config, tmp_path):
    """make_random_gguf.py's qwen35 / gemma4 metadata (and Gemma 4's rope_freqs)
    read as the spec of the real model's config.json: the geometry the speed
    comparisons run is Qwen3.5-0.8B's and Gemma 4 E2B's."""
    import importlib.util

    import gguf
    import numpy as np
    import tessera
    from conftest import REPO
    from hf_config_expectations import CASES

    spec = importlib.util.spec_from_file_location("make_random_gguf", REPO / "bench" / "make_random_gguf.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    s = script.SHAPES[shape]
    path = tmp_path / "metadata.gguf"
    w = gguf.GGUFWriter(str(path), s["arch"])
    script.model_metadata(w, s)
    w.add_vocab_size(s["vocab"])  # (the file's synthetic tokenizer says it too; not written here)
    if s["arch"] == "gemma4":
        w.add_tensor("rope_freqs.weight", script.gemma4_rope_freqs(s))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    ours = tessera.GgufFile(str(path)).spec()
    real = tessera.spec_from_hf_config(dict(CASES)[config])
    for k in ("source_architecture", "bos_token_id", "eos_token_ids"):  # the synthetic vocabulary's ids
        ours.pop(k), real.pop(k)
    assert np.float32(ours.pop("norm_eps")) == np.float32(real.pop("norm_eps"))  # an f32 key
    assert ours == real
