"""The Python API in a few lines: load a model, stream a chat reply, ask a
follow-up that reuses the first turn's KV, cancel a stream. Usage:
python examples/python_example.py MODEL (a bundle, GGUF, HF directory or
pulled name). Exits non-zero if anything is not as promised, so that CI runs
it as a test (tests/python/test_engine_python.py)."""

import sys

import tessera


def main(model: str) -> int:
    engine = tessera.Engine(model, threads=2)
    messages = [{"role": "system", "content": "You are brief."}, {"role": "user", "content": "Name a colour."}]
    stream = engine.stream(messages=messages, max_tokens=16)
    for piece in stream:
        print(piece, end="", flush=True)
    first = stream.result
    print(f"\n[{first.finish_reason}, {first.prompt_tokens} prompt tokens, {first.decode_tok_s:.1f} tok/s]")

    # Turn two: the conversation so far plus a new question; its prompt starts
    # with turn one's, whose KV the engine kept.
    messages += [{"role": "assistant", "content": first.text}, {"role": "user", "content": "And another?"}]
    second = engine.generate(messages=messages, max_tokens=16)
    print(f"{second.text}\n[reused {second.reused_tokens} of {second.prompt_tokens} prompt tokens "
          f"from the {second.reused_from or 'nothing'}]")
    if second.reused_tokens < first.prompt_tokens:
        print("expected turn two to reuse turn one's prompt", file=sys.stderr)
        return 1

    # Cancelling: stop after the first piece. The generation runs on the
    # engine's thread meanwhile, so it is given far more tokens than it can
    # make before cancel() lands, even on a tiny model on a busy host.
    stream = engine.stream("Once upon a time", max_tokens=1000, ignore_eos=True)
    next(stream)
    stream.cancel()
    list(stream)
    if stream.result.finish_reason != "cancelled":
        print(f"expected a cancelled generation, got {stream.result.finish_reason}", file=sys.stderr)
        return 1

    # Bad input is a TesseraError naming the setting.
    try:
        engine.generate("x", max_tokens=0)
    except tessera.TesseraError as e:
        print(f"refused as expected: {e}")
    else:
        print("max_tokens 0 was accepted", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} MODEL", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
