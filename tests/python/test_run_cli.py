"""`tessera run` / `tessera chat` end to end on the real SmolLM2-135M-Instruct
and Gemma 3 270M, and on a tiny random HF checkpoint: determinism (runs,
thread counts, seeds), stop conditions, the chat template path, KV reuse
across chat turns, and clear errors for malformed requests."""

import json
from pathlib import Path

import pytest

import tessera
from conftest import REPO, run_tessera
from tiny_models import make_tiny_model

SMOL = "smollm2-135m-instruct"


def run_json(*args):
    return json.loads(run_tessera("run", *args, "--json").stdout)


@pytest.fixture(scope="module")
def smol(pulled_model_path):
    return pulled_model_path(SMOL)


def test_greedy_chat_answer_is_sensible(smol):
    # At exact, as the f32 reference path does. The reference's first token
    # leads its runner-up ("L") by 0.08 logits, a near-tie that the default
    # fast level flips, as llama.cpp on the same GGUF does (2026-12-06).
    out = run_json(smol, "-p", "What is the capital of France?", "--chat", "-n", "32", "--arithmetic", "exact")
    assert "Paris" in out["text"]
    assert out["finish_reason"] in ("eos", "length")
    assert out["prompt_ids"][0] == 1  # <|im_start|> of the ChatML template
    for key in ("prefill_tok_s", "decode_tok_s", "ttft_ms"):
        assert out[key] > 0


def test_same_seed_same_bytes_across_runs_and_threads(smol):
    args = [smol, "-p", "Once upon a time", "-n", "24", "--temp", "0.9", "--top-k", "40", "--top-p", "0.95",
            "--min-p", "0.02", "--repeat-penalty", "1.1", "--seed", "1234"]
    first = run_tessera("run", *args, "--json", "-t", "1").stdout
    assert run_tessera("run", *args, "--json", "-t", "1").stdout.split('"prefill_tok_s"')[0] == \
        first.split('"prefill_tok_s"')[0]
    two = run_tessera("run", *args, "--json", "-t", "2").stdout
    assert json.loads(two)["ids"] == json.loads(first)["ids"]
    assert json.loads(two)["text"] == json.loads(first)["text"]
    other = json.loads(run_tessera("run", *[a if a != "1234" else "99" for a in args], "--json").stdout)
    assert other["ids"] != json.loads(first)["ids"]


def test_streamed_text_equals_json_text(smol):
    streamed = run_tessera("run", smol, "-p", "The three primary colors are", "-n", "20").stdout
    as_json = run_json(smol, "-p", "The three primary colors are", "-n", "20")
    assert streamed.rstrip("\n") == as_json["text"]


@pytest.mark.parametrize("kv", ["f32", "f16"])
def test_prompt_ids_and_batch_size_do_not_change_output(smol, kv):
    ids = run_json(smol, "-p", "The capital of Italy is", "-n", "1")["prompt_ids"]
    base = run_json(smol, "--prompt-ids", ",".join(map(str, ids)), "-n", "16", "--ignore-eos", "--kv-type", kv)
    for batch in ("1", "3", "8"):
        got = run_json(smol, "--prompt-ids", ",".join(map(str, ids)), "-n", "16", "--ignore-eos", "-b", batch,
                       "--chunks", "3", "--kv-type", kv)
        assert got["ids"] == base["ids"]
    assert len(base["ids"]) == 16 and base["finish_reason"] == "length"


def test_stop_string_cuts_the_text(smol):
    full = run_json(smol, "-p", "Count: one, two, three,", "-n", "24", "--ignore-eos")["text"]
    words = [w for w in full.split(" ") if len(w) > 2]
    assert len(words) >= 2, full
    stop = words[1]
    out = run_json(smol, "-p", "Count: one, two, three,", "-n", "24", "--ignore-eos", "--stop", stop)
    assert out["finish_reason"] == "stop"
    assert out["text"] == full[:full.index(stop)]


def test_gemma3_chat_uses_builtin_template(pulled_model_path):
    path = pulled_model_path("gemma3-270m")
    out = run_json(path, "-p", "Name a fruit that is yellow.", "--chat", "-n", "24")
    assert out["text"].strip(), out
    assert 106 not in out["ids"][:-1]  # <end_of_turn> only ever ends the reply
    builtin = tessera._core.builtin_chat_template("gemma3")
    assert builtin == (REPO / "tests/data/chat_templates/gemma3.jinja").read_text()


@pytest.mark.parametrize("kv", ["f32", "f16"])
def test_chat_reuses_kv_across_turns(smol, kv):
    proc = run_tessera("chat", smol, "-n", "24", "--kv-type", kv, input="Hi! My name is Ada.\nWhat is my name?\n/exit\n")
    reused = [int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("(reused")]
    assert len(reused) == 2 and reused[0] == 0 and reused[1] > 20, proc.stderr
    assert len(proc.stdout.strip().splitlines()) >= 2, proc.stdout
    # Reusing the first turn's KV changes nothing: recomputing gives the same bytes.
    again = run_tessera("chat", smol, "-n", "24", "--no-kv-reuse", "--kv-type", kv,
                        input="Hi! My name is Ada.\nWhat is my name?\n")
    assert again.stdout == proc.stdout


def test_tiny_checkpoint_without_tokenizer_runs_on_ids(tmp_path):
    make_tiny_model("llama", tmp_path)
    out = run_json(tmp_path, "--prompt-ids", "1,2,3,4", "-n", "5", "--ignore-eos")
    session = tessera.Session(tessera.Model(str(tmp_path)))
    assert out["ids"] == session.generate([1, 2, 3, 4], 5, ignore_eos=True)["ids"]
    err = run_tessera("run", tmp_path, "-p", "hello", check=False)
    assert err.returncode == 2 and "tokenizer" in err.stderr


@pytest.mark.parametrize("args,needle", [
    (["-p", "hi", "-n", "0"], "max_tokens"),
    (["-p", "hi", "-b", "-1"], "max_tokens_per_call"),
    (["-p", "hi", "--stop", ""], "stop strings must not be empty"),
    (["-p", "word " * 40, "--ctx", "16"], "context length 16"),
    (["--prompt-ids", "1,2,x"], "not a token id"),
    (["--prompt-ids", "1,99999999"], "outside the vocabulary"),
    (["-p", "hi", "--prompt-ids", "1"], "exactly one"),
    (["-p", "hi", "--temp", "-1"], "temperature"),
    (["-p", "hi", "--top-p", "0"], "top_p"),
    (["-p", "hi", "--chunks", "99"], "chunks"),
    (["-p", "hi", "--threads", "0"], "threads"),
    (["-p", "hi", "--kv-type", "q4_0"], "--kv-type"),
])
def test_malformed_requests_are_clear_errors(smol, args, needle):
    proc = run_tessera("run", smol, *args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr, proc.stderr
    assert "terminate" not in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_model_name_is_a_clear_error():
    proc = run_tessera("run", "no-such-model-xyz", "-p", "hi", check=False)
    assert proc.returncode == 2
    assert "no-such-model-xyz" in proc.stderr and "not a known model" in proc.stderr


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny_llama")
    make_tiny_model("llama", path)
    return path


@pytest.mark.parametrize("cli,py", [
    (["-n", "0"], {"max_tokens": 0}),
    (["-b", "-1"], {"max_tokens_per_call": -1}),
    (["--stop", ""], {"stop": [""]}),
    (["--temp", "-1"], {"temperature": -1.0}),
    (["--top-k", "-1"], {"top_k": -1}),
    (["--top-p", "0"], {"top_p": 0.0}),
    (["--min-p", "2"], {"min_p": 2.0}),
    (["--repeat-penalty", "0"], {"repeat_penalty": 0.0}),
    (["--repeat-last-n", "-2"], {"repeat_last_n": -2}),
])
def test_cli_and_python_refuse_bad_settings_with_the_same_error(tiny_llama, cli, py):
    """One builder (make_generate_options, generation/generate.h) checks the
    settings of `tessera run` and of Session.generate: the same message."""
    proc = run_tessera("run", tiny_llama, "--prompt-ids", "1,2", "--reference", *cli, check=False)
    assert proc.returncode == 2, proc.stderr
    cli_error = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(cli_error) == 1, proc.stderr
    session = tessera.Session(tessera.Model(str(tiny_llama), reference=True))
    args = {"max_tokens": 4, **py}
    max_tokens = args.pop("max_tokens")
    with pytest.raises(tessera.TesseraError) as e:
        session.generate([1, 2], max_tokens, **args)
    assert cli_error[0] == "error: " + str(e.value)


def test_pull_converts_to_the_bundle_run_then_loads(smol):
    """`tessera pull NAME` converts the model to its default bundle after
    pulling (stdout stays the GGUF's path); `tessera run NAME` then loads that
    bundle without converting; --no-convert skips the step."""
    proc = run_tessera("pull", SMOL)
    assert proc.stdout.strip().splitlines()[-1] == smol
    lines = [line for line in proc.stderr.splitlines() if line.startswith("bundle ")]
    assert len(lines) == 1, proc.stderr
    bundle = Path(lines[0].split()[1])
    assert (bundle / "cache-record.json").is_file() and (bundle / "weights.bin").is_file()
    ran = run_tessera("run", SMOL, "-p", "Hi", "-n", "2")
    # A quantized GGUF keeps its values: its bundle holds blk4 ... blk8 layers.
    assert f"using bundle {bundle} (blk4-8 layers, converted from {smol})" in ran.stderr, ran.stderr
    assert "bundle, once" not in ran.stderr
    quiet = run_tessera("pull", SMOL, "--no-convert")
    assert quiet.stdout.strip().splitlines()[-1] == smol and "bundle " not in quiet.stderr
