"""Throughput of `tessera serve` under concurrent greedy streams.

Starts the server (--parallel 8), then measures one stream alone and
--streams concurrent streams (openai client, temperature 0, ignore_eos,
--tokens each): aggregate tok/s from first byte to last, the ratio to one
stream, and whether every concurrent stream equals its single-request
output. Also one stream on a --parallel 1 server, for the 8-slot overhead.
The engine batches the running requests' decode steps (continuous
batching, Session::decode_batch); results: docs/BENCHMARKING.md.

    PYTHONPATH=tests/python .venv/bin/python bench/serve_concurrency.py --model smollm2-135m-instruct --threads 2
"""

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
from serve_helpers import Server  # noqa: E402

import openai  # noqa: E402

PROMPTS = ["Tell me about rivers.", "Tell me about mountains.", "Tell me about forests.", "Tell me about deserts.",
           "Tell me about oceans.", "Tell me about islands.", "Tell me about lakes.", "Tell me about valleys."]


def stream(server, prompt, tokens, out, i):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=600)
    text, decode_rate = [], None
    for chunk in client.chat.completions.create(model=server.model_name, messages=[{"role": "user", "content": prompt}],
                                                max_tokens=tokens, temperature=0, stream=True,
                                                extra_body={"ignore_eos": True}):
        if chunk.choices and chunk.choices[0].delta.content:
            text.append(chunk.choices[0].delta.content)
        if (chunk.model_extra or {}).get("timings"):
            decode_rate = chunk.model_extra["timings"]["decode_tok_s"]
    out[i] = ("".join(text), time.monotonic(), decode_rate)


def run(server, prompts, tokens):
    out = [None] * len(prompts)
    start = time.monotonic()
    threads = [threading.Thread(target=stream, args=(server, p, tokens, out, i)) for i, p in enumerate(prompts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    end = max(o[1] for o in out)
    return [o[0] for o in out], len(prompts) * tokens / (end - start), [o[2] for o in out]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--json")
    args = ap.parse_args()
    prompts = (PROMPTS * (args.streams // len(PROMPTS) + 1))[:args.streams]
    with Server(args.model, "--threads", args.threads, "--parallel", 1) as one_slot:
        one_slot_decode = run(one_slot, prompts[:1], args.tokens)[2][0]
    with Server(args.model, "--threads", args.threads, "--parallel", args.streams) as server:
        singles = [run(server, [p], args.tokens)[0][0] for p in prompts]
        single_decode = run(server, prompts[:1], args.tokens)[2][0]
        texts, aggregate, _ = run(server, prompts, args.tokens)
    # The issue's yardstick: the streams' tokens over the wall time from the
    # first request to the last token, against one stream's decode rate.
    result = {"one_stream_decode_tok_s_one_slot": round(one_slot_decode, 1),
              "one_stream_decode_tok_s": round(single_decode, 1),
              f"{args.streams}_streams_aggregate_tok_s": round(aggregate, 1),
              "ratio": round(aggregate / single_decode, 2), "identical_to_single": texts == singles,
              "load_average": os.getloadavg()}
    print(json.dumps(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
