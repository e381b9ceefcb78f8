"""A load test of `tessera serve` on SmolLM2-135M, bounded to 60 s: 32
concurrent streaming clients (openai client), a third of them cancelling at a
random point. No crash, every completed greedy stream identical to the
single-request output of its prompt, the server still serving, and its
resident memory after a second identical round no larger than after the
first (nothing leaked per request or per cancelled stream)."""

import random
import threading
import time

import pytest

from serve_helpers import Server

openai = pytest.importorskip("openai")

PROMPTS = ["Name three rivers.", "What is a prime number?", "Say something about cats.", "Count from one to ten."]
MAX_TOKENS = 16
CLIENTS = 32


def one_stream(server, prompt, cancel_after, out, index):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=120)
    try:
        stream = client.chat.completions.create(model=server.model_name, messages=[{"role": "user", "content": prompt}],
                                                max_tokens=MAX_TOKENS, temperature=0, stream=True)
        pieces = []
        for n, chunk in enumerate(stream):
            if cancel_after is not None and n >= cancel_after:
                stream.close()  # the client goes away mid-stream
                out[index] = ("cancelled", None)
                return
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
        out[index] = ("done", "".join(pieces))
    except Exception as e:  # noqa: BLE001 - recorded and asserted on below
        out[index] = ("error", repr(e))


def load_round(server, rng):
    out = [None] * CLIENTS
    threads = []
    for i in range(CLIENTS):
        cancel_after = rng.randint(1, 8) if i % 3 == 0 else None
        t = threading.Thread(target=one_stream, args=(server, PROMPTS[i % len(PROMPTS)], cancel_after, out, i))
        t.start()
        threads.append(t)
    return threads, out


def test_32_streaming_clients_with_cancellations(pulled_model_path):
    start = time.monotonic()
    with Server(pulled_model_path("smollm2-135m-instruct"), "--threads", 2, "--parallel", 4, "--queue", 64) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)
        single = {}
        for p in PROMPTS:  # the single-request outputs (also warms up the slots)
            single[p] = client.chat.completions.create(
                model=server.model_name, messages=[{"role": "user", "content": p}], max_tokens=MAX_TOKENS,
                temperature=0).choices[0].message.content
        rng = random.Random(38)
        rss = []
        for _ in range(2):
            threads, out = load_round(server, rng)
            for t in threads:
                t.join(timeout=max(1.0, 55 - (time.monotonic() - start)))
            assert not any(t.is_alive() for t in threads), "clients still running after the time bound"
            assert server.alive(), "".join(server.stderr_lines)
            errors = [o for o in out if o[0] == "error"]
            assert not errors, errors
            for i, (kind, text) in enumerate(out):
                if kind == "done":
                    assert text == single[PROMPTS[i % len(PROMPTS)]], (i, text)
            assert sum(o[0] == "cancelled" for o in out) >= CLIENTS // 4
            time.sleep(0.5)  # cancelled requests finish their current token
            rss.append(server.rss_kib())
        # Still serving, and the queue drained.
        health = client.with_options(timeout=10).models.list()
        assert health.data[0].id == server.model_name
        print(f"RSS after round 1: {rss[0] / 1024:.1f} MiB, after round 2: {rss[1] / 1024:.1f} MiB; "
              f"{time.monotonic() - start:.1f} s in all")
        assert rss[1] <= rss[0] * 1.05 + 8 * 1024, rss
    assert time.monotonic() - start < 60
