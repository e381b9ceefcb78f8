"""Speculative decoding (generation/speculative.h): greedy output identical to
plain greedy decoding, token for token, and sampled output distributed as
plain sampling's.

- Verify calls compute every row with decode numerics
  (Session.forward(..., as_decode=True)): each row's logits equal, bit for
  bit, those of running the tokens one at a time — on lut4 bundles, whose
  calls of 4 or more tokens otherwise take the int16 GEMM (other bits).
- Greedy speculative generation ("lookup": every proposal verified, so many
  rollbacks; "auto": under adaptive control) gives the ids of plain
  generation on tiny random models of every architecture — Gemma 3's with a
  sliding window of 8 (5 for gemma3_softcap), so 96 generated tokens wrap
  its rings a dozen times with rollbacks — with and without a repetition
  penalty, and on the real SmolLM2-135M / Gemma 3 270M over the oracle
  corpus and 20 longer prompts.
- Speculative sampling: the joint distribution of the first two sampled
  tokens, computed exactly from the model's logits, against 3,000 seeded
  speculative generations (chi-square goodness of fit)."""

import json
import math
import random

import numpy as np
import pytest

import tessera
from conftest import run_tessera
from tiny_models import ARCHITECTURES, VOCAB, make_tiny_model


@pytest.fixture(scope="module", params=ARCHITECTURES)
def tiny_bundle(request, tmp_path_factory):
    """A tiny random model of each architecture as a lut4 bundle (the HF
    default), whose long calls run the int16 GEMM at avx2 / avx512."""
    directory = tmp_path_factory.mktemp(request.param)
    make_tiny_model(request.param, directory)
    out = tmp_path_factory.mktemp(request.param + "-bundle") / "b"
    run_tessera("convert", directory, "-o", out, "-t", "2")
    return request.param, tessera.Model(str(out), threads=2)


def prompts_of_ids():
    rng = random.Random(3)
    random_ids = [rng.randrange(VOCAB) for _ in range(40)]
    phrase = [rng.randrange(VOCAB) for _ in range(12)]
    return {
        "random": random_ids,
        "repeated phrase": phrase * 4 + phrase[:5],  # lookup drafts from the first token
        "short": random_ids[:3],
    }


def test_verify_rows_have_the_bits_of_decode_steps(tiny_bundle):
    name, model = tiny_bundle
    seq = prompts_of_ids()["random"]
    one_by_one = tessera.Session(model)
    one_by_one.forward(seq[:20], all_logits=False)
    expected = np.concatenate([one_by_one.forward([t], all_logits=True) for t in seq[20:29]])
    batched = tessera.Session(model)
    batched.forward(seq[:20], all_logits=False)
    got = batched.forward(seq[20:29], all_logits=True, as_decode=True)
    assert np.array_equal(got, expected), f"{name}: verify rows differ from decode steps"
    # A greedy verify call: only the programs' argmax, no logits copied.
    again = tessera.Session(model)
    again.forward(seq[:20], all_logits=False)
    assert again.argmax_as_decode(seq[20:29]) == expected.argmax(-1).tolist(), name


def test_as_decode_needs_all_logits(tiny_bundle):
    _, model = tiny_bundle
    with pytest.raises(tessera.TesseraError, match="all_logits"):
        tessera.Session(model).forward([1, 2, 3], all_logits=False, as_decode=True)


@pytest.mark.parametrize("penalty", [1.0, 1.3])
def test_greedy_speculative_output_equals_plain(tiny_bundle, penalty):
    name, model = tiny_bundle
    totals = {"drafted": 0, "accepted": 0, "verify_calls": 0}
    for label, prompt in prompts_of_ids().items():
        runs = {}
        for mode in ("off", "lookup", "auto"):
            session = tessera.Session(model)
            r = session.generate(prompt, 96, ignore_eos=True, repeat_penalty=penalty, speculative=mode)
            runs[mode] = r
            # The session holds the prompt and the generated tokens but the last, as without speculation.
            assert session.length == len(prompt) + len(r["ids"]) - 1, (name, label, mode)
        assert runs["off"]["speculative"]["verify_calls"] == 0
        for mode in ("lookup", "auto"):
            assert runs[mode]["ids"] == runs["off"]["ids"], f"{name} {label} penalty {penalty}: {mode} differs"
            assert runs[mode]["finish_reason"] == runs["off"]["finish_reason"]
        for key in totals:
            totals[key] += runs["lookup"]["speculative"][key]
    # The comparison means something: drafts were verified, and (without
    # the penalty, which makes some of these models repeat one token)
    # rejected drafts were rolled back — with a window of 8, across ring wraps.
    assert totals["verify_calls"] > 10, (name, totals)
    if penalty == 1.0:
        assert 0 < totals["drafted"] - totals["accepted"], (name, totals)


def test_greedy_speculative_continues_a_session(tiny_bundle):
    """A second generate() on the same session (a chat's next turn) after a
    speculative one: the same ids as two plain generations."""
    name, model = tiny_bundle
    p = prompts_of_ids()["repeated phrase"]
    ids = {}
    for mode in ("off", "lookup"):
        session = tessera.Session(model)
        first = session.generate(p, 40, ignore_eos=True, speculative=mode)["ids"]
        second = session.generate([first[-1]] + p[:6], 40, ignore_eos=True, speculative=mode)["ids"]
        ids[mode] = (first, second)
    assert ids["lookup"] == ids["off"], name


def test_speculative_settings_are_checked(tiny_bundle):
    _, model = tiny_bundle
    session = tessera.Session(model)
    with pytest.raises(tessera.TesseraError, match="speculative"):
        session.generate([1, 2], 4, speculative="eagle")
    with pytest.raises(tessera.TesseraError, match="draft_max"):
        session.generate([1, 2], 4, speculative="lookup", draft_max=0)


def chi_square_critical(dof: int, z: float = 3.719) -> float:
    """Upper critical value of chi-square with `dof` degrees of freedom at the
    one-sided normal quantile z (3.719: p = 1e-4), Wilson-Hilferty."""
    h = 2.0 / (9.0 * dof)
    return dof * (1.0 - h + z * math.sqrt(h)) ** 3


def softmax(logits, temperature):
    z = logits.astype(np.float64) / temperature
    z -= z.max()
    e = np.exp(z)
    return e / e.sum()


def test_speculative_sampling_is_distributed_as_plain_sampling(tmp_path):
    """The first two sampled tokens (x1 from the prefill, x2 decided by a
    verify call of x1 and one draft) of a tiny Llama at temperature 0.2:
    their exact joint distribution p(x1) · p(x2 | x1) from the logits,
    against 3,000 speculative generations with different seeds.

    The prompt holds every token id (so the drafter always proposes what
    followed x1's last occurrence), edited so that for the likeliest x1 what
    follows is the model's own likeliest next token: drafts are then
    accepted about a third of the time, and both acceptance and rejection
    happen hundreds of times. A rule that is not distribution-preserving
    (accepting every draft, or resampling from p including the draft) fails
    by a wide margin."""
    make_tiny_model("llama", tmp_path / "hf")
    run_tessera("convert", tmp_path / "hf", "-o", tmp_path / "b", "-t", "2")
    model = tessera.Model(str(tmp_path / "b"), threads=2)
    temperature = 0.2
    rng = random.Random(5)
    prompt = list(range(VOCAB))
    rng.shuffle(prompt)

    def exact_joint(prompt):
        session = tessera.Session(model)
        session.forward(prompt[:-1], all_logits=False)
        base = session.length
        p1 = softmax(session.forward(prompt[-1:], all_logits=True)[0], temperature)
        joint = np.zeros((VOCAB, VOCAB))
        for x1 in np.nonzero(p1 > 1e-5)[0]:
            p2 = softmax(session.forward([int(x1)], all_logits=True)[0], temperature)
            joint[x1] = p1[x1] * p2
            session.truncate(base + 1)
        return joint

    for _ in range(2):
        joint = exact_joint(prompt)
        for x1 in np.argsort(-joint.sum(1))[:8]:
            last = max((i for i, t in enumerate(prompt[:-1]) if t == x1), default=len(prompt))
            if last + 1 < len(prompt) - 1:
                prompt[last + 1] = int(np.argmax(joint[x1]))
    joint = exact_joint(prompt)
    session = tessera.Session(model)
    session.forward(prompt[:-1], all_logits=False)
    base = session.length

    n = 3000
    counts = np.zeros((VOCAB, VOCAB))
    stats = {"drafted": 0, "accepted": 0}
    for seed in range(n):
        r = session.generate(prompt[-1:], 3, temperature=temperature, seed=seed, ignore_eos=True,
                             speculative="lookup")
        counts[r["ids"][0], r["ids"][1]] += 1
        for key in stats:
            stats[key] += r["speculative"][key]
        session.truncate(base)
    assert stats["accepted"] > 300 and stats["drafted"] - stats["accepted"] > 300, stats

    # Cells expected at least 5 times each; the rest pooled into one.
    expected = joint.ravel() * n
    observed = counts.ravel()
    big = expected >= 5
    exp_cells = np.append(expected[big], expected[~big].sum())
    obs_cells = np.append(observed[big], observed[~big].sum())
    chi2 = float(((obs_cells - exp_cells) ** 2 / exp_cells).sum())
    dof = len(exp_cells) - 1
    assert dof >= 10, dof
    assert chi2 < chi_square_critical(dof), f"chi-square {chi2:.1f} with {dof} dof"


# Real models: the oracle corpus and 20 longer prompts, in the chat template.
LONG_PROMPTS = [
    "Repeat the following paragraph exactly: The river rose slowly through the night, and by morning the "
    "lower fields were under water. Farmers moved their animals to the hills, and the school closed for a week.",
    "Rewrite this sentence in the past tense: The committee meets every Tuesday to review the budget, and "
    "each member presents a short report on the projects they oversee.",
    "Summarize in one sentence: Bees communicate the location of flowers through a waggle dance. The angle of "
    "the dance relative to the sun gives the direction, and its duration gives the distance.",
    "Fix the bug in this Python function and return the whole function:\n\ndef average(xs):\n    total = 0\n"
    "    for x in xs:\n        total += x\n    return total / len(x)\n",
    "Rename the variable `tmp` to `buffer` in this code and print the result:\n\nint copy(char* dst, const "
    "char* src, int n) {\n  char tmp[64];\n  for (int i = 0; i < n; ++i) tmp[i] = src[i];\n  for (int i = 0; "
    "i < n; ++i) dst[i] = tmp[i];\n  return n;\n}\n",
    "Translate to French: The library opens at nine in the morning and closes at six in the evening.",
    "List the planets of the solar system in order from the sun, one per line.",
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain how a hash table works, with an example.",
    "Convert this list to JSON with the keys name and age: Alice 31, Bob 27, Carol 45, Dave 38.",
    "Correct the spelling in this text and repeat it: Teh quick borwn fox jumpd over the lazzy dog, and then "
    "it ran into the forrest to find it's freinds.",
    "What are the main causes of the French Revolution?",
    "Add type hints to this function:\n\ndef merge(a, b):\n    out = []\n    i = j = 0\n    while i < len(a) "
    "and j < len(b):\n        if a[i] < b[j]:\n            out.append(a[i]); i += 1\n        else:\n"
    "            out.append(b[j]); j += 1\n    return out + a[i:] + b[j:]\n",
    "Describe the water cycle in four steps.",
    "Repeat after me, word for word: To be, or not to be, that is the question: whether 'tis nobler in the "
    "mind to suffer the slings and arrows of outrageous fortune.",
    "Give three tips for writing clear documentation.",
    "Turn these notes into a paragraph: meeting moved to Friday; budget approved; hire two engineers; "
    "launch delayed to March.",
    "Write a haiku about autumn leaves.",
    "Explain the difference between a process and a thread.",
    "Continue the sequence and explain the rule: 2, 4, 8, 16, 32,",
]


@pytest.mark.parametrize("name", ["smollm2-135m-instruct", "gemma3-270m"])
def test_greedy_speculative_equals_plain_on_the_oracle_corpus(name, pulled_model_path):
    tok = tessera.Tokenizer.from_file(pulled_model_path(name))
    model = tessera.Model(name, threads=2)
    with open(tessera.oracle_corpus_path()) as f:
        corpus = json.load(f)
    verified = 0
    for text in corpus["prompts"]:
        ids = tok.encode(text, True)
        plain = tessera.Session(model).generate(ids, corpus["max_tokens"])
        for mode in ("lookup", "auto"):
            r = tessera.Session(model).generate(ids, corpus["max_tokens"], speculative=mode)
            assert r["ids"] == plain["ids"], f"{name} {mode}: {text!r}"
            verified += r["speculative"]["verify_calls"]
    assert verified > 0


def run_json(*args):
    return json.loads(run_tessera("run", *args, "--json", "--threads", "2").stdout)


@pytest.mark.parametrize("name", ["smollm2-135m-instruct", "gemma3-270m"])
def test_greedy_speculative_equals_plain_on_long_chat_prompts(name, pulled_model_path):
    """Through the CLI (`tessera run --chat --speculative lookup`)."""
    pulled_model_path(name)
    verified = accepted = 0
    for text in LONG_PROMPTS:
        plain = run_json(name, "--chat", "-p", text, "-n", 48)
        spec = run_json(name, "--chat", "-p", text, "-n", 48, "--speculative", "lookup")
        assert spec["ids"] == plain["ids"], f"{name}: {text[:60]!r}"
        assert spec["text"] == plain["text"]
        assert plain["speculative"]["verify_calls"] == 0
        verified += spec["speculative"]["verify_calls"]
        accepted += spec["speculative"]["accepted"]
    assert verified > 20 and accepted > 20, (verified, accepted)


def test_auto_speculates_on_a_verbatim_copy_from_shadow_drafts(pulled_model_path):
    """`auto` verifies nothing until plain decoding has confirmed the
    lookup's proposals (shadow drafts, generation/draft_controller.h): on a
    request to repeat a paragraph it then speculates, and its output is plain
    greedy's."""
    name = "smollm2-135m-instruct"
    pulled_model_path(name)
    paragraph = ("The old lighthouse stood at the edge of the cliff for more than a hundred years. Every night its "
                 "keeper climbed the spiral stairs, trimmed the wick and wound the clockwork that turned the lens.")
    prompt = "Repeat the following paragraph exactly, word for word, and nothing else:\n\n" + paragraph
    plain = run_json(name, "--chat", "-p", prompt, "-n", 64)
    spec = run_json(name, "--chat", "-p", prompt, "-n", 64, "--speculative", "auto")
    assert spec["ids"] == plain["ids"]
    s = spec["speculative"]
    assert s["verify_calls"] > 0 and s["accepted"] >= 0.8 * s["drafted"], s
    # Steps (verify calls and plain ones) = tokens − accepted drafts: well
    # under the tokens once the copy was confirmed and the drafts ran long.
    assert s["accepted"] > 0.25 * len(spec["ids"]), (s, len(spec["ids"]))


def test_cli_rejects_an_unknown_speculative_mode():
    proc = run_tessera("run", "x", "-p", "hi", "--speculative", "eagle", check=False)
    assert proc.returncode != 0
    assert "speculative" in proc.stderr


def test_cli_draft_model_keeps_greedy_output(pulled_model_path):
    """`--speculative draft-all:PATH`: the target's own bundle drafting for it
    is accepted nearly always and changes nothing; under adaptive control
    (`draft:PATH`) so large a draft is never verified; a draft model with
    another vocabulary is refused, naming it."""
    name = "smollm2-135m-instruct"
    pulled_model_path(name)
    drafted = accepted = 0
    for text in LONG_PROMPTS[:3]:
        plain = run_json(name, "--chat", "-p", text, "-n", 32)
        spec = run_json(name, "--chat", "-p", text, "-n", 32, "--speculative", f"draft-all:{name}")
        assert spec["ids"] == plain["ids"], text[:60]
        drafted += spec["speculative"]["drafted"]
        accepted += spec["speculative"]["accepted"]
    assert drafted > 0 and accepted >= 0.9 * drafted, (drafted, accepted)
    adaptive = run_json(name, "--chat", "-p", LONG_PROMPTS[0], "-n", 32, "--speculative", f"draft:{name}")
    assert adaptive["speculative"]["verify_calls"] == 0, adaptive["speculative"]
    pulled_model_path("gemma3-270m")
    proc = run_tessera("run", name, "-p", "hi", "-n", 4, "--speculative", "draft:gemma3-270m", check=False)
    assert proc.returncode != 0 and "vocabulary" in proc.stderr, proc.stderr
