"""Parity of tessera.spec_from_hf_config (src/sources/hf_config.cc) with transformers.

The reference is hf_config_expectations.expect(): what transformers resolves
from a config.json and what the model it builds from it computes (its own
rotary embedding, per-layer configs, KV sharing), in ModelSpec terms.

(a) The named cases (Hub config.json files and transformers' own to_json output,
    including Gemma 4 E2B / E4B): accepted by both, every field equal.
(b) Random configs (seeded): where both accept, every field equal; where
    transformers rejects, Tessera rejects; where Tessera alone rejects, the error
    must be one of DELIBERATE_REFUSALS below.

"Every field" is every model_spec_to_json field, the RoPE scaling keys that
the RoPE type reads, the per-layer head size / KV heads / MLP width / KV source
(model_spec.h's layer_* functions, mirrored by spec_per_layer), and for
default / linear / dynamic / proportional RoPE the inverse frequencies derived
from the spec against the ones transformers' rotary embedding holds.
"""

from __future__ import annotations

import collections
import math
import os
import random
import re
from dataclasses import dataclass
from typing import Callable

import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")

import tessera  # noqa: E402
from hf_config_expectations import (CASES, Rejected, expect, random_config, spec_inv_freq,  # noqa: E402
                                    spec_per_layer)

# A longer soak: TESSERA_HF_PARITY_N=20000 TESSERA_HF_PARITY_SEED=7 pytest -k random ...
SEED = int(os.environ.get("TESSERA_HF_PARITY_SEED", "20260415"))
N_RANDOM = int(os.environ.get("TESSERA_HF_PARITY_N", "1000"))

ATTENTION_KINDS = {"full_attention", "sliding_attention"}


@dataclass(frozen=True)
class Refusal:
    """A config transformers accepts and Tessera refuses on purpose: the error
    (after "config.json: ", optional "text_config." prefix) matches `pattern`,
    and `applies` (given the config's expect() result) holds."""

    pattern: str
    reason: str
    applies: Callable[[dict], bool] = lambda e: True


def _no_attention(e: dict) -> bool:
    return not ATTENTION_KINDS & set(e["layer_types"])


def _odd_rotary_width(e: dict) -> bool:
    """Some attention layer's RoPE rotates an odd int(head·factor) dims, which
    transformers rounds up to the next even width (keeping the odd width's
    frequencies)."""
    for kind in ATTENTION_KINDS & set(e["layer_types"]):
        rope = e["rope"] if kind == "full_attention" or e["rope_local"] is None else e["rope_local"]
        head_dim = e["global_head_dim"] if kind == "full_attention" and e["global_head_dim"] else e["head_dim"]
        if rope["scaling"]["type"] != "proportional" and int(head_dim * rope["partial_rotary_factor"]) % 2:
            return True
    return False


DELIBERATE_REFUSALS = [
    # Features ModelSpec has no field for.
    Refusal(r"mlp_bias: true is not supported", "ModelSpec has no MLP biases (Llama mlp_bias)"),
    Refusal(r"attention_bias: true is not supported \(o_proj", "ModelSpec has no o_proj bias (OLMo 2 attention_bias)"),
    Refusal(r"conv_bias: true is not supported", "ModelSpec has no short-convolution biases (LFM2 conv_bias)"),
    Refusal(r"enable_moe_block: true is not supported",
            "ModelSpec has no mixture-of-experts (Gemma 4 26B-A4B); dense Gemma 4 only"),
    Refusal(r"use_bidirectional_attention: ('all' is|true is) not supported",
            "ModelSpec decoders are causal; bidirectional text attention is an encoder setting"),
    Refusal(r"vocab_size_per_layer_input: \d+ differs from vocab_size",
            "ModelSpec has one vocabulary size for token and per-layer (Gemma 4 PLE) embeddings"),
    Refusal(r"(hidden_act|hidden_activation): unsupported activation",
            "ModelSpec activations are SiLU, GELU and tanh-GELU (any ACT2FN spelling of them)"),
    Refusal(r"rope_type: 'longrope' is not supported", "ModelSpec has no per-dimension short/long RoPE factors"),
    Refusal(r"truncate: only true is supported", "ModelSpec has no untruncated YaRN correction range"),
    # Configs transformers loads whose model is almost certainly not what was meant.
    Refusal(r"head_dim: absent, and hidden_size \d+ is not a multiple of num_attention_heads",
            "transformers floor-divides, giving attention a width other than hidden_size; treated as a broken "
            "config rather than guessed"),
    Refusal(r"num_kv_shared_layers: must be in \[0, num_hidden_layers",
            "more shared layers than layers only loads through transformers' negative-index arithmetic"),
    Refusal(r"per_layer_config\.\d+: names layer \d+ again",
            "the same layer under two keys ('7' and '07'): transformers keeps the later one in the file, and a "
            "JSON object has no order"),
    Refusal(r"(head_dim: RoPE needs an even rotary dimension|[\w.]*partial_rotary_factor: \S+ is not supported "
            r"with rope_type)",
            "an odd rotary width int(head_dim·partial_rotary_factor) works in transformers only rounded up to the "
            "next even width with the odd width's frequencies, which partial_rotary_factor cannot express",
            _odd_rotary_width),
    Refusal(r"\w+: \d+ exceeds the supported maximum",
            "sizes above 2^31 - 1 and more than 65536 layers are refused (bounds every allocation downstream)"),
    Refusal(r"(rms_norm_eps|norm_eps|\w+_softcapping|rope_[\w.]*attention_factor): must not be negative",
            "negative norm epsilons, softcaps and YaRN attention factors are accepted by transformers but "
            "make no sense"),
    # Whole-model checks that transformers only needs when a layer uses them.
    Refusal(r"num_key_value_heads: \d+ does not divide num_attention_heads",
            "checked for every model; transformers only fails when an attention layer repeats the KV heads",
            _no_attention),
    Refusal(r"linear_num_value_heads: \d+ is not a multiple of linear_num_key_heads",
            "checked for every Qwen 3.5 model; transformers only fails when a gated delta-net layer uses them",
            lambda e: "linear_attention" not in e["layer_types"]),
]


def deliberate_refusal(message: str, e: dict) -> Refusal | None:
    problem = re.sub(r"^[^:]*: (text_config\.)?", "", message)
    for refusal in DELIBERATE_REFUSALS:
        if re.match(refusal.pattern, problem) and refusal.applies(e):
            return refusal
    return None


# ---------------------------------------------------------------------------
# Field-by-field comparison
# ---------------------------------------------------------------------------

SPEC_FIELDS = {
    "arch", "source_architecture", "vocab_size", "hidden_size", "intermediate_size", "num_layers", "num_heads",
    "num_kv_heads", "head_dim", "context_length", "norm_eps", "norm_weight_plus_one", "qk_norm", "v_norm",
    "attention_bias", "tie_word_embeddings", "scale_embeddings", "activation", "rope", "rope_local", "layer_types",
    "sliding_window", "attn_logit_softcap", "final_logit_softcap", "query_pre_attn_scalar", "bos_token_id",
    "eos_token_ids", "conv_kernel", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
    "linear_value_head_dim", "linear_conv_kernel", "hidden_size_per_layer_input", "global_head_dim",
    "global_num_kv_heads", "num_kv_shared_layers", "attention_k_eq_v", "double_wide_mlp",
}


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-12)
    return a == b


def differences(spec: dict, e: dict) -> list[str]:
    """Every way `spec` (tessera) differs from `e` (transformers)."""
    out = []
    if set(spec) != SPEC_FIELDS:
        out.append(f"spec fields: missing {SPEC_FIELDS - set(spec)}, unexpected {set(spec) - SPEC_FIELDS}")
    for key, want in e.items():
        if key in ("rope", "rope_local", "per_layer", "inv_freq"):
            continue
        if not _same(spec.get(key), want):
            out.append(f"{key}: tessera {spec.get(key)!r}, transformers {want!r}")
    for key in ("rope", "rope_local"):
        ours, want = spec.get(key), e[key]
        if (ours is None) != (want is None):
            out.append(f"{key}: tessera {ours!r}, transformers {want!r}")
            continue
        if want is None:
            continue
        for field in ("theta", "partial_rotary_factor", "neox_style"):
            if not _same(ours[field], want[field]):
                out.append(f"{key}.{field}: tessera {ours[field]!r}, transformers {want[field]!r}")
        for field, value in want["scaling"].items():
            if not _same(ours["scaling"].get(field), value):
                out.append(f"{key}.scaling.{field}: tessera {ours['scaling'].get(field)!r}, transformers {value!r}")
    if not out:  # the per-layer views are only meaningful on matching fields
        ours = spec_per_layer(spec)
        for field, want in e["per_layer"].items():
            if ours[field] != want:
                out.append(f"per-layer {field}: tessera {ours[field]}, transformers {want}")
        for kind, want in e["inv_freq"].items():
            full = kind == "full_attention"
            rope = spec["rope"] if full or spec["rope_local"] is None else spec["rope_local"]
            head_dim = spec["global_head_dim"] if full and spec["global_head_dim"] else spec["head_dim"]
            got = spec_inv_freq(rope, head_dim)
            if got is not None and (len(got) != len(want) or not all(
                    math.isclose(a, b, rel_tol=2e-6, abs_tol=0.0) for a, b in zip(got, want))):
                out.append(f"{kind} RoPE inverse frequencies: tessera {got[:4]}... ({len(got)}), "
                           f"transformers {want[:4]}... ({len(want)})")
    return out


# ---------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name,config", CASES, ids=[name for name, _ in CASES])
def test_named_case(name, config):
    e = expect(config)
    spec = tessera.spec_from_hf_config(config)
    assert differences(spec, e) == []


def test_gemma4_e2b_geometry():
    """The E2B numbers the runtime will build from, spelled out."""
    config = dict(CASES)["gemma4_e2b_it_hub"]
    spec = tessera.spec_from_hf_config(config)
    assert (spec["head_dim"], spec["global_head_dim"]) == (256, 512)
    assert (spec["num_kv_heads"], spec["global_num_kv_heads"]) == (1, 1)
    assert spec["num_kv_shared_layers"] == 20 and spec["double_wide_mlp"] and not spec["attention_k_eq_v"]
    per_layer = spec_per_layer(spec)
    assert per_layer["intermediate_size"] == [6144] * 15 + [12288] * 20
    assert per_layer["kv_source"][15:] == [13 if k == "sliding_attention" else 14 for k in spec["layer_types"][15:]]
    assert spec["rope"]["scaling"]["type"] == "proportional" and spec["rope"]["partial_rotary_factor"] == 0.25
    assert spec["rope_local"]["theta"] == 10000.0
    # The Hub spelling and transformers 5's per_layer_config spelling are the same model
    # (the generated wrapper has no outer eos list).
    generated = tessera.spec_from_hf_config(dict(CASES)["gemma4_e2b_generated"])
    assert {k: v for k, v in generated.items() if k != "eos_token_ids"} == \
        {k: v for k, v in spec.items() if k != "eos_token_ids"}


def test_errors_are_tessera_errors():
    with pytest.raises(tessera.TesseraError, match="invalid JSON"):
        tessera.spec_from_hf_config("{")
    with pytest.raises(tessera.TesseraError, match=r"config\.json: enable_moe_block: true is not supported"):
        tessera.spec_from_hf_config({"model_type": "gemma4_text", "enable_moe_block": True})
    assert issubclass(tessera.TesseraError, ValueError)


def test_random_configs():
    rng = random.Random(SEED)
    outcomes = collections.Counter()
    accepted_by_arch = collections.Counter()
    failures = []
    for i in range(N_RANDOM):
        config = random_config(rng)
        try:
            e, rejected = expect(config), None
        except Rejected as ex:
            e, rejected = None, str(ex)
        try:
            spec, error = tessera.spec_from_hf_config(config), None
        except tessera.TesseraError as ex:
            spec, error = None, str(ex)
        if rejected and error:
            outcomes["both reject"] += 1
        elif rejected:
            failures.append(f"#{i}: transformers rejects ({rejected[:200]}) but tessera accepts\n  {config}")
        elif error:
            refusal = deliberate_refusal(error, e)
            if refusal is None:
                failures.append(f"#{i}: tessera rejects ({error}) what transformers accepts\n  {config}")
            else:
                outcomes["deliberate refusal"] += 1
        else:
            outcomes["both accept"] += 1
            accepted_by_arch[e["arch"]] += 1
            if e["arch"] == "gemma4" and e["global_head_dim"] != e["head_dim"]:
                accepted_by_arch["gemma4 with 2 head sizes"] += 1
            diffs = differences(spec, e)
            if diffs:
                failures.append(f"#{i}: " + "; ".join(diffs) + f"\n  {config}")
    assert not failures, f"{len(failures)} of {N_RANDOM} configs disagree:\n" + "\n".join(failures[:20])
    # The generator must keep reaching every model type on the accepted side.
    assert outcomes["both accept"] >= N_RANDOM // 5, outcomes
    for arch in ("llama", "qwen2", "qwen3", "qwen3_5", "gemma3", "gemma4", "lfm2", "olmo2", "gemma4 with 2 head sizes"):
        assert accepted_by_arch[arch] >= 10, (arch, accepted_by_arch)
