"""The default-bundle cache (src/convert/bundle_cache.h): `tessera run` on a
GGUF / HF source converts it once to $TESSERA_HOME/bundles/<key> and later
runs load that bundle; a damaged cached bundle is never used; concurrent
processes convert once; --reference keeps the f32 reference path. Every test
uses a tiny random checkpoint and its own TESSERA_HOME."""

import fcntl
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

import tessera
from conftest import run_tessera, tessera_bin
from tiny_models import make_tiny_model

PROMPT = ["--prompt-ids", "1,2,3,4,5", "-n", "12", "--ignore-eos", "--json"]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("cache_src") / "tiny-llama"
    make_tiny_model("llama", path)
    return path


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


def run(home, *args, check=True):
    return run_tessera("run", *args, check=check, env={"TESSERA_HOME": str(home)})


def bundle_of(stderr: str) -> Path:
    lines = [line for line in stderr.splitlines() if line.startswith("using bundle ")]
    assert len(lines) == 1, stderr
    return Path(lines[0].split()[2])


def cached_bundles(home):
    root = home / "bundles"
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def test_source_and_its_bundle_give_the_same_ids(source, home, tmp_path):
    first = run(home, source, *PROMPT)
    assert "converting" in first.stderr and "just converted" in first.stderr, first.stderr
    bundle = bundle_of(first.stderr)
    assert bundle.parent == home / "bundles" and (bundle / "manifest.json").is_file()
    assert f"lut4 layers, just converted from {source}" in first.stderr
    ids = json.loads(first.stdout)["ids"]
    assert len(ids) == 12
    # The cached bundle, named directly, and a bundle `tessera convert` makes
    # with its defaults give the same tokens.
    direct = run(home, bundle, *PROMPT)
    assert json.loads(direct.stdout)["ids"] == ids
    assert f"using bundle {bundle}\n" in direct.stderr
    converted = tmp_path / "explicit.bundle"
    run_tessera("convert", source, "-o", converted)
    assert json.loads(run(home, converted, *PROMPT).stdout)["ids"] == ids
    # Same bytes as the explicit conversion: the cache converts with the CLI's defaults.
    assert (converted / "weights.bin").read_bytes() == (bundle / "weights.bin").read_bytes()
    # Python: tessera.Model(source) loads the same cached bundle.
    os.environ["TESSERA_HOME"] = str(home)
    try:
        model = tessera.Model(str(source))
    finally:
        del os.environ["TESSERA_HOME"]
    assert model.from_bundle and model.path == str(bundle)
    assert tessera.Session(model).generate([1, 2, 3, 4, 5], 12, ignore_eos=True)["ids"] == ids


def test_second_run_loads_without_converting(source, home):
    first = run(home, source, *PROMPT)
    bundle = bundle_of(first.stderr)
    record = bundle / "cache-record.json"
    before = {p.name: (p.stat().st_mtime_ns, p.stat().st_ino) for p in bundle.iterdir()}
    start = time.monotonic()
    second = run(home, source, *PROMPT)
    elapsed = time.monotonic() - start
    assert "converting" not in second.stderr and "hashing" not in second.stderr, second.stderr
    assert bundle_of(second.stderr) == bundle
    assert f"lut4 layers, converted from {source}" in second.stderr
    assert json.loads(second.stdout)["ids"] == json.loads(first.stdout)["ids"]
    assert {p.name: (p.stat().st_mtime_ns, p.stat().st_ino) for p in bundle.iterdir()} == before
    assert elapsed < 1.0, elapsed
    assert cached_bundles(home) == [bundle.name]
    rec = json.loads(record.read_text())
    assert rec["source"]["path"] == str(source) and rec["converter_version"] >= 1
    assert rec["options"]["weights"] == "lut4" and "manifest.json" in rec["files"]


def test_changed_source_converts_to_a_new_bundle(tmp_path, home):
    src = tmp_path / "src"
    make_tiny_model("llama", src)
    a = bundle_of(run(home, src, *PROMPT).stderr)
    make_tiny_model("llama", src, seed=1)  # new weights, same path
    proc = run(home, src, *PROMPT)
    assert "converting" in proc.stderr
    b = bundle_of(proc.stderr)
    assert a != b and sorted(cached_bundles(home)) == sorted([a.name, b.name])


def flip_byte(path: Path, offset: int, keep_mtime: bool):
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x5A
    path.write_bytes(bytes(data))
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("damage", ["weights_byte", "weights_byte_mtime_kept", "weights_truncated", "manifest",
                                    "tokenizer_gone", "record_gone", "record_garbage"])
def test_damaged_cached_bundle_is_rebuilt_never_used(source, home, damage):
    first = run(home, source, *PROMPT)
    bundle = bundle_of(first.stderr)
    good = (bundle / "weights.bin").read_bytes()
    weights = bundle / "weights.bin"
    if damage.startswith("weights_byte"):
        flip_byte(weights, len(good) // 2, keep_mtime=damage.endswith("kept"))
    elif damage == "weights_truncated":
        with open(weights, "r+b") as f:
            f.truncate(len(good) - 64)
    elif damage == "manifest":
        text = (bundle / "manifest.json").read_text()
        (bundle / "manifest.json").write_text(text.replace('"lut4"', '"lut3"', 1))
    elif damage == "tokenizer_gone":
        (bundle / "config.json").unlink()
    elif damage == "record_gone":
        (bundle / "cache-record.json").unlink()
    else:
        (bundle / "cache-record.json").write_text('{"format": "x", "files": 3}')
    again = run(home, source, *PROMPT)
    assert "converting again" in again.stderr and "not usable" in again.stderr, again.stderr
    assert bundle_of(again.stderr) == bundle
    assert json.loads(again.stdout)["ids"] == json.loads(first.stdout)["ids"]
    assert (bundle / "weights.bin").read_bytes() == good
    # Repaired: the next run neither verifies nor converts.
    third = run(home, source, *PROMPT)
    assert "converting" not in third.stderr and "verifying" not in third.stderr, third.stderr
    # (The source may be refused before the cache directory is even made.)
    bundles = home / "bundles"
    leftovers = [p.name for p in bundles.iterdir() if p.name.startswith((".staging", ".trash"))] if bundles.exists() else []
    assert leftovers == []


def test_touched_weights_are_verified_not_rebuilt(source, home):
    first = run(home, source, *PROMPT)
    bundle = bundle_of(first.stderr)
    weights = bundle / "weights.bin"
    inode = weights.stat().st_ino
    os.utime(weights, ns=(time.time_ns(), time.time_ns() + 10**9))  # same bytes, new mtime
    again = run(home, source, *PROMPT)
    assert "verifying every tensor's sha256" in again.stderr and "converting" not in again.stderr, again.stderr
    assert weights.stat().st_ino == inode
    assert json.loads(again.stdout)["ids"] == json.loads(first.stdout)["ids"]
    third = run(home, source, *PROMPT)
    assert "verifying" not in third.stderr and "converting" not in third.stderr, third.stderr


def test_concurrent_processes_convert_once(source, home, tmp_path):
    # The key of this source's bundle, from a conversion in another home.
    key = bundle_of(run(tmp_path / "other", source, *PROMPT).stderr).name
    (home / "bundles").mkdir(parents=True)
    env = {**os.environ, "TESSERA_HOME": str(home)}
    # Hold the conversion lock while three processes start, so that they all
    # reach it before any converts; then let go.
    with open(home / "bundles" / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        errs = [open(tmp_path / f"err{i}", "w+") for i in range(3)]
        procs = [subprocess.Popen([tessera_bin(), "run", str(source), *PROMPT], stdout=subprocess.PIPE, stderr=e,
                                  text=True, env=env) for e in errs]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if all("waiting for another tessera process" in Path(e.name).read_text() for e in errs):
                break
            assert all(p.poll() is None for p in procs), [Path(e.name).read_text() for e in errs]
            time.sleep(0.05)
        else:
            pytest.fail("the processes did not wait for the lock: " + repr([Path(e.name).read_text() for e in errs]))
        fcntl.flock(lock, fcntl.LOCK_UN)
    outs = [p.communicate(timeout=120)[0] for p in procs]
    stderrs = [Path(e.name).read_text() for e in errs]
    assert all(p.returncode == 0 for p in procs), stderrs
    assert sum("just converted" in s for s in stderrs) == 1, stderrs
    assert sum("bundle, once" in s for s in stderrs) == 1, stderrs
    assert len({json.dumps(json.loads(o)["ids"]) for o in outs}) == 1
    assert cached_bundles(home) == [key]


def test_concurrent_processes_started_together_convert_once(source, home):
    env = {**os.environ, "TESSERA_HOME": str(home)}
    procs = [subprocess.Popen([tessera_bin(), "run", str(source), *PROMPT], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    results = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), results
    assert sum("just converted" in err for _, err in results) == 1, results
    assert len(cached_bundles(home)) == 1


def test_reference_flag_runs_the_source_in_f32(source, home):
    proc = run(home, source, *PROMPT, "--reference")
    assert f"reference path: {source} dequantized to f32" in proc.stderr, proc.stderr
    assert "using bundle" not in proc.stderr and "converting" not in proc.stderr
    assert cached_bundles(home) == []
    ref = tessera.Model(str(source), reference=True)
    assert not ref.from_bundle and ref.path == str(source)
    assert json.loads(proc.stdout)["ids"] == tessera.Session(ref).generate([1, 2, 3, 4, 5], 12, ignore_eos=True)["ids"]
    # The reference computation differs from the lut4 bundle's in its logits.
    fast = bundle_of(run(home, source, *PROMPT).stderr)
    a = tessera.Session(ref).forward([1, 2, 3, 4, 5])
    b = tessera.Session(tessera.Model(str(fast))).forward([1, 2, 3, 4, 5])
    assert (a != b).any()
    # bench and chat take the flag too.
    bench = run_tessera("bench", source, "--prompt", "8", "--gen", "2", "--reps", "1", "--no-bandwidth", "--json",
                        "--reference", env={"TESSERA_HOME": str(home)})
    assert json.loads(bench.stdout)["from_bundle"] is False and "reference path" in bench.stderr
    # A bundle has no reference path.
    bad = run(home, fast, *PROMPT, "--reference", check=False)
    assert bad.returncode == 2 and "--reference" in bad.stderr and "is a bundle" in bad.stderr


def test_bench_and_chat_use_the_cached_bundle(source, home):
    bench = run_tessera("bench", source, "--prompt", "8", "--gen", "2", "--reps", "1", "--no-bandwidth", "--json",
                        env={"TESSERA_HOME": str(home)})
    out = json.loads(bench.stdout)
    bundle = bundle_of(bench.stderr)
    assert out["from_bundle"] is True and out["path"] == str(bundle)
    assert out["bundle_bytes"] == (bundle / "weights.bin").stat().st_size
    chat = run_tessera("chat", source, "-n", "2", input="/exit\n", check=False, env={"TESSERA_HOME": str(home)})
    # The tiny checkpoint has no tokenizer or template: chat refuses, after loading the cached bundle.
    assert chat.returncode == 2 and bundle_of(chat.stderr) == bundle
    assert "converting" not in chat.stderr


def test_unconvertible_source_is_a_clear_error_and_leaves_nothing(tmp_path, home):
    src = tmp_path / "broken"
    make_tiny_model("llama", src)
    st = src / "model.safetensors"
    st.write_bytes(st.read_bytes()[:-100])  # truncated tensor data
    proc = run(home, src, *PROMPT, check=False)
    assert proc.returncode == 2 and "error:" in proc.stderr, proc.stderr
    assert "terminate" not in proc.stderr and "Traceback" not in proc.stderr
    assert cached_bundles(home) == []
    # (The source may be refused before the cache directory is even made.)
    bundles = home / "bundles"
    leftovers = [p.name for p in bundles.iterdir() if p.name.startswith((".staging", ".trash"))] if bundles.exists() else []
    assert leftovers == []
