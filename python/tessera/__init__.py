"""Tessera: on-device LLM inference runtime (Python bindings)."""

import importlib.util as _util

if _util.find_spec(__name__ + "._tessera") is not None:  # installed wheel
    from . import _tessera as _core
else:  # in-tree build: build/python is on PYTHONPATH (a broken module still raises)
    import _tessera as _core

__version__ = _core.__version__

# Every tessera::Error raised through the bindings (a ValueError subclass).
TesseraError = _core.TesseraError
GgufFile = _core.GgufFile
# Tokenizer.from_file(GGUF | tokenizer.json | HF dir): encode / decode exactly as Hugging Face.
Tokenizer = _core.Tokenizer
# Model(path, threads=0, chunks=0, prefill_sizes=[], verify=False, isa="", row_block=-1,
#       arithmetic="fast", kv_type="f32", weights_memory="auto", reference=False) and Session(model, context_length=0):
# threads=0: this machine's physical cores; arithmetic: "fast" (one int8 activation pass) or "exact" (two);
# Model.threads / .arithmetic / .isa say what it runs with.
# a GGUF / HF directory / pulled name runs through its cached default bundle
# (converted on first use into $TESSERA_HOME/bundles; Model.path is that
# bundle), unless reference=True (the source dequantized to f32, as Tessera's
# exact reference computation).
# Session.forward(ids, all_logits=True) -> logits ndarray [rows, vocab];
# Session.generate(ids, max_tokens, **settings) (any GenerationSettings field by name, e.g.
# speculative="off"|"lookup"|"auto"|"draft:PATH"|"draft-all:PATH"|"lookup+draft:PATH", draft_max=8)
# -> dict with "ids", "text", "finish_reason", "decode_tokens", "decode_seconds" and "speculative" (drafted, accepted,
# verify_calls, refeeds): speculative decoding with prompt-lookup drafts, greedy output identical to "off";
# Session.argmax_as_decode(ids): a greedy verify call (each row's argmax with a decode step's bits);
# Session.kv_bytes: the bytes its KV cache holds (kv_type="f16": half of f32's).
Model = _core.Model
Session = _core.Session
# decode_batch([s0, s1, ...], [id0, id1, ...]) -> logits ndarray [sessions, vocab]: one
# decode step of several sessions of one model in one call of the programs, each row
# bit for bit its session's own decode step (Session::decode_batch).
decode_batch = _core.decode_batch
# Engine(model, threads=0, slots=1, ..., arithmetic="fast").generate(prompt | messages= | prompt_ids=, **settings)
# -> GenerationResult, .stream(...) -> iterator of text pieces, .reset():
# the engine that `tessera serve` and the C / C++ APIs use (python/tessera/engine.py).
from .engine import Engine, GenerationResult, TextStream  # noqa: E402
# GenerationSettings: every generation setting (max_tokens, temperature, ..., speculative, draft_max) with
# its type, default and doc, made from the runtime's one list (include/tessera/generation_settings.hpp);
# the keyword arguments of Engine.generate / stream and Session.generate (python/tessera/settings.py).
from .settings import GenerationSettings  # noqa: E402
# calibrate(source, text="", max_tokens=512, threads=1) -> {"ids", "random_ids",
# "input_moments": {weight: E[x_c^2] per input column}}: what `tessera convert`
# weighs activation-aware palettes with (convert/calibration.h).
calibrate = _core.calibrate


def spec_from_hf_config(config: "dict | str") -> dict:
    """ModelSpec of a Hugging Face config.json, as a dict with model_spec_to_json's
    field names. `config` is the parsed config (a dict) or its JSON text; every
    problem the C++ reader reports raises TesseraError."""
    import json

    text = config if isinstance(config, str) else json.dumps(config)
    return json.loads(_core.spec_from_hf_config(text))


def oracle_corpus_path() -> str:
    """Path of the determinism oracle's prompt corpus (`tessera oracle`'s
    default), shipped as package data: tessera/data/oracle_prompts.json."""
    from importlib import resources

    return str(resources.files(__name__) / "data" / "oracle_prompts.json")
