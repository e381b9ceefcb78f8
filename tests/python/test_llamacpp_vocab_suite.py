"""llama.cpp's tokenizer test suite through `tessera tokenize --no-special`.

llama.cpp ships, for each vocabulary family it supports, a GGUF holding only
the tokenizer (models/ggml-vocab-NAME.gguf) and test vectors: NAME.gguf.inp
(texts separated by "\\n__ggml_vocab_test__\\n") and NAME.gguf.out (the ids the
model's original Hugging Face tokenizer gives for each, without special
tokens). Every text of every vocabulary must give exactly those ids; a
WordPiece (BERT) vocabulary may instead be refused by name (exit 2). The files
come from the llama-cpp-python 0.3.36 sdist (tests/python/llamacpp_peer.py).
"""

import json

import pytest

from conftest import run_tessera
from llamacpp_peer import peer_dir, read_vocab_tests

# The vocabularies of the pinned sdist that have test vectors.
WITH_VECTORS = ["bert-bge", "command-r", "deepseek-coder", "deepseek-llm", "falcon", "gemma-4", "gpt-2",
                "llama-bpe", "llama-spm", "mpt", "phi-3", "qwen2", "qwen35", "refact", "starcoder"]
# Tokenizer models refused by name (exit 2, the message names them).
REFUSED = {"bert-bge": "bert", "nomic-bert-moe": "t5"}
# Vocabularies without vectors: they must load (or be refused by name above).
WITHOUT_VECTORS = ["aquila", "baichuan", "gpt-neox", "nomic-bert-moe"]


@pytest.fixture(scope="module")
def models():
    return peer_dir() / "models"


def tokenize_all(gguf, texts):
    """One tessera process per vocabulary: --jsonl reads one JSON string a line."""
    stdin = "".join(json.dumps(t) + "\n" for t in texts)
    proc = run_tessera("tokenize", gguf, "--jsonl", "--no-special", input=stdin, check=False)
    return proc


def test_the_suite_is_the_expected_one(models):
    have = sorted(p.name[len("ggml-vocab-"):-len(".gguf.inp")] for p in models.glob("ggml-vocab-*.gguf.inp"))
    assert have == WITH_VECTORS
    ggufs = sorted(p.name[len("ggml-vocab-"):-len(".gguf")] for p in models.glob("ggml-vocab-*.gguf"))
    assert ggufs == sorted(WITH_VECTORS + WITHOUT_VECTORS)


@pytest.mark.parametrize("name", WITH_VECTORS)
def test_vocab_vectors(models, name):
    gguf = models / f"ggml-vocab-{name}.gguf"
    texts, want = read_vocab_tests(gguf.with_name(gguf.name + ".inp"))
    assert len(texts) >= 40
    proc = tokenize_all(gguf, texts)
    if name in REFUSED:
        assert proc.returncode == 2, proc.stderr
        assert f'tokenizer "{REFUSED[name]}" is not supported' in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    got = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(got) == len(texts)
    bad = [(t, w, g) for t, w, g in zip(texts, want, got) if w != g]
    assert not bad, f"{name}: {len(bad)} of {len(texts)} texts differ, first: {bad[:3]}"


@pytest.mark.parametrize("name", WITHOUT_VECTORS)
def test_vocab_without_vectors_loads_or_is_refused_by_name(models, name):
    proc = tokenize_all(models / f"ggml-vocab-{name}.gguf", ["Hello world", " 12345 ½"])
    if name in REFUSED:
        assert proc.returncode == 2 and f'tokenizer "{REFUSED[name]}" is not supported' in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
        assert all(json.loads(line) for line in proc.stdout.splitlines())


def with_pre(src, dst, name: bytes):
    """A copy of a GGUF whose tokenizer.ggml.pre value is `name` (same length)."""
    data = bytearray(src.read_bytes())
    key = b"tokenizer.ggml.pre"
    at = data.index(key) + len(key) + 4  # value type (uint32 8: string)
    n = int.from_bytes(data[at:at + 8], "little")
    assert n == len(name)
    data[at + 8:at + 8 + n] = name
    dst.write_bytes(bytes(data))
    return dst


@pytest.mark.parametrize("pre", [b"xyzzy", b"afmoe"])
def test_unknown_or_unsupported_pre_tokenizers_are_refused_by_name(models, tmp_path, pre):
    # gpt-2's pre is "gpt-2": five bytes, as both replacements.
    gguf = with_pre(models / "ggml-vocab-gpt-2.gguf", tmp_path / "v.gguf", pre)
    proc = run_tessera("tokenize", gguf, "x", check=False)
    assert proc.returncode == 2
    assert f"pre-tokenizer {pre.decode()} is not supported" in proc.stderr


def test_the_suite_can_fail(models, tmp_path):
    # GPT-2's vocabulary cut by Qwen2's rules (single digits, contractions,
    # newline runs) must miss some of GPT-2's vectors.
    gguf = with_pre(models / "ggml-vocab-gpt-2.gguf", tmp_path / "v.gguf", b"qwen2")
    texts, want = read_vocab_tests(models / "ggml-vocab-gpt-2.gguf.inp")
    proc = tokenize_all(gguf, texts)
    assert proc.returncode == 0, proc.stderr
    got = [json.loads(line) for line in proc.stdout.splitlines()]
    assert sum(w != g for w, g in zip(want, got)) >= 5


def test_download_is_skipped_only_when_pypi_is_unreachable(tmp_path, monkeypatch):
    import subprocess

    import llamacpp_peer as peer
    monkeypatch.setattr(peer.subprocess, "run",
                        lambda args, **kw: subprocess.CompletedProcess(args, 1, "", "network down"))
    monkeypatch.setattr(peer, "_pypi_reachable", lambda: False)
    with pytest.raises(pytest.skip.Exception, match="PyPI is unreachable"):
        peer._download(tmp_path)
    monkeypatch.setattr(peer, "_pypi_reachable", lambda: True)  # reachable: a failure is a failure
    with pytest.raises(RuntimeError, match="pip download .* failed"):
        peer._download(tmp_path)
