"""`tessera serve` and llama.cpp's `llama-server` side by side, in one run.

Both servers are driven the same way, over HTTP, alternating A B A B
(../shared/PEER.md says how the peer is built and how the issue's figures
were taken):

  throughput   --parallel 8: one greedy /v1/completions request (max_tokens
               128, ignore_eos), then 8 at once; completion tokens over wall
               time. tessera also runs one stream on a --parallel 1 server
               (the 8-slot overhead) and checks that every concurrent output
               equals its single-request output.
  multi-turn   --parallel 1: a chat turn with a ~1,100-token history, then the
               same messages + the reply + a short question. Time to the first
               streamed token (client-side, what a user waits) and prompt
               tokens each server processed (tessera: timings.prefill_tokens;
               llama.cpp: timings.prompt_n).
  system       --parallel 1: conversation A with a ~500-token system prompt,
               an unrelated request, then conversation B with the same system
               prompt; B's time to first token against B on a fresh server.

    PYTHONPATH=python:build/python .venv/bin/python bench/serve_vs_llamacpp.py \\
        --llama-server /tmp/peer/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin/llama-server \\
        --models smollm2-135m-instruct gemma3-270m [--json out.json]
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = ["Tell me about rivers.", "Tell me about mountains.", "Tell me about forests.", "Tell me about deserts.",
           "Tell me about oceans.", "Tell me about islands.", "Tell me about lakes.", "Tell me about valleys."]
PARAGRAPH = ("The river town kept its records in a stone house by the bridge. Each spring the clerks counted the "
             "boats, the bales of wool and the barrels of salt that passed under the arches, and each autumn they "
             "wrote the totals into a ledger bound in green leather. ")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gguf_of(model: str) -> str:
    """The GGUF file of a pulled model name (or the path given)."""
    if model.endswith(".gguf"):
        return model
    home = Path(os.environ.get("TESSERA_HOME", Path.home() / ".cache" / "tessera"))
    found = sorted((home / "models" / model).glob("*.gguf"))
    if not found:
        sys.exit(f"no GGUF for {model} under {home}/models (run `tessera pull {model}`)")
    return str(found[0])


class Server:
    def __init__(self, kind, model, threads, parallel, ctx, llama_server):
        self.kind, self.port = kind, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        if kind == "tessera":
            cmd = [os.environ.get("TESSERA_BIN", str(ROOT / "build" / "tessera")), "serve", model, "--port",
                   str(self.port), "--threads", str(threads), "--parallel", str(parallel), "--ctx", str(ctx)]
        else:  # llama-server's -c is the total, shared by its slots (PEER.md's commands)
            cmd = [llama_server, "-m", gguf_of(model), "-t", str(threads), "--parallel", str(parallel), "-c",
                   str(ctx), "--host", "127.0.0.1", "--port", str(self.port)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 600
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(self.url + "/health", timeout=5).status == 200:
                    return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"{cmd} exited with {self.proc.returncode}")
            time.sleep(0.2)
        raise RuntimeError(f"{cmd} did not become healthy")

    def post(self, path, body, timeout=900):
        req = urllib.request.Request(self.url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        return json.loads(urllib.request.urlopen(req, timeout=timeout).read())

    def first_token_ms(self, messages, max_tokens=8):
        """Streams a greedy chat request; (ms to the first content, the final timings)."""
        body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream": True}
        if self.kind == "llama.cpp":
            body["cache_prompt"] = True  # its default; stated so the comparison is with it on
        req = urllib.request.Request(self.url + "/v1/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        start, first, timings = time.monotonic(), None, {}
        with urllib.request.urlopen(req, timeout=900) as r:
            for line in r:
                if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
                    continue
                event = json.loads(line[6:])
                if first is None and any(c.get("delta", {}).get("content") for c in event.get("choices", [])):
                    first = (time.monotonic() - start) * 1000
                timings = event.get("timings") or timings
        return first, timings

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def completions(server, prompts, tokens):
    """The prompts at once; (texts, completion tokens / wall seconds)."""
    out = [None] * len(prompts)

    def one(i):
        r = server.post("/v1/completions", {"prompt": prompts[i], "max_tokens": tokens, "temperature": 0,
                                            "ignore_eos": True})
        out[i] = (r["choices"][0]["text"], r["usage"]["completion_tokens"])

    start = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [o[0] for o in out], sum(o[1] for o in out) / (time.monotonic() - start)


def prefilled(kind, timings):
    return timings.get("prefill_tokens") if kind == "tessera" else timings.get("prompt_n")


def measure_throughput(kind, args, model, streams):
    with Server(kind, model, args.threads, streams, 2048, args.llama_server) as s:
        completions(s, PROMPTS[:1], 8)  # warm-up
        singles = [completions(s, [p], args.tokens)[0][0] for p in PROMPTS[:streams]] if kind == "tessera" else None
        _, one = completions(s, PROMPTS[:1], args.tokens)
        texts, many = completions(s, PROMPTS[:streams], args.tokens)
    row = {"one_stream_tok_s": one, f"{streams}_streams_tok_s": many, "ratio": many / one}
    if singles is not None:
        row["identical_to_single"] = texts == singles
        with Server(kind, model, args.threads, 1, 2048, args.llama_server) as s1:
            completions(s1, PROMPTS[:1], 8)
            row["one_stream_tok_s_one_slot"] = completions(s1, PROMPTS[:1], args.tokens)[1]
    return row


def measure_turns(kind, args, model):
    history = PARAGRAPH * 19  # about 1,100 tokens with either tokenizer
    turn1 = [{"role": "user", "content": history + "\nWhat did the clerks count?"}]
    system = {"role": "system", "content": PARAGRAPH * 9}  # about 500 tokens
    b = [system, {"role": "user", "content": "Where was the stone house?"}]
    row = {}
    with Server(kind, model, args.threads, 1, 4096, args.llama_server) as s:
        s.first_token_ms([{"role": "user", "content": "Hello."}])  # warm-up
        ms1, t1 = s.first_token_ms(turn1, max_tokens=16)
        reply = s.post("/v1/chat/completions", {"messages": turn1, "max_tokens": 16, "temperature": 0})
        turn2 = turn1 + [{"role": "assistant", "content": reply["choices"][0]["message"]["content"]},
                         {"role": "user", "content": "And in autumn?"}]
        ms2, t2 = s.first_token_ms(turn2)
        row.update(turn1_ttft_ms=ms1, turn1_prefilled=prefilled(kind, t1), turn2_ttft_ms=ms2,
                   turn2_prefilled=prefilled(kind, t2), turn2_pct_of_cold=100 * ms2 / ms1)
        s.first_token_ms([system, {"role": "user", "content": "Who kept the records?"}])
        s.post("/v1/completions", {"prompt": "An unrelated request takes the slot.", "max_tokens": 8})
        ms_b, t_b = s.first_token_ms(b)
    with Server(kind, model, args.threads, 1, 4096, args.llama_server) as s:
        s.first_token_ms([{"role": "user", "content": "Hello."}])
        ms_cold, t_cold = s.first_token_ms(b)
    row.update(system_cached_ttft_ms=ms_b, system_cached_prefilled=prefilled(kind, t_b), system_cold_ttft_ms=ms_cold,
               system_cold_prefilled=prefilled(kind, t_cold), system_pct_of_cold=100 * ms_b / ms_cold)
    return row


def medians(rows):
    out = {}
    for key in rows[0]:
        values = [r[key] for r in rows]
        if isinstance(values[0], bool):
            out[key] = all(values)
        elif isinstance(values[0], (int, float)) and values[0] is not None:
            out[key] = round(statistics.median(values), 2)
            out[key + "_range"] = [round(min(values), 2), round(max(values), 2)]
        else:
            out[key] = values
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-server", required=True)
    ap.add_argument("--models", nargs="+", default=["smollm2-135m-instruct", "gemma3-270m"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=["throughput", "turns"], help="run one part")
    ap.add_argument("--json")
    args = ap.parse_args()
    result = {"load_average_start": os.getloadavg()}
    for model in args.models:
        for part, fn in (("throughput", lambda k: measure_throughput(k, args, model, args.streams)),
                         ("turns", lambda k: measure_turns(k, args, model))):
            if args.only and part != args.only:
                continue
            rows = {"tessera": [], "llama.cpp": []}
            for _ in range(args.repeats):
                for kind in rows:  # A B A B ...
                    rows[kind].append(fn(kind))
            result[f"{model} {part}"] = {kind: medians(r) for kind, r in rows.items()}
            print(json.dumps({f"{model} {part}": result[f"{model} {part}"]}), flush=True)
    result["load_average_end"] = os.getloadavg()
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
