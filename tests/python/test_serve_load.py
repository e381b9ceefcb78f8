"""A load test of `tessera serve` on SmolLM2-135M, bounded to 60 s: 32
concurrent streaming clients (openai client), a third of them cancelling at a
random point. No crash, every completed greedy stream identical to the
single-request output of its prompt, the server still serving, and its
resident memory after a second identical round no larger than after the
first (nothing leaked per request or per cancelled stream). GET /metrics is
scraped throughout: its token counters equal the usage the responses
report, and once idle every submitted request has ended exactly once."""

import random
import threading
import time

import pytest

from serve_helpers import Server, metric, scrape

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
        usage = {"prompt": 0, "cached": 0, "completion": 0}
        for p in PROMPTS:  # the single-request outputs (also warms up the slots)
            r = client.chat.completions.create(
                model=server.model_name, messages=[{"role": "user", "content": p}], max_tokens=MAX_TOKENS,
                temperature=0)
            single[p] = r.choices[0].message.content
            usage["prompt"] += r.usage.prompt_tokens
            usage["cached"] += r.usage.prompt_tokens_details.cached_tokens
            usage["completion"] += r.usage.completion_tokens
        m = scrape(server)
        assert metric(m, "tessera_ready") == 1
        assert metric(m, "tessera_requests_submitted_total") == len(PROMPTS)
        assert metric(m, "tessera_requests_ended_total", status="finished") == len(PROMPTS)
        assert metric(m, "tessera_prompt_tokens_total") == usage["prompt"]
        assert metric(m, "tessera_prompt_tokens_reused_total") == usage["cached"]
        assert metric(m, "tessera_generation_tokens_total") == usage["completion"]
        assert metric(m, "tessera_time_to_first_token_seconds_count") == len(PROMPTS)
        assert metric(m, "tessera_kv_cache_used_bytes") > 0
        assert 0 < metric(m, "tessera_kv_cache_usage_ratio") <= 1
        rng = random.Random(38)
        rss = []
        for _ in range(2):
            threads, out = load_round(server, rng)
            running = []
            while any(t.is_alive() for t in threads) and time.monotonic() - start < 55:
                m = scrape(server)  # scraped while 32 clients stream
                running.append(metric(m, "tessera_requests_running"))
                assert 0 <= metric(m, "tessera_requests_waiting") <= 64
                time.sleep(0.05)
            for t in threads:
                t.join(timeout=max(1.0, 55 - (time.monotonic() - start)))
            assert max(running) <= 4 and max(running) > 0, running
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
        # Once idle, every request submitted has ended once: finished,
        # cancelled (the clients that left) or failed (none).
        while True:
            m = scrape(server)
            if metric(m, "tessera_requests_running") == 0 and metric(m, "tessera_requests_waiting") == 0:
                break
            assert time.monotonic() - start < 58, "the engine did not go idle"
            time.sleep(0.05)
        ended = {s: metric(m, "tessera_requests_ended_total", status=s) for s in ("finished", "cancelled", "failed")}
        assert metric(m, "tessera_requests_submitted_total") == len(PROMPTS) + 2 * CLIENTS == sum(ended.values()), ended
        assert ended["failed"] == 0 and ended["cancelled"] >= 1, ended
        reasons = sum(metric(m, "tessera_requests_finished_total", reason=r) for r in ("eos", "stop", "length", "context"))
        assert reasons == ended["finished"]
        assert metric(m, "tessera_request_duration_seconds_count") == sum(ended.values())
        print(f"RSS after round 1: {rss[0] / 1024:.1f} MiB, after round 2: {rss[1] / 1024:.1f} MiB; "
              f"{time.monotonic() - start:.1f} s in all")
        assert rss[1] <= rss[0] * 1.05 + 8 * 1024, rss
    assert time.monotonic() - start < 60
