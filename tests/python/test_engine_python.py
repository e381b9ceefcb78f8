"""tessera.Engine from Python: generate / stream over text, chat messages and
token ids, multi-turn KV reuse, cancellation, errors, and the GIL released
while it computes; outputs equal the existing Session.generate's."""

import json
import threading
import time

import pytest

import tessera
from conftest import run_tessera
from serve_helpers import make_tiny_chat_model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_chat_model(tmp_path_factory.mktemp("tiny_chat"))


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_HOME", str(tmp_path / "home"))


def test_generate_equals_session_generate(tiny, home):
    engine = tessera.Engine(str(tiny), threads=2)
    r = engine.generate("hello", max_tokens=10, ignore_eos=True)
    assert isinstance(r, tessera.GenerationResult)
    model = tessera.Model(engine.model_path)
    ids = tessera.Tokenizer.from_file(str(tiny)).encode("hello")
    want = tessera.Session(model).generate(ids, 10, ignore_eos=True)
    assert r.ids == want["ids"] and r.text == want["text"]
    assert r.finish_reason == "length" and r.prompt_tokens == len(ids) and r.reused_tokens == 0
    assert r.decode_tok_s > 0 and r.ttft_ms > 0


def test_stream_pieces_join_to_the_generated_text(tiny, home):
    engine = tessera.Engine(str(tiny))
    whole = engine.generate(messages=[{"role": "user", "content": "hi"}], max_tokens=16, ignore_eos=True)
    stream = engine.stream(messages=[{"role": "user", "content": "hi"}], max_tokens=16, ignore_eos=True)
    pieces = list(stream)
    assert len(pieces) > 1 and "".join(pieces) == whole.text
    assert stream.result.ids == whole.ids
    # Turn two on the same conversation reuses it.
    assert stream.result.reused_tokens == whole.prompt_tokens - 1


def test_prompt_ids_stop_strings_and_seed(tiny, home):
    engine = tessera.Engine(str(tiny))
    free = engine.generate(prompt_ids=[104, 105], max_tokens=24, ignore_eos=True)
    stop = free.text[5:7]
    cut = engine.generate(prompt_ids=[104, 105], max_tokens=24, ignore_eos=True, stop=stop)
    assert cut.finish_reason == "stop" and cut.text == free.text[:free.text.find(stop)]
    a = engine.generate("x", max_tokens=12, temperature=1.0, seed=5, ignore_eos=True)
    b = engine.generate("x", max_tokens=12, temperature=1.0, seed=5, ignore_eos=True)
    assert a.ids == b.ids


def test_speculative_lookup_keeps_greedy_output(tiny, home):
    engine = tessera.Engine(str(tiny))
    prompt = "abcabcabcabcabcabc"
    plain = engine.generate(prompt, max_tokens=24, ignore_eos=True)
    engine.reset()
    assert engine.generate(prompt, max_tokens=24, ignore_eos=True, speculative="lookup", draft_max=4).ids == plain.ids
    with pytest.raises(tessera.TesseraError, match="speculative"):
        engine.generate(prompt, speculative="sometimes")


def test_cancel_a_stream(tiny, home):
    engine = tessera.Engine(str(tiny), context_length=1024)
    stream = engine.stream("count", max_tokens=900, ignore_eos=True)
    next(stream)
    stream.cancel()
    rest = list(stream)
    assert stream.result.finish_reason == "cancelled"
    assert len(stream.result.ids) < 900, len(rest)


def test_bad_requests_raise_tessera_error(tiny, home):
    engine = tessera.Engine(str(tiny), context_length=64)
    with pytest.raises(tessera.TesseraError, match="max_tokens"):
        engine.generate("x", max_tokens=0)
    with pytest.raises(tessera.TesseraError, match="exactly one"):
        engine.generate("x", messages=[{"role": "user", "content": "y"}])
    with pytest.raises(tessera.TesseraError, match="context length"):
        engine.generate("x" * 100)
    with pytest.raises(tessera.TesseraError, match="vocabulary"):
        engine.generate(prompt_ids=[1, 100000])
    with pytest.raises(tessera.TesseraError):
        list(engine.stream("y" * 100))
    assert engine.generate("ok", max_tokens=2).finish_reason in ("length", "eos")


def test_sliding_window_reuse_refusal_is_reported(tmp_path, home):
    model = make_tiny_chat_model(tmp_path / "gemma", sliding_window=4)
    engine = tessera.Engine(str(model))
    engine.generate("a prompt long enough to wrap the ring", max_tokens=4, ignore_eos=True)
    r = engine.generate("a prompt lonXXXXXXXXXXXXXXXX", max_tokens=4, ignore_eos=True)
    assert r.reused_tokens == 0 and "sliding-window" in r.reuse_note
    engine.reset()
    assert engine.generate("a prompt lonXXXXXXXXXXXXXXXX", max_tokens=4, ignore_eos=True).ids == r.ids


def test_prefix_cache_serves_a_shared_system_prompt(tiny, home):
    system = {"role": "system", "content": "You answer in one line and never use more than ten words."}
    engine = tessera.Engine(str(tiny))
    engine.generate(messages=[system, {"role": "user", "content": "a"}], max_tokens=4)
    engine.generate("something else takes the only slot", max_tokens=4)
    r = engine.generate(messages=[system, {"role": "user", "content": "b"}], max_tokens=4)
    assert r.reused_from == "prefix cache" and r.reused_tokens > 40
    off = tessera.Engine(str(tiny), prefix_cache_mb=0)
    off.generate(messages=[system, {"role": "user", "content": "a"}], max_tokens=4)
    off.generate("something else takes the only slot", max_tokens=4)
    r_off = off.generate(messages=[system, {"role": "user", "content": "b"}], max_tokens=4)
    assert r_off.reused_tokens == 0 and r_off.reused_from == ""
    assert r_off.ids == r.ids


def test_reset_forgets_conversations(tiny, home):
    engine = tessera.Engine(str(tiny))
    engine.generate("the same prompt", max_tokens=3)
    assert engine.generate("the same prompt", max_tokens=3).reused_tokens > 0
    engine.reset()
    assert engine.generate("the same prompt", max_tokens=3).reused_tokens == 0


def test_gil_is_released_while_generating(pulled_model_path):
    engine = tessera.Engine(pulled_model_path("smollm2-135m-instruct"), threads=2)
    ticks = 0
    done = threading.Event()

    def count():
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    start = time.monotonic()
    r = engine.generate("Tell me about the moon.", max_tokens=48, ignore_eos=True)
    elapsed = time.monotonic() - start
    done.set()
    t.join()
    assert r.finish_reason == "length"
    # A thread sleeping 1 ms per tick ticks hundreds of times per second when
    # it can take the GIL; with the GIL held throughout it would not tick.
    assert ticks > 20 * elapsed, (ticks, elapsed)


def test_smollm2_chat_equals_tessera_run(pulled_model_path):
    gguf = pulled_model_path("smollm2-135m-instruct")
    engine = tessera.Engine(gguf, threads=2)
    r = engine.generate(messages=[{"role": "user", "content": "What is 2+2?"}], max_tokens=24)
    run = json.loads(run_tessera("run", gguf, "--chat", "-p", "What is 2+2?", "-n", 24, "--json").stdout)
    assert r.ids == run["ids"] and r.text == run["text"]


def test_malformed_messages_raise_tessera_error(tiny, home):
    engine = tessera.Engine(str(tiny))
    for messages in ([{"role": 5, "content": "x"}, {"role": "user", "content": "y"}], [], ["not an object"]):
        with pytest.raises(tessera.TesseraError):
            engine.generate(messages=messages, max_tokens=2)
    assert engine.generate("still fine", max_tokens=2).finish_reason in ("length", "eos")


def test_python_example_runs(tiny, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "python_example.py"
    proc = subprocess.run([sys.executable, str(example), str(tiny)], capture_output=True, text=True, timeout=300,
                          errors="replace", env={**os.environ, "TESSERA_HOME": str(tmp_path / "home")})
    assert proc.returncode == 0, proc.stderr
    assert "refused as expected" in proc.stdout and "reused" in proc.stdout


def test_disk_prefix_cache_outlives_the_engine(tiny, home, tmp_path):
    system = {"role": "system", "content": "You are a careful assistant. Answer briefly and check every number twice."}
    store = tmp_path / "prefixes"
    first = tessera.Engine(str(tiny), prefix_cache_disk_mb=64, prefix_cache_dir=str(store))
    first.generate(messages=[system, {"role": "user", "content": "one"}], max_tokens=4, ignore_eos=True)
    del first  # its end finishes the disk writes
    files = list(store.glob("*.tsession"))
    assert len(files) == 1
    second = tessera.Engine(str(tiny), prefix_cache_disk_mb=64, prefix_cache_dir=str(store))
    messages = [system, {"role": "user", "content": "two"}]
    r = second.generate(messages=messages, max_tokens=8, ignore_eos=True)
    assert r.reused_from == "disk" and r.reused_tokens >= 32
    plain = tessera.Engine(str(tiny), prefix_cache_mb=0).generate(messages=messages, max_tokens=8, ignore_eos=True)
    assert r.ids == plain.ids
    # A damaged file is dropped (with a warning on stderr), never used.
    del second
    data = bytearray(files[0].read_bytes())
    data[-2] ^= 0xFF
    files[0].write_bytes(bytes(data))
    third = tessera.Engine(str(tiny), prefix_cache_disk_mb=64, prefix_cache_dir=str(store))
    r3 = third.generate(messages=messages, max_tokens=8, ignore_eos=True)
    assert r3.reused_from == "" and r3.ids == plain.ids
