"""How long a running stream pauses while another request's long prompt is
prefilled (the engine interleaves that prefill in chunks between the
stream's decode steps, src/engine/engine.h).

A streams --tokens tokens; once it has produced 20, B arrives with a
~1,100-token prompt. Prints B's TTFT and A's longest and median gap
between two tokens, for --repeats runs.

    PYTHONPATH=python:build/python .venv/bin/python bench/prefill_stall.py --model smollm2-135m-instruct
"""

import argparse
import threading
import time

import tessera

PARAGRAPH = "The river town kept its records in a stone house by the bridge. "


def once(engine, tokens):
    times = []

    def stream_a():
        for _ in engine.stream("Tell me a long story.", max_tokens=tokens, ignore_eos=True):
            times.append(time.perf_counter())

    a = threading.Thread(target=stream_a)
    a.start()
    while len(times) < 20:
        time.sleep(0.01)
    b = engine.generate(PARAGRAPH * 80 + "\nSummarise.", max_tokens=4)
    a.join()
    gaps = sorted(y - x for x, y in zip(times, times[1:]))
    return b.prompt_tokens, b.ttft_ms, gaps[-1] * 1000, gaps[len(gaps) // 2] * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    engine = tessera.Engine(args.model, threads=args.threads, slots=2)
    for _ in range(args.repeats):
        engine.reset()
        n, ttft, longest, median = once(engine, args.tokens)
        print(f"B: {n} prompt tokens, TTFT {ttft:.0f} ms | A: longest gap {longest:.0f} ms, median {median:.1f} ms")


if __name__ == "__main__":
    main()
