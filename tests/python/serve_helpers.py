"""Starting `tessera serve` for the server tests: a subprocess on a free port
(--port 0; the port is read from the line it prints once it listens), the
tiny random chat model the build makes (tessera_tiny_chat_model), raw HTTP
helpers and the server's resident memory."""

import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

from conftest import tessera_bin


def tiny_chat_model_tool() -> Path:
    return Path(tessera_bin()).parent / "tessera_tiny_chat_model"


def make_tiny_chat_model(directory: Path, seed: int = 1, sliding_window: int = 0) -> Path:
    """Writes the tiny random chat model (byte-level tokenizer, ChatML
    template; Gemma 3 with that window when sliding_window > 0)."""
    subprocess.run([str(tiny_chat_model_tool()), str(directory), str(seed), str(sliding_window)], check=True)
    return directory


class Server:
    """`tessera serve MODEL --port 0 ARGS...`; stop() ends it (SIGTERM) and
    returns its exit code."""

    def __init__(self, model, *args, env=None, start_timeout=300, wait_ready=True):
        self.proc = subprocess.Popen([tessera_bin(), "serve", str(model), "--port", "0", *map(str, args)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                                     env={**os.environ, **(env or {})})
        self.stderr_lines = []
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        deadline = time.time() + start_timeout
        self.deadline = time.time() + start_timeout
        # The port answers from the "loading" line on (GET /health: 503
        # "loading"); requests are served from the "listening" line on.
        line = self._read_until(" answers 503 until it is ready")
        self.url = line.split("GET /health on ", 1)[1].split(" ", 1)[0]
        self.host, port = self.url.removeprefix("http://").split(":")
        self.port = int(port)
        if wait_ready:
            self.wait_ready()

    def wait_ready(self):
        """Waits for the "listening" line: the model is loaded."""
        line = self._read_until("listening on http://")
        self.model_name = line.split("tessera serve: ", 1)[1].split(" listening", 1)[0]

    def _read_until(self, marker):
        line = ""
        while time.time() < self.deadline:
            line = self.proc.stdout.readline()
            if not line or marker in line:
                break
        if marker not in line:
            self.proc.kill()
            raise AssertionError(f"tessera serve did not start:\n{''.join(self.stderr_lines)}")
        return line

    def _drain_stderr(self):
        for line in self.proc.stderr:
            self.stderr_lines.append(line)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def raw_request(server: Server, method: str, path: str, body: bytes = b"", headers: dict = None,
                timeout: float = 30) -> tuple:
    """One HTTP/1.1 request on a fresh socket: (status, headers dict, body bytes)."""
    head = {"Host": f"{server.host}:{server.port}", "Content-Type": "application/json"}
    if method == "POST":
        head["Content-Length"] = str(len(body))
    head.update(headers or {})
    head = {k: v for k, v in head.items() if v is not None}
    data = f"{method} {path} HTTP/1.1\r\n".encode() + "".join(f"{k}: {v}\r\n" for k, v in head.items()).encode() + \
        b"\r\n" + body
    with socket.create_connection((server.host, server.port), timeout=timeout) as s:
        s.sendall(data)
        return read_response(s)


def read_response(s: socket.socket) -> tuple:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed before a response: {buf!r}")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
    if "content-length" in headers:
        n = int(headers["content-length"])
        while len(rest) < n:
            chunk = s.recv(65536)
            if not chunk:
                break
            rest += chunk
    elif headers.get("transfer-encoding") == "chunked":
        while not rest.endswith(b"0\r\n\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            rest += chunk
        rest = dechunk(rest)
    return status, headers, rest


def dechunk(data: bytes) -> bytes:
    """The body of a chunked transfer encoding."""
    out = b""
    while True:
        size_line, data = data.split(b"\r\n", 1)
        size = int(size_line, 16)
        if size == 0:
            return out
        out += data[:size]
        data = data[size + 2:]


def error_of(body: bytes) -> dict:
    """The OpenAI-shaped error object of a response body (asserting the shape)."""
    e = json.loads(body)["error"]
    assert set(e) == {"message", "type", "param", "code"}, e
    assert isinstance(e["message"], str) and e["message"], e
    return e


def chat_body(content="hi", **fields) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": content}], **fields}).encode()


def scrape(server: Server) -> dict:
    """GET /metrics, read by the Prometheus project's own parser
    (prometheus_client): {(sample name, sorted label pairs): value}."""
    from prometheus_client.parser import text_string_to_metric_families
    status, headers, body = raw_request(server, "GET", "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain"), (status, headers)
    samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def metric(samples: dict, name: str, **labels) -> float:
    return samples[(name, tuple(sorted(labels.items())))]
