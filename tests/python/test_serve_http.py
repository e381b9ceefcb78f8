"""`tessera serve` against raw HTTP: every bad request gets a 4xx JSON error in
OpenAI's shape (malformed JSON 400, wrong types 400, unknown model 404,
missing / wrong API key 401, no Content-Length 411, a 64 MB body 413 answered
from the headers before the body is sent), stalled and vanished clients, a
full queue (503), and after each the server keeps serving."""

import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request

import pytest

from conftest import tessera_bin
from serve_helpers import Server, chat_body, error_of, make_tiny_chat_model, metric, raw_request, read_response, scrape


@pytest.fixture(scope="module")
def tiny_home(tmp_path_factory):
    return {"TESSERA_HOME": str(tmp_path_factory.mktemp("tessera_home"))}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return make_tiny_chat_model(tmp_path_factory.mktemp("tiny_chat"))


@pytest.fixture(scope="module")
def tiny_server(tiny_model, tiny_home):
    with Server(tiny_model, "--max-body", 1 << 20, "--timeout", 3, env=tiny_home) as s:
        yield s


def assert_serving(server):
    status, _, body = raw_request(server, "POST", "/v1/chat/completions", chat_body("still there?", max_tokens=3))
    assert status == 200, body
    assert json.loads(body)["usage"]["completion_tokens"] >= 1
    assert server.alive()


def test_health_models_and_page(tiny_server):
    status, _, body = raw_request(tiny_server, "GET", "/health")
    assert status == 200 and json.loads(body)["status"] == "ok"
    status, _, body = raw_request(tiny_server, "GET", "/v1/models")
    assert [m["id"] for m in json.loads(body)["data"]] == [tiny_server.model_name]
    status, headers, body = raw_request(tiny_server, "GET", "/")
    assert status == 200 and headers["content-type"].startswith("text/html") and b"/v1/chat/completions" in body


@pytest.mark.parametrize("body", [b"{", b"not json", b"", b"{\"messages\": [}", b"\xff\xfe"])
def test_malformed_json_is_400(tiny_server, body):
    status, headers, reply = raw_request(tiny_server, "POST", "/v1/chat/completions", body)
    assert status == 400, reply
    assert headers["content-type"] == "application/json"
    assert error_of(reply)["code"] == "invalid_json"
    assert_serving(tiny_server)


@pytest.mark.parametrize("fields,param", [
    ({"max_tokens": "5"}, "max_tokens"),
    ({"max_tokens": 2.5}, "max_tokens"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"temperature": "hot"}, "temperature"),
    ({"temperature": 3}, "temperature"),
    ({"top_p": 0}, "top_p"),
    ({"stream": "yes"}, "stream"),
    ({"stop": 5}, "stop"),
    ({"stop": ["a", ""]}, "stop"),
    ({"seed": "1"}, "seed"),
    ({"n": 2}, "n"),
    ({"model": 7}, "model"),
    ({"messages": "hi"}, "messages"),
    ({"messages": []}, "messages"),
    ({"messages": [{"role": 3, "content": "x"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "messages[0].content.image_url"),
])
def test_wrong_fields_are_400_naming_the_field(tiny_server, fields, param):
    body = {"messages": [{"role": "user", "content": "hi"}], **fields}
    status, _, reply = raw_request(tiny_server, "POST", "/v1/chat/completions", json.dumps(body).encode())
    assert status == 400, reply
    e = error_of(reply)
    assert e["type"] == "invalid_request_error" and e["param"] == param, e


def test_completions_wrong_prompt_types(tiny_server):
    for prompt in [5, [], ["a"], [-1], None]:
        status, _, reply = raw_request(tiny_server, "POST", "/v1/completions", json.dumps({"prompt": prompt}).encode())
        assert status == 400 and error_of(reply)["param"] == "prompt", (prompt, reply)
    # A token id outside the vocabulary is the engine's refusal, still a 400.
    status, _, reply = raw_request(tiny_server, "POST", "/v1/completions", json.dumps({"prompt": [1, 99999]}).encode())
    assert status == 400 and "vocabulary" in error_of(reply)["message"], reply
    assert_serving(tiny_server)


def test_body_not_an_object_and_unknown_routes(tiny_server):
    status, _, reply = raw_request(tiny_server, "POST", "/v1/chat/completions", b"[1, 2]")
    assert status == 400 and error_of(reply)["code"] == "invalid_json"
    status, _, reply = raw_request(tiny_server, "GET", "/v1/nothing")
    assert status == 404 and error_of(reply)["code"] == "not_found"


def test_unknown_model_is_404(tiny_server):
    status, _, reply = raw_request(tiny_server, "POST", "/v1/chat/completions", chat_body(model="gpt-4o"))
    assert status == 404
    e = error_of(reply)
    assert e["code"] == "model_not_found" and e["param"] == "model" and "gpt-4o" in e["message"]


def test_prompt_longer_than_the_context_is_400_also_when_streaming(tiny_model, tiny_home):
    with Server(tiny_model, "--ctx", 64, env=tiny_home) as s:
        for stream in (False, True):
            status, _, reply = raw_request(s, "POST", "/v1/chat/completions", chat_body("x" * 200, stream=stream))
            assert status == 400, reply
            assert "context length" in error_of(reply)["message"]
        assert_serving(s)


def test_post_without_content_length_is_411(tiny_server):
    status, _, reply = raw_request(tiny_server, "POST", "/v1/chat/completions", b"",
                                   headers={"Content-Length": None, "Transfer-Encoding": "chunked"})
    assert status == 411 and error_of(reply)["code"] == "length_required"
    assert_serving(tiny_server)


def test_64_mb_body_is_refused_from_its_headers(tiny_server):
    # Only the headers and 64 KiB of the declared 64 MiB are sent: the 413 must
    # come without waiting for the rest.
    with socket.create_connection((tiny_server.host, tiny_server.port), timeout=10) as s:
        start = time.monotonic()
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 67108864\r\n\r\n" + b"[" * 65536)
        status, headers, reply = read_response(s)
        elapsed = time.monotonic() - start
    assert status == 413 and error_of(reply)["code"] == "request_too_large"
    assert elapsed < 2, elapsed
    assert headers.get("connection") == "close"
    assert_serving(tiny_server)


def test_64_mb_body_sent_whole_gets_413_quickly(tiny_server):
    # A client that pushes the whole body: the answer still comes at once and
    # the server stops reading (it closes the connection, so the upload fails).
    with socket.create_connection((tiny_server.host, tiny_server.port), timeout=10) as s:
        start = time.monotonic()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 67108864\r\n\r\n")
        sent, failed = 0, None
        block = b"x" * (1 << 20)
        try:
            while sent < 64:
                s.sendall(block)
                sent += 1
        except OSError as e:
            failed = e
        elapsed = time.monotonic() - start
    assert failed is not None and sent < 64, f"the server read all {sent} MiB"
    assert elapsed < 5, elapsed
    assert_serving(tiny_server)


def test_stalled_upload_does_not_block_others_and_is_dropped(tiny_server):
    # Declares 1000 bytes and sends 10: other clients are served meanwhile,
    # and the server gives up on it after --timeout (3 s).
    s = socket.create_connection((tiny_server.host, tiny_server.port), timeout=20)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"messages\"")
    start = time.monotonic()
    assert_serving(tiny_server)
    assert time.monotonic() - start < 2
    status, _, reply = read_response(s) if s.recv(1, socket.MSG_PEEK) else (None, None, b"")
    s.close()
    assert time.monotonic() - start < 15
    assert status in (None, 400, 408), (status, reply)


def test_stalled_streaming_reader_does_not_block_others(tiny_server):
    # A client that asks for a stream and never reads it: generation goes into
    # the server's queue for that response, the client's socket fills, and
    # everyone else is served.
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((tiny_server.host, tiny_server.port))
    body = chat_body("tell me everything", stream=True, max_tokens=2000, ignore_eos=True, temperature=0)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + str(len(body)).encode() +
              b"\r\n\r\n" + body)
    time.sleep(0.5)
    start = time.monotonic()
    for _ in range(3):
        assert_serving(tiny_server)
    assert time.monotonic() - start < 5
    s.close()
    assert_serving(tiny_server)


def test_api_key(tiny_model, tiny_home):
    with Server(tiny_model, "--api-key", "sesame", env=tiny_home) as s:
        status, _, reply = raw_request(s, "POST", "/v1/chat/completions", chat_body())
        assert status == 401 and error_of(reply)["code"] == "invalid_api_key"
        status, _, reply = raw_request(s, "POST", "/v1/chat/completions", chat_body(),
                                       headers={"Authorization": "Bearer sesame!"})
        assert status == 401 and "invalid" in error_of(reply)["message"]
        status, _, reply = raw_request(s, "GET", "/v1/models", headers={"Authorization": "Bearer sesam"})
        assert status == 401
        # Refused on the headers: a 64 MB body without the key gets 401, not 413 or a wait.
        status, _, _ = raw_request(s, "POST", "/v1/chat/completions", b"",
                                   headers={"Content-Length": str(64 << 20)})
        assert status == 401
        status, _, reply = raw_request(s, "POST", "/v1/chat/completions", chat_body(max_tokens=2),
                                       headers={"Authorization": "Bearer sesame"})
        assert status == 200, reply
        assert raw_request(s, "GET", "/health")[0] == 200  # health and the page need no key


def test_binds_localhost_by_default(tiny_server):
    assert tiny_server.host == "127.0.0.1"


# SmolLM2 cases: generations long enough to observe cancellation and queueing.

@pytest.fixture(scope="module")
def smollm2_server(pulled_model_path):
    with Server(pulled_model_path("smollm2-135m-instruct"), "--threads", 2) as s:
        yield s


def stream_request(server, body: dict) -> socket.socket:
    data = json.dumps({**body, "stream": True}).encode()
    s = socket.create_connection((server.host, server.port), timeout=60)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + str(len(data)).encode() +
              b"\r\n\r\n" + data)
    return s


def test_client_that_disconnects_cancels_its_generation(smollm2_server):
    # 1500 tokens would take well over 10 s; the client reads a few events and
    # leaves. The next request must not wait for the abandoned one.
    s = stream_request(smollm2_server, {"messages": [{"role": "user", "content": "Count to a thousand."}],
                                        "max_tokens": 1500, "ignore_eos": True, "temperature": 0})
    got = b""
    while got.count(b"data: ") < 4:
        got += s.recv(4096)
    s.close()
    start = time.monotonic()
    status, _, reply = raw_request(smollm2_server, "POST", "/v1/chat/completions", chat_body("Hi", max_tokens=4))
    assert status == 200, reply
    assert json.loads(reply)["timings"]["queue_ms"] < 3000
    assert time.monotonic() - start < 5


def test_full_queue_is_503_and_clears(pulled_model_path):
    with Server(pulled_model_path("smollm2-135m-instruct"), "--threads", 2, "--queue", 1) as s:
        check_full_queue(s)


def check_full_queue(smollm2_server):
    # --queue 1: one request runs, one waits, the third is refused at once.
    long = {"messages": [{"role": "user", "content": "Write a long story."}], "max_tokens": 300,
            "ignore_eos": True, "temperature": 0}
    a = stream_request(smollm2_server, long)
    time.sleep(0.5)
    b = stream_request(smollm2_server, long)
    time.sleep(0.5)
    status, _, reply = raw_request(smollm2_server, "POST", "/v1/chat/completions", chat_body(max_tokens=2))
    assert status == 503, reply
    assert error_of(reply)["code"] == "queue_full"
    assert metric(scrape(smollm2_server), "tessera_requests_refused_total") >= 1
    a.close()
    b.close()
    deadline = time.monotonic() + 30
    while True:
        status, _, reply = raw_request(smollm2_server, "POST", "/v1/chat/completions", chat_body(max_tokens=2))
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status == 200, reply


def test_health_says_loading_until_the_model_is_ready(pulled_model_path):
    # The port answers while the model loads; --reference dequantizes the
    # GGUF to f32 on every start, a load long enough to be seen.
    with Server(pulled_model_path("smollm2-135m-instruct"), "--reference", "--threads", 2, wait_ready=False) as s:
        status, _, body = raw_request(s, "GET", "/health")
        assert status == 503 and json.loads(body)["status"] == "loading", body
        status, _, reply = raw_request(s, "POST", "/v1/chat/completions", chat_body(max_tokens=2))
        assert status == 503 and error_of(reply)["code"] == "model_loading", reply
        assert metric(scrape(s), "tessera_ready") == 0
        s.wait_ready()
        status, _, body = raw_request(s, "GET", "/health")
        assert status == 200 and json.loads(body)["status"] == "ok", body
        status, _, reply = raw_request(s, "POST", "/v1/chat/completions", chat_body(max_tokens=2))
        assert status == 200, reply
        m = scrape(s)
        assert metric(m, "tessera_ready") == 1
        assert metric(m, "tessera_requests_submitted_total") == 1  # the refused one never reached the engine
        assert metric(m, "tessera_generation_tokens_total") == json.loads(reply)["usage"]["completion_tokens"]


def test_a_model_that_fails_to_load_ends_the_server(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    proc = subprocess.run([tessera_bin(), "serve", str(bad), "--port", "0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "answers 503 until it is ready" in proc.stdout and "listening on" not in proc.stdout
    assert "bad.gguf" in proc.stderr, proc.stderr


def queued(server) -> int:
    return json.loads(urllib.request.urlopen(server.url + "/health", timeout=10).read())["queued"]


def test_client_that_leaves_while_queued_frees_its_place(pulled_model_path):
    # One slot, --queue 1: A runs a long generation, B waits in the queue and
    # leaves before it starts. B's place is free at once (not when A ends):
    # C is queued, not refused, and runs once A has gone.
    with Server(pulled_model_path("smollm2-135m-instruct"), "--threads", 2, "--queue", 1) as s:
        long = {"messages": [{"role": "user", "content": "Count to a thousand."}], "max_tokens": 1500,
                "ignore_eos": True, "temperature": 0}
        a = stream_request(s, long)
        got = b""
        while got.count(b"data: ") < 2:
            got += a.recv(4096)
        b = stream_request(s, long)
        deadline = time.monotonic() + 10
        while queued(s) != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert queued(s) == 1
        b.close()
        deadline = time.monotonic() + 5
        while queued(s) != 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert queued(s) == 0  # gone while A still generates (1500 tokens take far longer)
        c = stream_request(s, {**long, "max_tokens": 2})
        time.sleep(0.3)
        assert queued(s) == 1  # queued, not refused
        a.close()
        reply = b""
        while b"[DONE]" not in reply:
            chunk = c.recv(4096)
            assert chunk, reply
            reply += chunk
        c.close()
        assert reply.startswith(b"HTTP/1.1 200"), reply[:200]


class Disturbance:
    """While active: a client that declares a 64 MB body and keeps pushing it
    (refused from its headers; it starts over once a second), and a streaming
    client that never reads its response."""

    def __init__(self, server):
        self.server = server

    def __enter__(self):
        self.stop = threading.Event()
        self.uploader = threading.Thread(target=self.upload, daemon=True)
        self.uploader.start()
        self.stalled = socket.socket()
        self.stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.stalled.connect((self.server.host, self.server.port))
        body = chat_body("Go on and on.", stream=True, max_tokens=64, ignore_eos=True)
        self.stalled.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                             str(len(body)).encode() + b"\r\n\r\n" + body)
        return self

    def upload(self):
        while not self.stop.is_set():
            try:
                with socket.create_connection((self.server.host, self.server.port), timeout=5) as u:
                    u.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 67108864\r\n\r\n")
                    for _ in range(64):
                        u.sendall(b"x" * (1 << 20))
            except OSError:
                pass
            self.stop.wait(1.0)

    def __exit__(self, *exc):
        self.stop.set()
        self.stalled.close()
        self.uploader.join(timeout=10)


def test_decode_rate_undisturbed_by_a_huge_upload_and_a_stalled_client(smollm2_server):
    def rate():
        body = chat_body("Describe the sea.", max_tokens=48, ignore_eos=True, temperature=0)
        status, _, reply = raw_request(smollm2_server, "POST", "/v1/chat/completions", body, timeout=120)
        assert status == 200, reply
        return json.loads(reply)["timings"]["decode_tok_s"]

    # Quiet and disturbed runs interleaved, so that the load of a shared host
    # drifting over the test shifts both alike; the median ratio is compared.
    ratios = []
    for _ in range(7):
        quiet = rate()
        with Disturbance(smollm2_server):
            busy = rate()
        ratios.append(busy / quiet)
        print(f"decode tok/s: undisturbed {quiet:.1f}, with a 64 MB upload and a stalled client {busy:.1f}")
    # The bar: within 10%. Single pairs on a shared 2-core host move
    # by more than that either way (0.87-1.03 measured on a quiet one), so
    # the median of seven interleaved pairs is held to it.
    ratio = sorted(ratios)[3]
    assert ratio >= 0.90, ratios


def test_health_and_models_answer_while_a_generation_runs(smollm2_server):
    s = stream_request(smollm2_server, {"messages": [{"role": "user", "content": "Tell a long story."}],
                                        "max_tokens": 400, "ignore_eos": True, "temperature": 0})
    try:
        got = b""
        while got.count(b"data: ") < 2:
            got += s.recv(4096)
        for path in ("/health", "/v1/models", "/"):
            start = time.monotonic()
            status, _, _ = raw_request(smollm2_server, "GET", path)
            assert status == 200 and time.monotonic() - start < 1.0, path
    finally:
        s.close()


def test_non_streaming_client_that_disconnects_cancels_its_generation(smollm2_server):
    # The server writes a space a second into a non-streamed response while it
    # generates; once the client is gone that write fails and the generation
    # stops, so the next request does not wait for 1500 tokens.
    body = chat_body("Count to a thousand.", max_tokens=1500, ignore_eos=True, temperature=0)
    s = socket.create_connection((smollm2_server.host, smollm2_server.port), timeout=60)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + str(len(body)).encode() +
              b"\r\n\r\n" + body)
    head = s.recv(4096)
    assert head.startswith(b"HTTP/1.1 200"), head
    s.close()
    start = time.monotonic()
    status, _, reply = raw_request(smollm2_server, "POST", "/v1/chat/completions", chat_body("Hi", max_tokens=4))
    assert status == 200, reply
    assert time.monotonic() - start < 6
    assert json.loads(reply)["timings"]["queue_ms"] < 4000


def test_non_streaming_response_is_json_after_heartbeat_spaces(smollm2_server):
    status, headers, reply = raw_request(
        smollm2_server, "POST", "/v1/chat/completions",
        chat_body("Describe a forest.", max_tokens=160, ignore_eos=True, temperature=0), timeout=120)
    assert status == 200 and headers["content-type"] == "application/json"
    parsed = json.loads(reply)  # leading spaces are valid JSON
    assert parsed["usage"]["completion_tokens"] == 160


def test_sigterm_during_a_generation_stops_the_server_promptly(pulled_model_path):
    server = Server(pulled_model_path("smollm2-135m-instruct"), "--threads", 2)
    try:
        s = stream_request(server, {"messages": [{"role": "user", "content": "Count to a thousand."}],
                                    "max_tokens": 1500, "ignore_eos": True, "temperature": 0})
        got = b""
        while got.count(b"data: ") < 2:
            got += s.recv(4096)
        start = time.monotonic()
        assert server.stop() == 0, "".join(server.stderr_lines)
        assert time.monotonic() - start < 5  # not the 1500 tokens
        s.close()
    finally:
        server.stop()
    assert any("stopped" in line for line in server.stderr_lines)


def test_sigterm_while_loading_exits(tmp_path):
    model = make_tiny_chat_model(tmp_path / "m")
    proc = subprocess.Popen([tessera_bin(), "serve", str(model), "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "TESSERA_HOME": str(tmp_path / "home")})
    time.sleep(0.3)  # converting the checkpoint
    proc.terminate()
    proc.communicate(timeout=30)
    assert proc.returncode in (-signal.SIGTERM, 128 + signal.SIGTERM, 0)
