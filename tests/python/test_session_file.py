"""Session state saved to a file and loaded back (state/session_file.h):
a session loaded from a file continues exactly as the one that saved it
(bit-identical logits), on architectures with every kind of layer state
(full KV, sliding rings after wrapping, conv tails, recurrent matrices,
KV-sharing layers, f16 KV); a file of another model, another context
length or KV type, another version, a truncated or corrupted one, or no
session file at all is refused with a clear error and the session is left
as it was."""

import numpy as np
import pytest

import tessera
from tiny_models import VOCAB, make_tiny_model

ARCHS = ["llama", "gemma3", "lfm2", "qwen3_5", "gemma4"]


@pytest.fixture(scope="module", params=ARCHS)
def tiny(request, tmp_path_factory):
    directory = tmp_path_factory.mktemp(request.param)
    make_tiny_model(request.param, directory)
    return request.param, directory


def seq(n, k=0):
    return [(i * 5 + k * 11 + 3) % VOCAB for i in range(n)]


@pytest.mark.parametrize("kv_type", ["f32", "f16"])
def test_loaded_session_continues_exactly(tiny, tmp_path, kv_type):
    name, directory = tiny
    model = tessera.Model(str(directory), reference=True, kv_type=kv_type)
    a = tessera.Session(model)
    a.forward(seq(40), all_logits=False)  # past Gemma's 8-token window, many conv / recurrent updates
    path = tmp_path / "s.tsession"
    a.save(str(path))
    b = tessera.Session(model)
    b.forward(seq(7, 1), all_logits=False)  # something else first: load replaces it
    b.load(str(path))
    assert b.length == a.length == 40
    more = seq(12, 2)
    assert np.array_equal(b.forward(more, all_logits=True), a.forward(more, all_logits=True)), name
    # Rollbacks after a load work as on the original.
    assert a.rollback(5) and b.rollback(5)
    assert np.array_equal(b.forward([1, 2], all_logits=True), a.forward([1, 2], all_logits=True)), name


def test_bad_files_are_refused_and_change_nothing(tiny, tmp_path):
    name, directory = tiny
    model = tessera.Model(str(directory), reference=True)
    s = tessera.Session(model)
    s.forward(seq(20), all_logits=False)
    good = tmp_path / "good.tsession"
    s.save(str(good))
    data = good.read_bytes()
    target = tessera.Session(model)
    target.forward(seq(9, 3), all_logits=False)
    want = tessera.Session(model)
    want.forward(seq(9, 3), all_logits=False)

    def refused(path, needle):
        with pytest.raises(tessera.TesseraError, match=needle):
            target.load(str(path))
        assert target.length == 9
        assert np.array_equal(target.forward([4], all_logits=True),
                              want.forward([4], all_logits=True))
        assert target.rollback(1) and want.rollback(1)

    corrupted = bytearray(data)
    corrupted[-7] ^= 0x40
    (tmp_path / "corrupted").write_bytes(bytes(corrupted))
    refused(tmp_path / "corrupted", "corrupted")
    (tmp_path / "truncated").write_bytes(data[:-100])
    refused(tmp_path / "truncated", "payload bytes")
    (tmp_path / "short").write_bytes(data[:20])
    refused(tmp_path / "short", "truncated")
    (tmp_path / "other").write_bytes(b"not a session file at all, just some bytes")
    refused(tmp_path / "other", "not a Tessera session file")
    version = bytearray(data)
    version[8] = 99
    (tmp_path / "version").write_bytes(bytes(version))
    refused(tmp_path / "version", "version 99")
    refused(tmp_path / "missing", "cannot be read")
    # Another context length or KV type: the same model, another session shape.
    small = tessera.Session(model, context_length=100)
    with pytest.raises(tessera.TesseraError, match="context"):
        small.load(str(good))
    f16 = tessera.Session(tessera.Model(str(directory), reference=True, kv_type="f16"))
    with pytest.raises(tessera.TesseraError, match="another model|f16|f32"):
        f16.load(str(good))


def test_a_file_of_another_model_is_refused(tmp_path):
    make_tiny_model("llama", tmp_path / "a", seed=0)
    make_tiny_model("llama", tmp_path / "b", seed=1)
    a = tessera.Session(tessera.Model(str(tmp_path / "a"), reference=True))
    a.forward(seq(10), all_logits=False)
    a.save(str(tmp_path / "s"))
    b = tessera.Session(tessera.Model(str(tmp_path / "b"), reference=True))
    with pytest.raises(tessera.TesseraError, match="another model"):
        b.load(str(tmp_path / "s"))
