"""Multi-turn and shared-prefix time to first token with tessera.Engine.

For each model: turn 1 of a chat whose user message makes a ~1,000-token
prompt (cold), then turn 2 (turn 1 + its reply + a short question) on the
same engine (the slot's KV reused) and on a fresh state (engine.reset():
everything prefilled); and a ~500-token system prompt shared by two
conversations with an unrelated request in between, the second served from
the prefix cache, against the same request cold. Medians of --repeats runs.

    PYTHONPATH=python:build/python .venv/bin/python bench/multiturn_reuse.py \\
        --models smollm2-135m-instruct gemma3-270m --threads 2 [--json out.json]
"""

import argparse
import json
import statistics

import tessera

PARAGRAPH = ("The river town kept its records in a stone house by the bridge. Each spring the clerks counted the "
             "boats, the bales of wool and the barrels of salt that passed under the arches, and each autumn they "
             "wrote the totals into a ledger bound in green leather. ")


def text_of_tokens(engine, target):
    """About `target` tokens of text: whole paragraphs, counted by the model's tokenizer."""
    per_paragraph = engine.generate(PARAGRAPH * 8, max_tokens=1).prompt_tokens / 8
    return PARAGRAPH * max(1, round(target / per_paragraph))


def measure(model, threads, repeats):
    engine = tessera.Engine(model, threads=threads)
    long_text = text_of_tokens(engine, 1000)
    system_text = text_of_tokens(engine, 500)
    rows = {"turn1_cold": [], "turn2_reused": [], "turn2_cold": [], "system_cached": [], "system_cold": []}
    info = {}
    for _ in range(repeats):
        engine.reset()
        turn1 = [{"role": "user", "content": long_text + "\nWhat did the clerks count?"}]
        r1 = engine.generate(messages=turn1, max_tokens=16)
        turn2 = turn1 + [{"role": "assistant", "content": r1.text}, {"role": "user", "content": "And in autumn?"}]
        r2 = engine.generate(messages=turn2, max_tokens=16)
        engine.reset()
        r2_cold = engine.generate(messages=turn2, max_tokens=16)
        assert r2.ids == r2_cold.ids, "reuse changed the output"
        rows["turn1_cold"].append(r1.ttft_ms)
        rows["turn2_reused"].append(r2.ttft_ms)
        rows["turn2_cold"].append(r2_cold.ttft_ms)
        info.update(turn1_prompt=r1.prompt_tokens, turn2_prompt=r2.prompt_tokens, turn2_reused=r2.reused_tokens,
                    turn2_prefilled=r2.prompt_tokens - r2.reused_tokens, turn2_note=r2.reuse_note)

        engine.reset()
        system = {"role": "system", "content": system_text}
        engine.generate(messages=[system, {"role": "user", "content": "Who kept the records?"}], max_tokens=8)
        engine.generate("An unrelated request takes the slot.", max_tokens=8)
        cached = engine.generate(messages=[system, {"role": "user", "content": "Where was the stone house?"}],
                                 max_tokens=8)
        engine.reset()
        cold = engine.generate(messages=[system, {"role": "user", "content": "Where was the stone house?"}],
                               max_tokens=8)
        assert cached.ids == cold.ids, "the prefix cache changed the output"
        rows["system_cached"].append(cached.ttft_ms)
        rows["system_cold"].append(cold.ttft_ms)
        info.update(system_prompt=cached.prompt_tokens, system_reused=cached.reused_tokens,
                    system_reused_from=cached.reused_from)
    med = {k: statistics.median(v) for k, v in rows.items()}
    return {**info, **{f"{k}_ttft_ms": round(v, 1) for k, v in med.items()},
            "turn2_ratio": round(med["turn2_reused"] / med["turn2_cold"], 4),
            "system_ratio": round(med["system_cached"] / med["system_cold"], 4)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["smollm2-135m-instruct", "gemma3-270m"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    results = {}
    for m in args.models:
        results[m] = r = measure(m, args.threads, args.repeats)
        print(f"{m}: turn 1 {r['turn1_prompt']} tok cold {r['turn1_cold_ttft_ms']:.0f} ms | turn 2 "
              f"{r['turn2_prompt']} tok: reused {r['turn2_reused']} (prefilled {r['turn2_prefilled']}) "
              f"{r['turn2_reused_ttft_ms']:.0f} ms vs cold {r['turn2_cold_ttft_ms']:.0f} ms = "
              f"{100 * r['turn2_ratio']:.1f}% | system prompt {r['system_prompt']} tok, {r['system_reused']} from "
              f"{r['system_reused_from'] or 'nothing'}: {r['system_cached_ttft_ms']:.0f} ms vs cold "
              f"{r['system_cold_ttft_ms']:.0f} ms = {100 * r['system_ratio']:.1f}%")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
