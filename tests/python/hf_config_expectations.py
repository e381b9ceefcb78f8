"""What transformers resolves from a Hugging Face config.json, in ModelSpec terms.

`expect(config)` loads the config the way transformers does
(CONFIG_MAPPING[model_type].from_dict, the text config of multimodal wrappers,
GenerationConfig.from_model_config for their bos/eos) and returns the ModelSpec
that describes the model transformers would build from it, with the field names
of model_spec_to_json, plus a "per_layer" entry (head size, KV heads, MLP width
and KV source of every layer, from transformers' own per-layer configs and
kv_sharing_modes). It raises Rejected when transformers rejects the config:
either the config class raises, or the modeling code would fail building or
running the model (each such check below says why).

Shared by tests/python/test_hf_config_parity.py, which compares expect() with
tessera.spec_from_hf_config on CASES and on random_config() configs, and
tools/gen_hf_config_cases.py, which embeds CASES in src/model/hf_config_test.cc.
"""

from __future__ import annotations

import copy
import json
import logging
import random
import warnings

warnings.filterwarnings("ignore")
import transformers  # noqa: E402
from transformers.integrations.heterogeneity.configuration_utils import AmbiguousGlobalPerLayerAttributeError  # noqa: E402
from transformers import (CONFIG_MAPPING, GenerationConfig, Gemma4Config, Gemma4TextConfig, LlamaConfig,  # noqa: E402
                          Lfm2Config, Qwen2Config, Qwen3_5TextConfig, Qwen3Config)

transformers.logging.set_verbosity_error()
logging.getLogger("transformers").setLevel(logging.ERROR)

TRANSFORMERS_VERSION = transformers.__version__


class Rejected(Exception):
    """transformers rejects the config (its config class, or the model it would build)."""


# ---------------------------------------------------------------------------
# Named cases: config.json files as the Hub ships them (older spellings) and
# `<Config>(...).to_json_string()` output of transformers itself.
# ---------------------------------------------------------------------------

CASES: list[tuple[str, dict]] = []


def _add(name: str, cfg: dict):
    CASES.append((name, cfg))


def _generated(config) -> dict:
    return json.loads(config.to_json_string())


# --- llama -------------------------------------------------------------------
_add("llama_smollm2_135m_instruct", {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 576,
    "initializer_range": 0.041666666666666664, "intermediate_size": 1536, "is_llama_config": True,
    "max_position_embeddings": 8192, "mlp_bias": False, "model_type": "llama", "num_attention_heads": 9,
    "num_hidden_layers": 30, "num_key_value_heads": 3, "pad_token_id": 2, "pretraining_tp": 1,
    "rms_norm_eps": 1e-05, "rope_interleaved": False, "rope_scaling": None, "rope_theta": 100000,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16", "transformers_version": "4.42.3",
    "use_cache": True, "vocab_size": 49152})
_add("llama_all_defaults", {"model_type": "llama"})
_add("llama_3_2_style_llama3_rope", {
    "architectures": ["LlamaForCausalLM"], "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009],
    "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 8192,
    "max_position_embeddings": 131072, "model_type": "llama", "num_attention_heads": 32,
    "num_hidden_layers": 16, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": True, "vocab_size": 128256})
_add("llama_generated_yarn_mscale", _generated(LlamaConfig(
    hidden_size=128, intermediate_size=256, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=None,
    max_position_embeddings=16384, vocab_size=1000, bos_token_id=None, eos_token_id=[5, 6],
    rope_parameters={"rope_type": "yarn", "rope_theta": 20000.0, "factor": 4.0,
                     "original_max_position_embeddings": 4096, "mscale": 0.707, "mscale_all_dim": 1.0,
                     "beta_fast": 16})))
# LlamaRotaryEmbedding computes 'default' RoPE over the whole head, whatever
# partial_rotary_factor says (a 'linear' one with 0.5 would make the model fail).
_add("llama_generated_default_partial_ignored", _generated(LlamaConfig(
    hidden_size=96, intermediate_size=200, num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2,
    head_dim=32, vocab_size=300, rope_parameters={"rope_type": "default", "rope_theta": 1e5,
                                                   "partial_rotary_factor": 0.5})))
_add("llama_dynamic_legacy_type_key", {
    "model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
    "rope_scaling": {"type": "dynamic", "factor": 2.0}, "max_position_embeddings": 4096})

# --- qwen2 -------------------------------------------------------------------
_add("qwen2_5_0_5b_instruct", {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
    "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 21,
    "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": True,
    "torch_dtype": "bfloat16", "transformers_version": "4.43.1", "use_cache": True,
    "use_sliding_window": False, "vocab_size": 151936})
_add("qwen2_all_defaults", {"model_type": "qwen2"})
_add("qwen2_generated_sliding", _generated(Qwen2Config(
    hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=None,
    vocab_size=512, use_sliding_window=True, sliding_window=64, max_window_layers=2, eos_token_id=3)))

# --- qwen3 -------------------------------------------------------------------
_add("qwen3_0_6b", {
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
    "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
    "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
    "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None, "tie_word_embeddings": True,
    "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": True,
    "use_sliding_window": False, "vocab_size": 151936})
_add("qwen3_all_defaults", {"model_type": "qwen3"})
_add("qwen3_generated_yarn", _generated(Qwen3Config(
    hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
    head_dim=32, vocab_size=256, max_position_embeddings=131072, attention_bias=True,
    rope_parameters={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768,
                     "rope_theta": 1000000.0})))

# --- qwen3.5 -----------------------------------------------------------------
_add("qwen3_5_text_generated", _generated(Qwen3_5TextConfig(
    hidden_size=64, intermediate_size=128, num_hidden_layers=8, num_attention_heads=4, num_key_value_heads=2,
    head_dim=32, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
    linear_value_head_dim=24, linear_conv_kernel_dim=4, vocab_size=320, eos_token_id=7)))
_add("qwen3_5_text_minimal_interval", {"model_type": "qwen3_5_text", "num_hidden_layers": 6,
                                       "full_attention_interval": 3, "rope_theta": 5000000})
_add("qwen3_5_multimodal_0_8b_style", {
    "architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
    "image_token_id": 248056, "tie_word_embeddings": True,
    "text_config": {
        "attention_bias": False, "eos_token_id": 248044, "head_dim": 256, "hidden_act": "silu",
        "hidden_size": 1024, "intermediate_size": 3584,
        "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 6,
        "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
        "linear_num_value_heads": 16, "linear_value_head_dim": 128, "max_position_embeddings": 262144,
        "model_type": "qwen3_5_text", "num_attention_heads": 8, "num_hidden_layers": 24,
        "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
        "rope_parameters": {"mrope_interleaved": True, "mrope_section": [11, 11, 10], "rope_type": "default",
                            "rope_theta": 10000000, "partial_rotary_factor": 0.25},
        "vocab_size": 248320},
    "vision_config": {"depth": 2, "hidden_size": 64, "num_heads": 4, "intermediate_size": 128,
                      "out_hidden_size": 1024}})

# --- gemma3 ------------------------------------------------------------------
_add("gemma3_1b_it", {
    "architectures": ["Gemma3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "attn_logit_softcapping": None, "bos_token_id": 2, "cache_implementation": "hybrid",
    "eos_token_id": [1, 106], "final_logit_softcapping": None, "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "initializer_range": 0.02,
    "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text",
    "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "pad_token_id": 0,
    "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
    "rope_scaling": None, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
    "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": True,
    "vocab_size": 262144})
_add("gemma3_text_all_defaults", {"model_type": "gemma3_text"})
_add("gemma3_text_pattern_3_softcaps", {"model_type": "gemma3_text", "num_hidden_layers": 7,
                                        "sliding_window_pattern": 3, "attn_logit_softcapping": 50.0,
                                        "final_logit_softcapping": 30.0, "query_pre_attn_scalar": 168,
                                        "hidden_size": 512, "num_attention_heads": 8, "head_dim": 64})
_add("gemma3_4b_it_multimodal", {
    "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999,
    "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144,
    "initializer_range": 0.02, "mm_tokens_per_image": 256, "model_type": "gemma3",
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                    "sliding_window": 1024},
    "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
    "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                      "model_type": "siglip_vision_model", "num_attention_heads": 16,
                      "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": False}})

# --- gemma4 ------------------------------------------------------------------
_add("gemma4_text_generated_shared_kv", _generated(Gemma4TextConfig(
    hidden_size=64, intermediate_size=128, num_hidden_layers=8, num_attention_heads=4, num_key_value_heads=2,
    head_dim=16, global_head_dim=16, num_kv_shared_layers=2, hidden_size_per_layer_input=8, vocab_size=128,
    vocab_size_per_layer_input=128, final_logit_softcapping=30.0, sliding_window=32,
    max_position_embeddings=4096)))
_add("gemma4_text_legacy_global_head_dim", {
    "model_type": "gemma4_text", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 2,
    "num_key_value_heads": 1, "head_dim": 32, "global_head_dim": 32, "vocab_size": 64,
    "vocab_size_per_layer_input": 64, "hidden_size_per_layer_input": 0,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "sliding_attention"]})
_add("gemma4_multimodal", {
    "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4", "eos_token_id": [1, 106],
    "tie_word_embeddings": True,
    "text_config": _generated(Gemma4TextConfig(
        hidden_size=96, intermediate_size=192, num_hidden_layers=7, num_attention_heads=3, num_key_value_heads=1,
        head_dim=32, global_head_dim=32, num_kv_shared_layers=1, hidden_size_per_layer_input=16,
        vocab_size=200, vocab_size_per_layer_input=200,
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                         "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.5,
                                            "rope_theta": 1000000.0}}))})

# Gemma 4 E2B and E4B text decoders (google/gemma-4-E2B-it, -E4B-it): 256-wide
# sliding heads, 512-wide full-attention heads, per-layer embeddings, the last
# 20 / 18 layers reusing earlier KV, E2B with double-wide MLPs on those layers.
_GEMMA4_ROPE = {"full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0, "rope_type": "proportional"},
                "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}}
_E2B_TEXT = dict(
    hidden_size=1536, intermediate_size=6144, num_hidden_layers=35, num_attention_heads=8, num_key_value_heads=1,
    head_dim=256, global_head_dim=512, num_kv_shared_layers=20, use_double_wide_mlp=True,
    hidden_size_per_layer_input=256, vocab_size=262144, vocab_size_per_layer_input=262144, sliding_window=512,
    max_position_embeddings=131072, final_logit_softcapping=30.0,
    layer_types=(["sliding_attention"] * 4 + ["full_attention"]) * 7, rope_parameters=_GEMMA4_ROPE)
_E4B_TEXT = dict(
    hidden_size=2560, intermediate_size=10240, num_hidden_layers=42, num_attention_heads=8, num_key_value_heads=2,
    head_dim=256, global_head_dim=512, num_kv_shared_layers=18, use_double_wide_mlp=False,
    hidden_size_per_layer_input=256, vocab_size=262144, vocab_size_per_layer_input=262144, sliding_window=512,
    max_position_embeddings=131072, final_logit_softcapping=30.0,
    layer_types=(["sliding_attention"] * 5 + ["full_attention"]) * 7, rope_parameters=_GEMMA4_ROPE)
# The Hub's config.json (written before per_layer_config existed): global_head_dim spelled out.
_add("gemma4_e2b_it_hub", {
    "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4", "eos_token_id": [1, 106],
    "boi_token_id": 255999, "eoi_token_id": 258882, "image_token_id": 258880, "audio_token_id": 258881,
    "tie_word_embeddings": True, "dtype": "bfloat16", "transformers_version": "5.5.0.dev0",
    "text_config": dict(
        {k: v for k, v in _E2B_TEXT.items()}, model_type="gemma4_text", attention_bias=False,
        attention_dropout=0.0, attention_k_eq_v=False, bos_token_id=2, enable_moe_block=False, eos_token_id=1,
        hidden_activation="gelu_pytorch_tanh", initializer_range=0.02, num_global_key_value_heads=None,
        pad_token_id=0, rms_norm_eps=1e-06, use_bidirectional_attention=None, use_cache=True),
    "vision_config": {"model_type": "gemma4_vision", "hidden_size": 768, "num_hidden_layers": 16}})
# What transformers 5.24 writes for the same models: per_layer_config instead of global_head_dim.
_add("gemma4_e2b_generated", _generated(Gemma4Config(text_config=Gemma4TextConfig(**_E2B_TEXT))))
_add("gemma4_e4b_text_generated", _generated(Gemma4TextConfig(**_E4B_TEXT)))
# Gemma 4 31B geometry: K = V on full-attention layers, which have fewer KV heads.
_add("gemma4_31b_style_k_eq_v_generated", _generated(Gemma4TextConfig(
    hidden_size=5376, intermediate_size=21504, num_hidden_layers=60, num_attention_heads=32, num_key_value_heads=16,
    head_dim=256, global_head_dim=512, num_global_key_value_heads=4, attention_k_eq_v=True,
    hidden_size_per_layer_input=0, vocab_size=262144, sliding_window=1024, max_position_embeddings=262144,
    final_logit_softcapping=30.0, layer_types=(["sliding_attention"] * 5 + ["full_attention"]) * 10,
    rope_parameters=_GEMMA4_ROPE)))

# --- lfm2 --------------------------------------------------------------------
_add("lfm2_350m_legacy", {
    "architectures": ["Lfm2ForCausalLM"], "block_auto_adjust_ff_dim": True, "block_dim": 1024,
    "block_ff_dim": 6656, "block_ffn_dim_multiplier": 1.0, "block_mlp_init_scale": 1.0,
    "block_multiple_of": 256, "block_norm_eps": 1e-05, "block_out_init_scale": 1.0,
    "block_use_swiglu": True, "block_use_xavier_init": True, "bos_token_id": 1, "conv_L_cache": 3,
    "conv_bias": False, "conv_dim": 1024, "conv_dim_out": 1024, "conv_use_xavier_init": True,
    "eos_token_id": 7, "full_attn_idxs": [2, 5, 8, 10, 12, 14], "hidden_size": 1024,
    "initializer_range": 0.02, "max_position_embeddings": 128000, "model_type": "lfm2", "norm_eps": 1e-05,
    "num_attention_heads": 16, "num_heads": 16, "num_hidden_layers": 16, "num_key_value_heads": 8,
    "pad_token_id": 0, "rope_theta": 1000000.0, "torch_dtype": "bfloat16", "use_cache": True,
    "use_pos_enc": True, "vocab_size": 65536})
_add("lfm2_all_defaults", {"model_type": "lfm2"})
_add("lfm2_generated_layer_types", _generated(Lfm2Config(
    hidden_size=64, intermediate_size=300, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
    vocab_size=100, block_ffn_dim_multiplier=1.5, block_multiple_of=32, conv_L_cache=4,
    layer_types=["conv", "full_attention", "conv", "full_attention"], tie_word_embeddings=False)))
_add("lfm2_no_adjust_tie_embedding", {"model_type": "lfm2", "hidden_size": 64, "num_attention_heads": 4,
                                      "num_key_value_heads": 4, "num_hidden_layers": 3, "intermediate_size": 200,
                                      "block_auto_adjust_ff_dim": False, "tie_embedding": False,
                                      "full_attn_idxs": [1]})


# ---------------------------------------------------------------------------
# expect()
# ---------------------------------------------------------------------------

ARCH = {"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "qwen3_5_text": "qwen3_5",
        "gemma3_text": "gemma3", "gemma4_text": "gemma4", "lfm2": "lfm2", "olmo2": "olmo2"}
DEFAULT_CLASS = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
                 "qwen3_5_text": "Qwen3_5ForCausalLM", "gemma3_text": "Gemma3ForCausalLM",
                 "gemma4_text": "Gemma4ForCausalLM", "lfm2": "Lfm2ForCausalLM", "olmo2": "Olmo2ForCausalLM",
                 "gemma3": "Gemma3ForConditionalGeneration", "qwen3_5": "Qwen3_5ForConditionalGeneration",
                 "gemma4": "Gemma4ForConditionalGeneration"}
# ACT2FN names and the function ModelSpec calls them.
ACTIVATION = {"silu": "silu", "swish": "silu", "gelu_pytorch_tanh": "gelu_pytorch_tanh",
              "gelu_new": "gelu_pytorch_tanh", "gelu_fast": "gelu_pytorch_tanh",
              "gelu_python_tanh": "gelu_pytorch_tanh", "gelu": "gelu", "gelu_python": "gelu"}
# Switches that come from each modeling file rather than from the config.
QK_NORM = {"qwen3", "qwen3_5_text", "gemma3_text", "gemma4_text", "lfm2", "olmo2"}
NORM_PLUS_ONE = {"qwen3_5_text", "gemma3_text"}  # RMSNorm x̂·(1 + w)
SCALE_EMBEDDINGS = {"gemma3_text", "gemma4_text"}  # embeddings × √hidden_size
ATTENTION_KINDS = {"full_attention", "sliding_attention"}


# Each model's rotary embedding module: built from the text config exactly as
# the model builds it, it is what decides which RoPE parameters count.
ROTARY = {"llama": ("llama", "LlamaRotaryEmbedding"), "qwen2": ("qwen2", "Qwen2RotaryEmbedding"),
          "qwen3": ("qwen3", "Qwen3RotaryEmbedding"), "qwen3_5_text": ("qwen3_5", "Qwen3_5TextRotaryEmbedding"),
          "gemma3_text": ("gemma3", "Gemma3RotaryEmbedding"), "gemma4_text": ("gemma4", "Gemma4TextRotaryEmbedding"),
          "lfm2": ("lfm2", "Lfm2RotaryEmbedding"), "olmo2": ("olmo2", "Olmo2RotaryEmbedding")}
PARTIAL_ROTARY = {"qwen3_5_text"}  # attention rotates the first 2·len(inv_freq) dims, passes the rest


def expect(cfg_json: dict) -> dict:
    """The ModelSpec (model_spec_to_json names, plus "per_layer" and "inv_freq")
    of the model transformers builds from `cfg_json`; raises Rejected where
    transformers fails."""
    mt = cfg_json.get("model_type")
    try:
        cfg = CONFIG_MAPPING[mt].from_dict(copy.deepcopy(cfg_json))
        text = cfg.get_text_config()
        if cfg is text:
            bos, eos = text.bos_token_id, text.eos_token_id
        else:
            generation = GenerationConfig.from_model_config(cfg)
            bos, eos = generation.bos_token_id, generation.eos_token_id
    except Exception as ex:  # noqa: BLE001 - any failure of transformers' config loading
        raise Rejected(f"config: {type(ex).__name__}: {ex}") from None
    try:
        return _resolve(cfg, text, mt, bos, eos)
    except AmbiguousGlobalPerLayerAttributeError as ex:
        # A per_layer_config override of a field the modeling code reads from the
        # global config (e.g. Gemma4TextMLP's intermediate_size): the model fails.
        raise Rejected(f"model: {ex}") from None


def _resolve(cfg, text, mt: str, bos, eos) -> dict:
    tmt = text.model_type
    L = text.num_hidden_layers
    e = {"arch": ARCH[tmt], "source_architecture": cfg.architectures[0] if cfg.architectures else DEFAULT_CLASS[mt]}
    e["vocab_size"] = text.vocab_size
    e["hidden_size"] = text.hidden_size
    inter = text.intermediate_size
    if tmt == "lfm2" and text.block_auto_adjust_ff_dim:  # Lfm2MLP
        inter = int(2 * inter / 3)
        if text.block_ffn_dim_multiplier is not None:
            inter = int(text.block_ffn_dim_multiplier * inter)
            inter = text.block_multiple_of * ((inter + text.block_multiple_of - 1) // text.block_multiple_of)
    e["intermediate_size"] = inter
    e["num_layers"] = L
    e["num_heads"] = text.num_attention_heads
    layer_types = list(text.layer_types) if getattr(text, "layer_types", None) else ["full_attention"] * L
    e["layer_types"] = layer_types
    e["context_length"] = text.max_position_embeddings
    e["norm_eps"] = float(text.norm_eps if tmt == "lfm2" else text.rms_norm_eps)
    e["norm_weight_plus_one"] = tmt in NORM_PLUS_ONE
    e["qk_norm"] = tmt in QK_NORM
    e["v_norm"] = tmt == "gemma4_text"
    e["attention_bias"] = True if tmt == "qwen2" else bool(getattr(text, "attention_bias", False))
    e["tie_word_embeddings"] = bool(cfg.tie_word_embeddings)
    e["scale_embeddings"] = tmt in SCALE_EMBEDDINGS
    act = "silu" if tmt == "lfm2" else getattr(text, "hidden_activation", None) or text.hidden_act
    e["activation"] = ACTIVATION.get(act, act)
    e["bos_token_id"] = -1 if bos is None or bos < 0 else bos
    eos = [] if eos is None else (eos if isinstance(eos, list) else [eos])
    e["eos_token_ids"] = [i for i in eos if i >= 0]
    e["sliding_window"] = text.sliding_window if "sliding_attention" in layer_types else 0
    e["attn_logit_softcap"] = float(getattr(text, "attn_logit_softcapping", None) or 0.0)
    e["final_logit_softcap"] = float(getattr(text, "final_logit_softcapping", None) or 0.0)
    e["query_pre_attn_scalar"] = (float(text.query_pre_attn_scalar) if tmt == "gemma3_text"
                                  else 1.0 if tmt == "gemma4_text" else 0.0)
    e["conv_kernel"] = text.conv_L_cache if tmt == "lfm2" else 0
    for key, attr in [("linear_num_key_heads", "linear_num_key_heads"),
                      ("linear_num_value_heads", "linear_num_value_heads"),
                      ("linear_key_head_dim", "linear_key_head_dim"),
                      ("linear_value_head_dim", "linear_value_head_dim"),
                      ("linear_conv_kernel", "linear_conv_kernel_dim")]:
        e[key] = getattr(text, attr) if tmt == "qwen3_5_text" else 0
    e["hidden_size_per_layer_input"] = text.hidden_size_per_layer_input if tmt == "gemma4_text" else 0
    e["num_kv_shared_layers"] = text.num_kv_shared_layers if tmt == "gemma4_text" else 0

    if tmt == "gemma4_text":
        layer_cfg = _expect_gemma4_layers(text, e)
    else:
        head_dim = getattr(text, "head_dim", text.hidden_size // text.num_attention_heads)  # as the attention does
        if head_dim is None:
            raise Rejected("model: head_dim is None")
        e["head_dim"] = head_dim
        e["num_kv_heads"] = text.num_key_value_heads
        e["global_head_dim"] = e["global_num_kv_heads"] = 0
        e["attention_k_eq_v"] = e["double_wide_mlp"] = False
        e["per_layer"] = {"head_dim": [head_dim] * L, "num_kv_heads": [text.num_key_value_heads] * L,
                          "intermediate_size": [inter] * L, "kv_source": list(range(L))}
        layer_cfg = {lt: text for lt in set(layer_types)}
    _expect_rope(text, e, layer_cfg)

    # Model-level checks, each a failure of transformers' model:
    if "sliding_attention" in layer_types and text.sliding_window is None:  # the sliding mask needs a window
        raise Rejected("model: sliding_attention layers without a sliding window")
    if "linear_attention" in layer_types and text.linear_num_value_heads % text.linear_num_key_heads:
        raise Rejected("model: gated delta-net value heads are not a multiple of its key heads")
    # attention repeats each KV head heads/kv times to meet the query heads.
    for i, kind in enumerate(layer_types):
        if kind in ATTENTION_KINDS and e["num_heads"] % e["per_layer"]["num_kv_heads"][i]:
            raise Rejected(f"model: layer {i} has {e['per_layer']['num_kv_heads'][i]} KV heads for "
                           f"{e['num_heads']} query heads")
    return e


def _expect_gemma4_layers(text, e: dict) -> dict:
    """Gemma 4 per-layer geometry; returns the config of each layer type."""
    L = e["num_layers"]
    layer_types = e["layer_types"]
    try:
        modes = text.kv_sharing_modes
        # Gemma4TextRotaryEmbedding reads per_layer_config[layer_type], which
        # raises unless every layer of the type has the same overrides.
        by_type = {lt: text.per_layer_config[lt] for lt in sorted(set(layer_types))}
    except Exception as ex:  # noqa: BLE001
        raise Rejected(f"model: {type(ex).__name__}: {ex}") from None
    layers = [text.per_layer_config[i] for i in range(L)]
    head_dims = [c.head_dim for c in layers]
    kv_heads = [c.num_key_value_heads for c in layers]
    for what, values in (("head_dim", head_dims), ("num_key_value_heads", kv_heads)):
        for v in values:  # nn.Linear sizes
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise Rejected(f"model: per-layer {what} {v!r} is not a positive integer")
    store = {layer_types[i]: i for i, m in enumerate(modes) if m == "store"}
    for i, m in enumerate(modes):
        if m == "reuse" and layer_types[i] not in store:  # KVSharingDict lookup fails in the forward
            raise Rejected(f"model: layer {i} reuses {layer_types[i]} KV that no layer stores")
    double = text.use_double_wide_mlp
    e["per_layer"] = {
        "head_dim": head_dims, "num_kv_heads": kv_heads,
        "intermediate_size": [text.intermediate_size * (2 if double and m == "reuse" else 1) for m in modes],
        "kv_source": [store[layer_types[i]] if m == "reuse" else i for i, m in enumerate(modes)],
    }
    # ModelSpec: head_dim / num_kv_heads are the sliding layers' (or the global
    # values without sliding layers), global_* the full-attention layers'.
    sliding = by_type.get("sliding_attention", text)
    e["head_dim"] = sliding._getattr_without_heterogeneous_validation("head_dim")
    e["num_kv_heads"] = sliding._getattr_without_heterogeneous_validation("num_key_value_heads")
    full = by_type["full_attention"]  # the last layer is always full attention
    e["global_head_dim"] = full.head_dim
    e["global_num_kv_heads"] = full.num_key_value_heads
    e["attention_k_eq_v"] = bool(text.attention_k_eq_v)
    e["double_wide_mlp"] = bool(double) and text.num_kv_shared_layers > 0
    return by_type


def _expect_rope(text, e: dict, layer_cfg: dict):
    """e["rope"], e["rope_local"] and e["inv_freq"] from the model's own rotary
    embedding; Rejected where building or applying it fails."""
    import importlib

    tmt = text.model_type
    module, name = ROTARY[tmt]
    cls = getattr(importlib.import_module(f"transformers.models.{module}.modeling_{module}"), name)
    try:
        rotary = cls(text)
    except Exception as ex:  # noqa: BLE001
        raise Rejected(f"model: rotary embedding: {type(ex).__name__}: {ex}") from None
    per_type = tmt in ("gemma3_text", "gemma4_text")  # one RoPE per layer type
    kinds = [k for k in ("full_attention", "sliding_attention") if k in e["layer_types"]]
    ropes, e["inv_freq"] = {}, {}
    for kind in kinds if per_type else [None]:
        params = text.rope_parameters[kind] if kind else text.rope_parameters  # standardized by now
        inv_freq = getattr(rotary, f"{kind}_inv_freq" if kind else "inv_freq", None)
        if inv_freq is None:
            raise Rejected(f"model: no RoPE parameters for {kind} layers")
        scaling = getattr(rotary, f"{kind}_attention_scaling" if kind else "attention_scaling")
        rope = _rope(layer_cfg.get(kind, text), params, scaling)
        if tmt not in PARTIAL_ROTARY and rope["scaling"]["type"] == "default":
            rope["partial_rotary_factor"] = 1.0  # the model's own default RoPE rotates the whole head
        for k in kinds if kind is None else [kind]:
            head_dim = layer_cfg[k].head_dim if tmt == "gemma4_text" else e["head_dim"]
            width = 2 * inv_freq.numel()  # cos/sin width
            if width > head_dim or (width < head_dim and tmt not in PARTIAL_ROTARY):
                raise Rejected(f"model: {k} RoPE cos/sin are {width} wide for {head_dim}-wide heads")
            e["inv_freq"][k] = inv_freq.tolist()
        ropes[kind] = rope
    if not per_type:
        e["rope"], e["rope_local"] = ropes[None], None
    else:
        first = ropes[kinds[0]]
        e["rope"] = first
        e["rope_local"] = ropes["sliding_attention"] if len(kinds) == 2 else None


def _rope(cfg, params: dict, attention_scaling: float) -> dict:
    """A RopeSpec (model_spec_to_json form) from a standardized RoPE dict. `scaling`
    holds only the keys its rope type reads."""
    t = params.get("rope_type", params.get("type", "default"))
    scaling = {"type": t}
    if t in ("linear", "dynamic", "llama3", "yarn", "proportional"):
        f = params.get("factor")
        scaling["factor"] = float(f) if f is not None else (1.0 if t == "proportional" else None)
    if t in ("llama3", "yarn"):
        scaling["original_max_position_embeddings"] = int(params["original_max_position_embeddings"])
    if t == "dynamic":
        scaling["original_max_position_embeddings"] = int(cfg.max_position_embeddings)
    if t == "llama3":
        scaling["low_freq_factor"] = float(params["low_freq_factor"])
        scaling["high_freq_factor"] = float(params["high_freq_factor"])
    if t == "yarn":
        scaling["beta_fast"] = float(params.get("beta_fast") or 32)
        scaling["beta_slow"] = float(params.get("beta_slow") or 1)
        scaling["attention_factor"] = float(attention_scaling)
        if params.get("factor") is None:
            scaling["factor"] = cfg.max_position_embeddings / params["original_max_position_embeddings"]
    return {"theta": float(params["rope_theta"]),
            "partial_rotary_factor": float(params.get("partial_rotary_factor", 1.0) or 1.0),
            "neox_style": True, "scaling": scaling}


# ---------------------------------------------------------------------------
# ModelSpec semantics (model_spec.h), mirrored to compare with transformers.
# ---------------------------------------------------------------------------

def spec_per_layer(spec: dict) -> dict:
    """layer_head_dim / layer_num_kv_heads / layer_intermediate_size /
    kv_source_layer of every layer, as model_spec.cc computes them."""
    L, kinds = spec["num_layers"], spec["layer_types"]
    full = [k == "full_attention" for k in kinds]
    first_shared = L - spec["num_kv_shared_layers"] if spec["num_kv_shared_layers"] > 0 else L
    source = []
    for i, k in enumerate(kinds):
        producers = [j for j in range(first_shared) if kinds[j] == k]
        source.append(i if i < first_shared else (producers[-1] if producers else -1))
    return {
        "head_dim": [spec["global_head_dim"] if f and spec["global_head_dim"] > 0 else spec["head_dim"] for f in full],
        "num_kv_heads": [spec["global_num_kv_heads"] if f and spec["global_num_kv_heads"] > 0 else spec["num_kv_heads"]
                         for f in full],
        "intermediate_size": [spec["intermediate_size"] * (2 if spec["double_wide_mlp"] and i >= first_shared else 1)
                              for i in range(L)],
        "kv_source": source,
    }


def spec_inv_freq(rope: dict, head_dim: int) -> list[float] | None:
    """RoPE inverse frequencies per the RoPE comment in hf_config.cc, for the
    types whose frequencies are fixed at load time; None for the others."""
    theta, prf, sc = rope["theta"], rope["partial_rotary_factor"], rope["scaling"]
    if sc["type"] == "proportional":
        rotated = int(prf * head_dim / 2)
        return [theta ** (-2 * i / head_dim) / sc["factor"] if i < rotated else 0.0 for i in range(head_dim // 2)]
    d = int(head_dim * prf)
    if sc["type"] in ("default", "dynamic"):
        return [theta ** (-2 * i / d) for i in range(d // 2)]
    if sc["type"] == "linear":
        return [theta ** (-2 * i / d) / sc["factor"] for i in range(d // 2)]
    return None


# ---------------------------------------------------------------------------
# Random configs: mostly plausible, with wrong types, nulls, out-of-range sizes
# and unsupported features mixed in.
# ---------------------------------------------------------------------------

TEXT_TYPES = ["llama", "qwen2", "qwen3", "qwen3_5_text", "gemma3_text", "gemma4_text", "lfm2", "olmo2"]
WRAPPERS = {"gemma3": "gemma3_text", "qwen3_5": "qwen3_5_text", "gemma4": "gemma4_text"}
_BAD = ["x", 1.5, True, None, [1], {}]
_CLASS_LAYERS = {"gemma3_text": 26, "gemma4_text": 30}


def random_config(rng: random.Random) -> dict:
    mt = rng.choice(TEXT_TYPES + list(WRAPPERS))
    if mt not in WRAPPERS:
        return dict(_random_text_fields(rng, mt), model_type=mt)
    cfg = {"model_type": mt, "text_config": dict(_random_text_fields(rng, WRAPPERS[mt]), model_type=WRAPPERS[mt])}
    if rng.random() < 0.3:
        cfg["tie_word_embeddings"] = rng.choice([True, False])
    if rng.random() < 0.3:
        cfg["eos_token_id"] = rng.choice([1, [1, 106]])
    return cfg


def _random_rope(rng: random.Random) -> dict:
    t = rng.choice(["default", "linear", "dynamic", "yarn", "llama3", "proportional", None])
    d = {}
    if t is not None:
        d["rope_type" if rng.random() < 0.8 else "type"] = t
    if rng.random() < 0.7:
        d["rope_theta"] = rng.choice([10000.0, 1e6, 500000, 5.0])
    if rng.random() < 0.3:
        d["partial_rotary_factor"] = rng.choice([0.25, 0.5, 1.0])
    if rng.random() < 0.7:
        d["factor"] = rng.choice([2.0, 4.0, 8, 32.0, 0.5, None])
    if rng.random() < 0.5:
        d["original_max_position_embeddings"] = rng.choice([1024, 4096, 8192])
    if rng.random() < 0.5:
        d["low_freq_factor"] = 1.0
    if rng.random() < 0.5:
        d["high_freq_factor"] = 4.0
    if rng.random() < 0.2:
        d["beta_fast"] = rng.choice([16, 0, None])
    if rng.random() < 0.2:
        d["attention_factor"] = rng.choice([0.9, 1.1])
    if rng.random() < 0.2:
        d["mscale"] = 0.707
        d["mscale_all_dim"] = rng.choice([1.0, 0.707])
    return d


def _random_text_fields(rng: random.Random, mt: str) -> dict:
    def pick(values, bad_p=0.05):
        return rng.choice(_BAD) if rng.random() < bad_p else rng.choice(values)

    f = {}
    if rng.random() < 0.9:
        f["num_hidden_layers"] = rng.choice([1, 2, 3, 4, 6, 7, 8, 12])
    heads = rng.choice([1, 2, 4, 8])
    if rng.random() < 0.9:
        f["num_attention_heads"] = pick([heads])
    if rng.random() < 0.8:
        f["num_key_value_heads"] = pick([1, 2, heads, None])
    if rng.random() < 0.9:
        f["hidden_size"] = pick([rng.choice([64, 96, 128, 100, 48])])
    if rng.random() < 0.5:
        f["head_dim"] = pick([16, 32, 24, None])
    if rng.random() < 0.5:
        f["intermediate_size"] = pick([128, 256, 300])
    if rng.random() < 0.5:
        f["vocab_size"] = pick([100, 1000])
    if rng.random() < 0.4:
        f["max_position_embeddings"] = pick([2048, 8192, 131072])
    if rng.random() < 0.3:
        f["tie_word_embeddings"] = pick([True, False])
    if rng.random() < 0.3:
        f["bos_token_id"] = pick([0, 1, None])
    if rng.random() < 0.3:
        f["eos_token_id"] = pick([2, [1, 2], None])
    if rng.random() < 0.3:
        f["rope_theta"] = rng.choice([10000.0, 1e6, 5])
    if rng.random() < 0.3:
        f["rope_scaling"] = rng.choice([None, {}, _random_rope(rng)])
    if rng.random() < 0.3:
        f["rope_parameters"] = _random_rope(rng)
    if rng.random() < 0.1:
        f["partial_rotary_factor"] = rng.choice([0.5, 0.25])
    if mt != "lfm2" and rng.random() < 0.1:
        key = "hidden_activation" if mt.startswith("gemma") else "hidden_act"
        f[key] = rng.choice(["silu", "gelu", "gelu_new", "relu", "gelu_pytorch_tanh"])
    n_layers = f.get("num_hidden_layers", _CLASS_LAYERS.get(mt, 32))
    kinds = {"qwen2": ["full_attention", "sliding_attention"], "qwen3": ["full_attention", "sliding_attention"],
             "qwen3_5_text": ["full_attention", "linear_attention", "attention", "mamba"],
             "gemma3_text": ["full_attention", "sliding_attention"],
             "gemma4_text": ["full_attention", "sliding_attention"],
             "lfm2": ["full_attention", "conv", "attention"]}.get(mt)
    if kinds and rng.random() < 0.4:
        n = n_layers if rng.random() < 0.9 else n_layers + 1
        f["layer_types"] = [rng.choice(kinds) for _ in range(n)]
    if mt in ("qwen2", "qwen3"):
        if rng.random() < 0.5:
            f["use_sliding_window"] = pick([True, False])
        if rng.random() < 0.5:
            f["sliding_window"] = pick([64, None])
        if rng.random() < 0.5:
            f["max_window_layers"] = rng.choice([0, 1, 2, 28])
    if mt in ("qwen3", "qwen3_5_text", "gemma3_text", "llama", "gemma4_text", "olmo2") and rng.random() < 0.3:
        f["attention_bias"] = pick([True, False])
    if mt == "llama" and rng.random() < 0.1:
        f["mlp_bias"] = rng.choice([True, False])
    if mt == "qwen3_5_text":
        for k in ["linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
                  "linear_conv_kernel_dim"]:
            if rng.random() < 0.4:
                f[k] = pick([2, 4, 8, 16])
        if rng.random() < 0.3:
            f["full_attention_interval"] = rng.choice([1, 2, 3, 4])
    if mt == "gemma3_text":
        if rng.random() < 0.4:
            f["sliding_window_pattern"] = rng.choice([1, 2, 3, 6])
        if rng.random() < 0.3:
            f["rope_local_base_freq"] = rng.choice([10000, 5000.0])
        if rng.random() < 0.3:
            f["query_pre_attn_scalar"] = pick([128, 256])
        if rng.random() < 0.3:
            f["final_logit_softcapping"] = pick([30.0, None])
        if rng.random() < 0.3:
            f["attn_logit_softcapping"] = pick([50.0, None])
        if rng.random() < 0.3:
            f["sliding_window"] = pick([512, None])
        if rng.random() < 0.2:
            f["rope_parameters"] = {"full_attention": _random_rope(rng), "sliding_attention": _random_rope(rng)}
    if mt == "gemma4_text":
        _random_gemma4_fields(rng, f, pick)
    if mt == "lfm2":
        if rng.random() < 0.4:
            f["full_attn_idxs"] = rng.sample(range(n_layers + 1), k=min(2, n_layers + 1))
        if rng.random() < 0.3:
            f["block_ff_dim"] = pick([200, 512])
        if rng.random() < 0.3:
            f["block_auto_adjust_ff_dim"] = pick([True, False])
        if rng.random() < 0.3:
            f["block_ffn_dim_multiplier"] = pick([1.0, 1.5, None])
        if rng.random() < 0.3:
            f["block_multiple_of"] = pick([32, 256])
        if rng.random() < 0.3:
            f["tie_embedding"] = pick([True, False])
        if rng.random() < 0.3:
            f["conv_L_cache"] = pick([3, 4])
        if rng.random() < 0.3:
            f["norm_eps"] = pick([1e-5, 1e-6])
        if rng.random() < 0.05:
            f["conv_bias"] = True
    elif rng.random() < 0.3:
        f["rms_norm_eps"] = pick([1e-5, 1e-6])
    return f


def _random_gemma4_fields(rng: random.Random, f: dict, pick):
    head_dim = f.get("head_dim", 256)
    r = rng.random()
    if r < 0.45:
        f["global_head_dim"] = head_dim
    elif r < 0.85:
        f["global_head_dim"] = pick([2 * head_dim if isinstance(head_dim, int) else 512, 512, 48, 9])
    # else: absent (default 512)
    if rng.random() < 0.3:
        f["attention_k_eq_v"] = pick([True, False])
    if rng.random() < 0.3:
        f["num_global_key_value_heads"] = pick([1, 2, 3, None])
    if rng.random() < 0.4:
        f["num_kv_shared_layers"] = rng.choice([0, 1, 2, 3])
    if rng.random() < 0.3:
        f["use_double_wide_mlp"] = pick([True, False])
    if rng.random() < 0.4:
        f["hidden_size_per_layer_input"] = rng.choice([0, 8, 16])
    if rng.random() < 0.7:
        vocab = f.get("vocab_size", 262144)
        f["vocab_size_per_layer_input"] = vocab if isinstance(vocab, int) else 5
    if rng.random() < 0.3:
        f["final_logit_softcapping"] = pick([30.0, None])
    if rng.random() < 0.3:
        f["sliding_window"] = pick([512, 64])
    if rng.random() < 0.05:
        f["enable_moe_block"] = True
    if rng.random() < 0.05:
        f["use_bidirectional_attention"] = rng.choice(["vision", "all", None])
    if rng.random() < 0.3:
        f["rope_parameters"] = {"full_attention": _random_rope(rng), "sliding_attention": _random_rope(rng)}
    else:
        f.pop("rope_parameters", None)
    if rng.random() < 0.9:  # Gemma 4 has no rope_scaling; keep a few to check the refusal
        f.pop("rope_scaling", None)
    if rng.random() < 0.35:
        _random_per_layer_config(rng, f)


def _random_per_layer_config(rng: random.Random, f: dict):
    """transformers 5's own spelling (per_layer_config instead of global_head_dim),
    sometimes with overrides ModelSpec or transformers cannot take."""
    try:
        f.update(json.loads(Gemma4TextConfig.from_dict(dict(f, model_type="gemma4_text")).to_json_string()))
        f.pop("model_type")
    except Exception:  # noqa: BLE001 - the config is broken anyway; overrides on raw fields
        f["per_layer_config"] = {}
    n_layers = f.get("num_hidden_layers", 30)
    if not isinstance(n_layers, int) or n_layers <= 0:
        return
    plc = {int(k): v for k, v in f["per_layer_config"].items()}
    r = rng.random()
    if r < 0.15:  # one layer differs from the others of its type
        plc[rng.randrange(n_layers)] = {rng.choice(["head_dim", "num_key_value_heads"]): rng.choice([8, 2, 64])}
    elif r < 0.25:  # every layer of a type overridden alike
        kinds = f.get("layer_types") or []
        kind = rng.choice(["full_attention", "sliding_attention"])
        for i in range(n_layers):
            if i < len(kinds) and kinds[i] == kind:
                plc[i] = dict(plc.get(i, {}), head_dim=64)
    elif r < 0.3:
        plc[rng.randrange(n_layers)] = {"intermediate_size": 77}
    elif r < 0.35:
        plc[rng.randrange(n_layers)] = {"head_dim": rng.choice(["x", 0, 33.0, None])}
    elif r < 0.4:
        plc[n_layers] = {}
    # Keys as transformers writes them: zero-padded to the widest index.
    width = len(str(max(plc))) if plc else 1
    f["per_layer_config"] = {str(i).zfill(width): v for i, v in sorted(plc.items())}
    if plc and rng.random() < 0.05:  # the same layer under two spellings
        i = rng.choice(list(plc))
        f["per_layer_config"][str(i).zfill(width + 1)] = {"head_dim": 48}
