"""Tessera on Ray Serve (python -m tessera.ray_serve): 2 replicas of
SmolLM2-135M (1 thread each, 8 conversation slots of 2,048 positions)
behind one OpenAI endpoint. 8 concurrent
two-turn conversations each land their second turn on the replica that
served the first, which reuses the first turn's KV (TTFT a small fraction
of the first turn's cold prefill); killing one replica fails only the
requests in flight on it, each with a clean 503, while the other keeps
serving. Streamed replies (content and tool calls) equal whole ones. Skipped with a message when Ray is not installed or cannot start
here; bounded in time."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import socket

import pytest


pytest.importorskip("ray.serve", reason="Ray Serve is not installed (pip install 'tessera[ray]')")

ROOT = Path(__file__).resolve().parents[2]
SMOLLM2 = "smollm2-135m-instruct"
START_TIMEOUT_S = 120
TOPICS = ["rivers", "mountains", "forests", "deserts", "oceans", "islands", "lakes", "valleys"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body, timeout=120):
    req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture(scope="module")
def ray_endpoint(pulled_model_path, tmp_path_factory):
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]),
               RAY_TMPDIR=str(tmp_path_factory.mktemp("ray")))
    log = tmp_path_factory.mktemp("ray_log") / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "tessera.ray_serve", pulled_model_path(SMOLLM2), "--replicas",
                                 "2", "--threads", "1", "--parallel", "8", "--ctx", "2048", "--port", str(port)],
                                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = time.time() + START_TIMEOUT_S
    while "listening on" not in log.read_text():
        if proc.poll() is not None or time.time() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.skip(f"Ray Serve did not start within {START_TIMEOUT_S} s here:\n{log.read_text()[-2000:]}")
        time.sleep(0.5)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        subprocess.run([sys.executable, "-m", "ray.scripts.scripts", "stop", "--force"], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)


def conversation(url, i):
    """Two turns of conversation i: (first reply, second reply)."""
    # A system prompt of its own (about 800 tokens), so that the first turn
    # is a cold prefill even on a replica that served other conversations.
    system = f"You are a guide to {TOPICS[i]}. " + " ".join(
        f"Fact {k} about {TOPICS[i]}: they matter to the people who live near them." for k in range(64))
    messages = [{"role": "system", "content": system}, {"role": "user", "content": f"Name one of the {TOPICS[i]}."}]
    status, first = post(url, {"messages": messages, "max_tokens": 12, "temperature": 0})
    assert status == 200, first
    messages += [first["choices"][0]["message"], {"role": "user", "content": "Tell me more."}]
    status, second = post(url, {"messages": messages, "max_tokens": 12, "temperature": 0})
    assert status == 200, second
    return first, second


def test_turns_reach_the_replica_that_holds_the_conversation(ray_endpoint):
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: conversation(ray_endpoint, i), range(8)))
    replicas = set()
    for first, second in results:
        assert second["replica"] == first["replica"]
        replicas.add(first["replica"]["id"])
        assert second["usage"]["prompt_tokens_details"]["cached_tokens"] >= 0.9 * first["usage"]["prompt_tokens"]
        assert second["timings"]["ttft_ms"] <= 0.1 * first["timings"]["ttft_ms"], (first["timings"], second["timings"])
    assert len(replicas) == 2  # the conversations spread over both replicas


def test_streamed_replies_equal_whole_replies(ray_endpoint):
    """stream: true through the ingress, with the official client: content
    deltas and tool-call deltas concatenate to the whole reply's, the finish
    reason and (stream_options.include_usage) the usage come last."""
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=ray_endpoint + "/v1", api_key="unused", max_retries=0, timeout=120)
    ask = dict(model=client.models.list().data[0].id, messages=[{"role": "user", "content": "What is the weather in Paris?"}],
               max_tokens=40, temperature=0)
    whole = client.chat.completions.create(**ask).choices[0]
    text, finish, usage = "", None, None
    for chunk in client.chat.completions.create(**ask, stream=True, stream_options={"include_usage": True}):
        usage = chunk.usage or usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    assert (text, finish) == (whole.message.content, whole.finish_reason)
    assert usage is not None and usage.completion_tokens > 0
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "maxLength": 24}}, "required": ["city"]}}}]
    whole = client.chat.completions.create(**ask, tools=tools, tool_choice="required").choices[0]
    calls, finish = {}, None
    for chunk in client.chat.completions.create(**ask, tools=tools, tool_choice="required", stream=True):
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for d in choice.delta.tool_calls or []:
                c = calls.setdefault(d.index, {"name": None, "arguments": ""})
                c["name"] = c["name"] or (d.function.name if d.id else None)
                c["arguments"] += d.function.arguments or ""
    assert [(c["name"], c["arguments"]) for _, c in sorted(calls.items())] == \
        [(c.function.name, c.function.arguments) for c in whole.message.tool_calls]
    assert finish == whole.finish_reason == "tool_calls"


def test_a_dead_replica_fails_only_its_requests(ray_endpoint):
    # Short first turns spread over both replicas; the long second turns
    # follow their conversations (the router), so both replicas are busy
    # when one of them is killed.
    firsts = [[{"role": "user", "content": f"Say hello {i}."}] for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        warm = list(pool.map(lambda m: post(ray_endpoint, {"messages": m, "max_tokens": 2, "temperature": 0}),
                             firsts))
    pids = {r["replica"]["id"]: r["replica"]["pid"] for _, r in warm}
    assert len(pids) == 2, pids
    victim_id, victim_pid = next(iter(pids.items()))
    bodies = []
    for messages, (_, reply) in zip(firsts, warm):
        bodies.append({"messages": messages + [reply["choices"][0]["message"],
                                               {"role": "user", "content": "Now write a long story."}],
                       "max_tokens": 400, "ignore_eos": True, "temperature": 0})
    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(post, ray_endpoint, body) for body in bodies]
        time.sleep(1.5)  # in flight: 400 tokens take either replica well over this
        os.kill(victim_pid, signal.SIGKILL)
        outcomes = [f.result() for f in futures]
    failed = [r for status, r in outcomes if status != 200]
    served = [r for status, r in outcomes if status == 200]
    on_victim = sum(r["replica"]["id"] == victim_id for _, r in warm)
    assert len(failed) == on_victim, outcomes  # exactly the conversations on the killed replica
    for r in failed:
        assert r["error"]["code"] == "replica_failed", r
    for r in served:
        assert r["replica"]["id"] != victim_id and r["usage"]["completion_tokens"] == 400
    # The endpoint keeps answering.
    status, after = post(ray_endpoint, {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2})
    assert status == 200, after
