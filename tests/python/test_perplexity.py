"""`tessera perplexity`: llama-perplexity's protocol on a tiny random model
whose tokenizer adds BOS (so the per-chunk BOS substitution is exercised).

* a model compared with its own base-logits file: KLD ~ 0 (only the
  file's uint16 compression separates them) and the same top token everywhere;
* the tool's PPL equals one computed here from transformers' logits over the
  same chunks and positions, and the base file holds the tokens and bytes
  the format defines;
* bad inputs end in a clear error, never a crash or a half-written file."""

import json
import math
import struct

import numpy as np
import pytest
import torch
import transformers

from conftest import run_tessera

N_CTX = 64
VOCAB = 257  # 256 byte tokens and <s>
BOS = 256
# Plain English prose in the manner of a licence text; one trailing newline,
# which llama-perplexity's -f drops (and so must the tool).
TEXT = (
    "The licenses for most software and other practical works are designed to take away your freedom to "
    "share and change the works. By contrast, this license is intended to guarantee your freedom to share "
    "and change all versions of a program, to make sure it remains free software for all its users. When we "
    "speak of free software, we are referring to freedom, not price. You should also know that you can "
    "change the software or use pieces of it in new free programs, and that you know you can do these "
    "things. To protect your rights, we need to prevent others from denying you these rights or asking you "
    "to surrender the rights.\n"
)


def make_model(directory, seed):
    """A tiny random Llama (2 layers, vocab 257) with a byte-level tokenizer
    whose post-processor adds <s> (id 256) in front."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                      num_key_value_heads=2, num_hidden_layers=2, max_position_embeddings=256,
                                      tie_word_embeddings=False, bos_token_id=BOS, eos_token_id=BOS)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.2)  # wide enough that some log-probs fall below the file's -16 nats floor
    model.save_pretrained(directory)
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<s>"])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", BOS)])
    tok.save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>", "add_bos_token": True}))
    return model, tok


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("perplexity")
    a, b = tmp / "a", tmp / "b"
    hf_a, tok = make_model(a, seed=0)
    make_model(b, seed=1)
    text = tmp / "text.txt"
    text.write_text(TEXT, encoding="utf-8")
    return {"tmp": tmp, "a": a, "b": b, "hf_a": hf_a, "tok": tok, "text": text, "home": tmp / "home"}


def perplexity(s, model, *args, check=True):
    return run_tessera("perplexity", model, "--reference", "-t", 2, *args, check=check,
                       env={"TESSERA_HOME": str(s["home"])})


def as_json(proc):
    return json.loads(proc.stdout)


def expected_tokens(s):
    return s["tok"].encode(TEXT[:-1]).ids  # one trailing newline dropped; <s> in front


def test_perplexity_matches_transformers_and_writes_the_base_file(setup):
    s = setup
    base = s["tmp"] / "a-base.kld"
    r = as_json(perplexity(s, s["a"], "-f", s["text"], "-c", N_CTX, "--kl-divergence-base", base, "--json"))
    tokens = expected_tokens(s)
    assert tokens[0] == BOS
    n_chunk = len(tokens) // N_CTX
    assert n_chunk >= 2
    first = N_CTX // 2
    assert (r["chunks"], r["n_ctx"], r["count"], r["bos"]) == (n_chunk, N_CTX, n_chunk * (N_CTX - 1 - first), BOS)

    # The same chunks and positions, scored from transformers' logits in float64.
    nll = []
    with torch.no_grad():
        for c in range(n_chunk):
            ids = tokens[c * N_CTX:(c + 1) * N_CTX]
            run = [BOS] + ids[1:]  # every chunk starts with BOS; the stored tokens keep their own
            logits = s["hf_a"](torch.tensor([run])).logits[0].double().numpy()
            logp = logits - logits.max(axis=1, keepdims=True)
            logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
            nll += [-logp[p, ids[p + 1]] for p in range(first, N_CTX - 1)]
    nll = np.array(nll)
    ppl = math.exp(nll.mean())
    err = math.sqrt(nll.var() / (len(nll) - 1)) * ppl
    assert r["ppl"] == pytest.approx(ppl, rel=1e-4)
    assert r["ppl_err"] == pytest.approx(err, rel=1e-3)

    # The base file: header, the text's own tokens, rows of the defined width.
    data = base.read_bytes()
    assert not (s["tmp"] / "a-base.kld.tmp").exists()
    assert data[:8] == b"_logits_"
    assert struct.unpack("<3i", data[8:20]) == (N_CTX, VOCAB, n_chunk)
    assert list(struct.unpack(f"<{n_chunk * N_CTX}i", data[20:20 + 4 * n_chunk * N_CTX])) == tokens[:n_chunk * N_CTX]
    width = 2 * ((VOCAB + 1) // 2) + 4
    rows = n_chunk * (N_CTX - 1 - first)
    assert len(data) == 20 + 4 * n_chunk * N_CTX + 2 * rows * width
    # Row 0 decodes to the log-softmax of the first scored position, within half a step.
    row = np.frombuffer(data, dtype="<u2", count=width, offset=20 + 4 * n_chunk * N_CTX)
    scale, min_log_prob = struct.unpack("<2f", row[:4].tobytes())
    with torch.no_grad():
        logits = s["hf_a"](torch.tensor([tokens[:N_CTX]])).logits[0, first].double().numpy()
    logp = logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())
    decoded = scale * row[4:4 + VOCAB].astype(np.float64) + min_log_prob
    above = logp > logp.max() - 16
    assert np.abs(decoded[above] - logp[above]).max() <= scale / 2 + 1e-5
    assert row[4 + VOCAB] == 0  # padding of the odd vocabulary

    # The text output: llama-perplexity's final line.
    # (without a base file written, NLLs stay in double: the last digits may differ)
    text_out = perplexity(s, s["a"], "-f", s["text"], "-c", N_CTX).stdout
    assert text_out.startswith("Final estimate: PPL = ")
    value, err_text = text_out.split("=")[1].split("+/-")
    assert float(value) == pytest.approx(r["ppl"], rel=1e-6)
    assert float(err_text) == pytest.approx(r["ppl_err"], rel=1e-5)


def test_model_against_its_own_base_gives_zero_kld(setup):
    s = setup
    base = s["tmp"] / "self-base.kld"
    w = as_json(perplexity(s, s["a"], "-f", s["text"], "-c", N_CTX, "--kl-divergence-base", base, "--json"))
    # -c and -f are not needed: the tokens and n_ctx are the file's.
    r = as_json(perplexity(s, s["a"], "--kl-divergence", "--kl-divergence-base", base, "--json"))
    assert (r["chunks"], r["n_ctx"], r["count"]) == (w["chunks"], w["n_ctx"], w["count"])
    assert r["ppl"] == pytest.approx(w["ppl"], rel=1e-6)
    # PPL(base) from the file's rows: -log p of each target is scale * q + min_log_prob, raised to the
    # floor 16 nats under the top where it was lower, so PPL(base) <= PPL(Q).
    data = base.read_bytes()
    tokens = np.frombuffer(data, dtype="<i4", count=r["chunks"] * N_CTX, offset=20)
    width = 2 * ((VOCAB + 1) // 2) + 4
    rows = np.frombuffer(data, dtype="<u2", offset=20 + 4 * len(tokens)).reshape(-1, width)
    scales = rows[:, :4].copy().view("<f4")
    first = N_CTX // 2
    targets = [tokens[c * N_CTX + p + 1] for c in range(r["chunks"]) for p in range(first, N_CTX - 1)]
    base_nll = -(scales[:, 0].astype(np.float64) * rows[np.arange(len(rows)), 4 + np.array(targets)] + scales[:, 1])
    assert r["base_ppl"] == pytest.approx(math.exp(base_nll.mean()), rel=1e-6)
    assert r["base_ppl"] <= r["ppl"] * (1 + 1e-4)
    assert abs(r["kld_mean"]) < 1e-4  # the uint16 steps are at most 1.2e-4 nats
    assert r["kld_max"] < 1e-3
    assert r["same_top_p"] == 1.0
    assert r["same_top_p_err"] == 0.0
    assert abs(r["delta_p_mean"]) < 1e-4
    for key in ("kld_err", "kld_p99_9", "kld_p99", "kld_median", "kld_p10", "kld_p5", "kld_p1", "kld_min",
                "ln_ppl_ratio", "ln_ppl_correlation", "delta_p_rms"):
        assert key in r, key
    assert r["kld_min"] <= r["kld_p1"] <= r["kld_median"] <= r["kld_p99"] <= r["kld_max"]
    assert r["ln_ppl_correlation"] > 0.999

    # A different model against that base: a real divergence, in llama.cpp's text layout.
    other = perplexity(s, s["b"], "--kl-divergence", "--kl-divergence-base", base, "--chunks", 2)
    assert "====== KL divergence statistics ======" in other.stdout
    line = next(l for l in other.stdout.splitlines() if l.startswith("Mean    KLD:"))
    assert float(line.split(":")[1].split("±")[0]) > 0.01
    same = next(l for l in other.stdout.splitlines() if l.startswith("Same top p:"))
    assert float(same.split(":")[1].split("±")[0]) < 100.0


def expect_error(proc, *words):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "error:" in proc.stderr
    for w in words:
        assert w in proc.stderr, (w, proc.stderr)


def test_bad_inputs_are_clear_errors(setup):
    s = setup
    tmp = s["tmp"]
    expect_error(perplexity(s, s["a"], "-f", tmp / "nope.txt", check=False), "cannot open the text file")
    expect_error(perplexity(s, s["a"], "-c", N_CTX, check=False), "-f FILE")
    expect_error(perplexity(s, s["a"], "-f", s["text"], "-c", 4, check=False), "at least 8")
    expect_error(perplexity(s, s["a"], "-f", s["text"], "-c", 512, check=False), "context length 256")
    short = tmp / "short.txt"
    short.write_text("Too short for two chunks of 64 tokens.", encoding="utf-8")
    out = tmp / "short.kld"
    expect_error(perplexity(s, s["a"], "-f", short, "-c", N_CTX, "--kl-divergence-base", out, check=False),
                 "at least 128")
    assert not out.exists() and not (tmp / "short.kld.tmp").exists()
    expect_error(perplexity(s, s["a"], "-f", s["text"], "-c", N_CTX, "--kl-divergence-base", tmp / "no" / "dir.kld",
                              check=False),
                 "cannot be opened for writing")

    expect_error(perplexity(s, s["a"], "--kl-divergence", check=False), "--kl-divergence-base")
    expect_error(perplexity(s, s["a"], "--kl-divergence", "--kl-divergence-base", tmp / "none.kld", check=False),
                 "no such file")
    good = tmp / "good.kld"
    perplexity(s, s["a"], "-f", s["text"], "-c", N_CTX, "--kl-divergence-base", good)
    data = good.read_bytes()
    bad = tmp / "bad.kld"
    bad.write_bytes(b"_LOGITS_" + data[8:])
    expect_error(perplexity(s, s["a"], "--kl-divergence", "--kl-divergence-base", bad, check=False), "_logits_")
    bad.write_bytes(data[:-100])
    expect_error(perplexity(s, s["a"], "--kl-divergence", "--kl-divergence-base", bad, check=False), "truncated")
    bad.write_bytes(data[:12])
    expect_error(perplexity(s, s["a"], "--kl-divergence", "--kl-divergence-base", bad, check=False), "truncated")
    # A well-formed file of another vocabulary (100 logits per position).
    n_ctx, n_vocab, n_chunk = 16, 100, 1
    width = 2 * ((n_vocab + 1) // 2) + 4
    bad.write_bytes(b"_logits_" + struct.pack("<3i", n_ctx, n_vocab, n_chunk) + bytes(4 * n_ctx * n_chunk)
                    + bytes(2 * width * (n_ctx - 1 - n_ctx // 2) * n_chunk))
    expect_error(perplexity(s, s["a"], "--kl-divergence", "--kl-divergence-base", bad, check=False),
                 "n_vocab", "100", "257")
