"""`tessera info` on tiny random Hugging Face checkpoints (saved by transformers
itself) and on the two pulled real GGUF models."""

import json

import pytest
import torch

transformers = pytest.importorskip("transformers")

from conftest import info_json, run_tessera

# Small but structurally real: GQA (kv heads < heads), explicit head_dim where
# the family allows it, sliding layers for Gemma 3.
TINY_CONFIGS = {
    "llama": dict(cls="LlamaConfig", vocab_size=256, hidden_size=64, intermediate_size=128,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  max_position_embeddings=512, tie_word_embeddings=True),
    "qwen2": dict(cls="Qwen2Config", vocab_size=256, hidden_size=64, intermediate_size=128,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  max_position_embeddings=512, tie_word_embeddings=False),
    "qwen3": dict(cls="Qwen3Config", vocab_size=256, hidden_size=64, intermediate_size=128,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                  max_position_embeddings=512),
    "gemma3_text": dict(cls="Gemma3TextConfig", vocab_size=256, hidden_size=64,
                        intermediate_size=128, num_hidden_layers=6, num_attention_heads=4,
                        num_key_value_heads=1, head_dim=32, sliding_window=16,
                        max_position_embeddings=512),
}


def make_tiny(tmp_path, model_type):
    kw = dict(TINY_CONFIGS[model_type])
    config = getattr(transformers, kw.pop("cls"))(**kw)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    out = tmp_path / model_type
    model.save_pretrained(out)
    return out, config, model


@pytest.mark.parametrize("model_type", sorted(TINY_CONFIGS))
def test_info_on_tiny_hf_checkpoint(tmp_path, model_type):
    out, config, model = make_tiny(tmp_path, model_type)
    info = info_json(out)
    spec = info["spec"]
    assert info["source"] == "hf"
    assert spec["num_layers"] == config.num_hidden_layers
    assert spec["hidden_size"] == config.hidden_size
    assert spec["intermediate_size"] == config.intermediate_size
    assert spec["num_heads"] == config.num_attention_heads
    assert spec["num_kv_heads"] == config.num_key_value_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    assert spec["head_dim"] == head_dim
    assert spec["vocab_size"] == config.vocab_size
    assert spec["context_length"] == config.max_position_embeddings
    assert spec["tie_word_embeddings"] == model.config.tie_word_embeddings
    # Parameters counted from the stored tensors = transformers' own count
    # (tied embeddings are stored and counted once).
    assert info["parameters"] == model.num_parameters()
    assert set(info["formats"]) == {"F32"}
    if model_type == "gemma3_text":
        expected = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention"
                    for i in range(config.num_hidden_layers)]
        assert config.layer_types == expected
        assert spec["layer_types"] == config.layer_types
        assert spec["sliding_window"] == config.sliding_window


def test_info_human_readable_output(tmp_path):
    out, _, _ = make_tiny(tmp_path, "qwen2")
    text = run_tessera("info", out).stdout
    for needle in ("architecture", "qwen2", "parameters", "F32", "context length", "tokenizer"):
        assert needle in text, text


@pytest.mark.parametrize("name,arch,layers,hidden,tokenizer", [
    ("smollm2-135m-instruct", "llama", 30, 576, "gpt2"),
    ("gemma3-270m", "gemma3", 18, 640, "llama"),
])
def test_info_on_pulled_gguf(pulled_model_path, name, arch, layers, hidden, tokenizer):
    path = pulled_model_path(name)
    for target in (path, name):  # by path and by pulled name
        info = info_json(target)
        assert info["source"] == "gguf"
        assert info["spec"]["arch"] == arch
        assert info["spec"]["num_layers"] == layers
        assert info["spec"]["hidden_size"] == hidden
        assert info["tokenizer"]["model"] == tokenizer
        assert info["parameters"] > 100_000_000
        assert info["context_length"] > 0


def test_info_unknown_model_name_is_a_clean_error():
    proc = run_tessera("info", "no-such-model-xyz", check=False)
    assert proc.returncode == 2
    assert "no-such-model-xyz" in proc.stderr


def test_info_tokenizer_is_what_the_tokenizer_class_builds(tmp_path, pulled_model_path):
    """The tokenizer line comes from the Tokenizer class that encodes (its
    model, kind and vocabulary size) and find_chat_template, for a GGUF, the
    same tokenizer saved as tokenizer.json, and a tokenizer it refuses."""
    from pathlib import Path

    import tessera
    path = pulled_model_path("smollm2-135m-instruct")
    tok = tessera.Tokenizer.from_file(path)
    assert info_json(path)["tokenizer"] == {"model": "gpt2", "kind": tok.kind, "vocab_size": tok.vocab_size,
                                            "chat_template": True}
    out, _, _ = make_tiny(tmp_path, "llama")
    ref = transformers.AutoTokenizer.from_pretrained(str(Path(path).parent), gguf_file=Path(path).name)
    ref.save_pretrained(out)
    hf = info_json(out)["tokenizer"]
    assert hf == {"model": "BPE", "kind": "byte-level BPE", "vocab_size": tessera.Tokenizer.from_file(str(out)).vocab_size,
                  "chat_template": True}
    assert hf["vocab_size"] == len(ref)
    (out / "tokenizer.json").write_text(json.dumps({"model": {"type": "WordPiece", "vocab": {"a": 0}}}))
    refused = info_json(out)["tokenizer"]
    assert refused["kind"].startswith("unsupported:") and "WordPiece" in refused["kind"], refused
    assert refused["vocab_size"] == 0
    text = run_tessera("info", out).stdout
    assert "tokenizer       unsupported: " in text


@pytest.mark.parametrize("kv_type,element", [("f32", 4), ("f16", 2)])
def test_state_bytes_of_a_gemma4_e2b_config_follow_the_arithmetic(tmp_path, kv_type, element):
    """The per-layer state `tessera info --ctx N` reports for Gemma 4 E2B's
    shape (its config alone: no weights needed): the 20 KV-sharing layers
    allocate nothing, the 12 own sliding layers stop at their ring (window
    512 + the rollback margin), the 3 own full-attention layers (512-wide
    heads) grow with the context."""
    from hf_config_expectations import _E2B_TEXT
    transformers.Gemma4TextConfig(**_E2B_TEXT).save_pretrained(tmp_path)
    for ctx in (300, 4096, 131072):
        out = run_tessera("info", tmp_path, "--json", "--ctx", ctx, "--kv-type", kv_type).stdout
        state = json.loads(out)["state"]
        margin = state["rollback_margin"]
        assert margin == 16 and state["positions"] == ctx and state["kv_type"] == kv_type
        want = []
        for i, t in enumerate(_E2B_TEXT["layer_types"]):
            if i >= 35 - 20:
                want.append(0)
            elif t == "sliding_attention":
                want.append(2 * min(ctx, 512 + margin) * 1 * 256 * element)
            else:
                want.append(2 * ctx * 1 * 512 * element)
        assert [l["bytes"] for l in state["layers"]] == want, ctx
        assert state["bytes"] == sum(want)
        assert sum(1 for l in state["layers"] if "shared KV" in l["kind"]) == 20
    human = run_tessera("info", tmp_path, "--ctx", "4096").stdout
    assert "state           60.4 MiB at 4096 positions" in human
