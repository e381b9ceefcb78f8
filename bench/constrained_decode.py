"""What a JSON Schema constraint costs a decode step: `tessera serve` and
llama.cpp's `llama-server` on the same GGUF, in one run, each asked the same
chat question with and without a 10-field response_format json_schema
(greedy, interleaved reps; each plain reply as long as the constrained
one before it). The cost is 1 - constrained / plain decode
tok/s, from each server's own timings (tessera: timings.decode_tok_s;
llama-server: timings.predicted_per_second).

    TESSERA_BIN=build/tessera .venv/bin/python bench/constrained_decode.py smollm2-135m-instruct gemma3-270m \\
        --llama-server /tmp/peer/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin/llama-server
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_vs_llamacpp import Server  # noqa: E402

SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string"}, "age": {"type": "integer"}, "city": {"type": "string"},
    "country": {"type": "string"}, "email": {"type": "string"}, "phone": {"type": "string"},
    "occupation": {"type": "string"}, "married": {"type": "boolean"}, "children": {"type": "integer"},
    "hobbies": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
    "required": ["name", "age", "city", "country", "email", "phone", "occupation", "married", "children",
                 "hobbies"]}
MESSAGES = [{"role": "system", "content": "Reply with JSON that follows this schema: " + json.dumps(SCHEMA)},
            {"role": "user", "content": "Describe a fictional person."}]


def decode_rate(server, constrained, max_tokens):
    body = {"messages": MESSAGES, "max_tokens": max_tokens, "temperature": 0}
    if constrained:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA}}
    r = server.post("/v1/chat/completions", body)
    t = r.get("timings", {})
    rate = t.get("decode_tok_s") if server.kind == "tessera" else t.get("predicted_per_second")
    if constrained:
        json.loads(r["choices"][0]["message"]["content"])  # the reply must be JSON
    return rate, r["usage"]["completion_tokens"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--llama-server", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=160)
    args = ap.parse_args()
    rows = []
    for model in args.models:
        for kind in ("tessera", "llama.cpp"):
            with Server(kind, model, args.threads, 1, 2048, args.llama_server) as server:
                decode_rate(server, False, 16)  # warm-up
                rates = {False: [], True: []}
                tokens = {False: [], True: []}
                for _ in range(args.reps):
                    # The plain reply as long as the constrained one was, so
                    # that both decode over the same context lengths.
                    rate, n = decode_rate(server, True, args.max_tokens)
                    rates[True].append(rate)
                    tokens[True].append(n)
                    rate, n = decode_rate(server, False, n)
                    rates[False].append(rate)
                    tokens[False].append(n)
            plain, constrained = statistics.median(rates[False]), statistics.median(rates[True])
            rows.append((model, kind, plain, constrained, 1 - constrained / plain,
                         statistics.median(tokens[False]), statistics.median(tokens[True])))
            print(f"{model:24} {kind:9} plain {plain:7.1f} tok/s  json_schema {constrained:7.1f} tok/s  "
                  f"cost {100 * (1 - constrained / plain):5.1f}%  (tokens {rows[-1][5]:.0f} / {rows[-1][6]:.0f})",
                  flush=True)
    print("\n| model | server | plain decode tok/s | json_schema decode tok/s | cost |")
    print("|---|---|---|---|---|")
    for model, kind, plain, constrained, cost, _, _ in rows:
        print(f"| {model} | {kind} | {plain:.1f} | {constrained:.1f} | {100 * cost:.1f}% |")


if __name__ == "__main__":
    main()
