"""llama.cpp's own tokenizer test vectors and chat template collection, taken
from the llama-cpp-python 0.3.36 source distribution on PyPI (llama.cpp is
MIT-licensed; its LICENSE is kept beside the extracted files).

The sdist is downloaded once with pip (`pip download --no-deps --no-binary
:all:`), checked against its pinned SHA-256, and the few files the suites need
(vendor/llama.cpp/models/ggml-vocab-*, models/templates/*, LICENSE, and
tools/mtmd's test image and audio) are
extracted into $TESSERA_HOME/peer-sdist/llama-cpp-python-0.3.36/ (default
~/.cache/tessera). Later runs read the extracted copy and touch no network.
When the download fails and pypi.org cannot be reached at all, the suites are
skipped with that reason; any other failure fails them.
"""

import fcntl
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

SDIST_REQUIREMENT = "llama-cpp-python==0.3.36"
SDIST_FILE = "llama_cpp_python-0.3.36.tar.gz"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
PREFIX = "llama_cpp_python-0.3.36/vendor/llama.cpp/"


def tessera_home() -> Path:
    return Path(os.environ.get("TESSERA_HOME", Path.home() / ".cache" / "tessera"))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _pypi_reachable() -> bool:
    try:
        with socket.create_connection(("pypi.org", 443), timeout=10):
            return True
    except OSError:
        return False


def _download(base: Path) -> Path:
    tarball = base / SDIST_FILE
    if tarball.is_file() and _sha256(tarball) == SDIST_SHA256:
        return tarball
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
             SDIST_REQUIREMENT, "-d", tmp], capture_output=True, text=True)
        got = Path(tmp) / SDIST_FILE
        if proc.returncode != 0 or not got.is_file():
            if not _pypi_reachable():
                pytest.skip(f"PyPI is unreachable: cannot fetch {SDIST_REQUIREMENT} (llama.cpp's test suites)")
            raise RuntimeError(f"pip download {SDIST_REQUIREMENT} failed:\n{proc.stdout}\n{proc.stderr}")
        digest = _sha256(got)
        if digest != SDIST_SHA256:
            raise RuntimeError(f"{SDIST_FILE}: SHA-256 {digest}, expected {SDIST_SHA256}")
        os.replace(got, tarball)
    return tarball


# What an extraction holds: a copy made for a smaller selection is redone.
EXTRACTED = SDIST_SHA256 + " models ggml-vocab templates tools/mtmd media\n"


def _extracted(out: Path) -> bool:
    marker = out / ".complete"
    return marker.is_file() and marker.read_text() == EXTRACTED


def peer_dir() -> Path:
    """The extracted llama.cpp files: LICENSE, models/ (ggml-vocab-*,
    templates/) and tools/mtmd's media files (test-1.jpeg, test-2.mp3)."""
    base = tessera_home() / "peer-sdist"
    out = base / "llama-cpp-python-0.3.36"
    if _extracted(out):
        return out
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one download and extraction at a time
        if _extracted(out):
            return out
        tarball = _download(base)
        staging = Path(tempfile.mkdtemp(dir=base))
        try:
            with tarfile.open(tarball, "r:gz") as tar:
                for m in tar.getmembers():
                    if not m.isfile() or not m.name.startswith(PREFIX):
                        continue
                    rel = m.name[len(PREFIX):]
                    if not (rel == "LICENSE" or rel.startswith("models/ggml-vocab-")
                            or rel.startswith("models/templates/")
                            or rel in ("tools/mtmd/test-1.jpeg", "tools/mtmd/test-2.mp3")):
                        continue
                    dest = staging / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    with tar.extractfile(m) as src, open(dest, "wb") as dst:
                        shutil.copyfileobj(src, dst)
            (staging / ".complete").write_text(EXTRACTED)
            if out.exists():
                shutil.rmtree(out)
            os.replace(staging, out)
        finally:
            if staging.exists():
                shutil.rmtree(staging)
    return out


def read_vocab_tests(inp: Path):
    """(texts, expected id lists) of a ggml-vocab-NAME.gguf.inp / .out pair, split
    as llama.cpp's tests/test-tokenizer-0.cpp splits them."""
    raw = inp.read_bytes().decode("utf-8")
    sep = "\n__ggml_vocab_test__\n"
    texts, pos = [], 0
    while pos < len(raw):
        nxt = raw.find(sep, pos)
        if nxt < 0:
            texts.append(raw[pos:])
            break
        texts.append(raw[pos:nxt])
        pos = nxt + len(sep)
    lines = inp.with_suffix(".out").read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    assert len(lines) == len(texts), f"{inp.name}: {len(texts)} texts, {len(lines)} expected lines"
    return texts, [[int(x) for x in line.split()] for line in lines]
