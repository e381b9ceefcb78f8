"""tessera.Engine: load a model once, then generate or stream text from
prompts, chat messages or token ids.

    engine = tessera.Engine("smollm2-135m-instruct", threads=2)
    result = engine.generate(messages=[{"role": "user", "content": "Hi!"}], max_tokens=64)
    for piece in engine.stream("Once upon a time", max_tokens=64):
        print(piece, end="", flush=True)

The engine keeps the KV state of the last `slots` conversations: a prompt
that starts with tokens a slot already holds (earlier turns of a chat)
prefills only the rest, and the result says how many were reused
(`reused_tokens`) and, when fewer than were shared, why (`reuse_note`).
The computation runs on the engine's own thread with the GIL released, so
other Python threads keep running; requests from several threads queue up
and run together, their decode steps batched (up to `slots` at once).
generate() and stream() take every generation setting as a keyword argument
(tessera.GenerationSettings lists them with their defaults)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

from .settings import settings_arguments, with_settings


@dataclass(frozen=True)
class GenerationResult:
    text: str
    ids: list[int]
    finish_reason: str  # "eos" | "stop" | "length" | "context" | "cancelled"
    prompt_tokens: int
    reused_tokens: int
    reuse_note: str
    reused_from: str  # "slot" | "prefix cache" | "disk" | "" (nothing reused)
    ttft_ms: float
    prefill_tok_s: float
    decode_tok_s: float
    # Engine.chat with tools: the calls the reply made, each {"id", "name",
    # "arguments" (JSON text)}; `text` is then the reply's other content.
    tool_calls: list = ()
    # Engine.chat on a template with reasoning markers (<think>, Gemma 4's
    # thought channel): the reasoning, split off `text`.
    reasoning: str = ""


class ChatStream:
    """Engine.chat_stream's iterator of reply deltas; `cancel()` (or
    dropping it) stops the generation at its next token."""

    def __init__(self, handle):
        self._handle = handle
        self._pending: list = []
        self.result: Optional[GenerationResult] = None

    def __iter__(self) -> Iterator[dict]:
        return self

    def __next__(self) -> dict:
        while not self._pending:
            try:
                self._pending = list(self._handle.next_deltas())
            except StopIteration:
                if self.result is None:
                    self.result = GenerationResult(**self._handle.result())
                raise
        return self._pending.pop(0)

    def cancel(self) -> None:
        self._handle.cancel()


class TextStream:
    """An iterator of text pieces as they become final. After it is
    exhausted, `result` holds the GenerationResult; `cancel()` (or dropping
    the iterator) stops the generation at its next token."""

    def __init__(self, handle):
        self._handle = handle
        self.result: Optional[GenerationResult] = None

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        try:
            return next(self._handle)
        except StopIteration:
            if self.result is None:
                self.result = GenerationResult(**self._handle.result())
            raise

    def cancel(self) -> None:
        self._handle.cancel()


def _png_of(pixels) -> bytes:
    """A uint8 array [height, width, 3] (RGB) as PNG bytes: lossless, so the
    engine decodes exactly these pixels."""
    import struct
    import zlib
    import numpy as np
    a = np.asarray(pixels)
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3 or a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"an image array must be uint8 [height, width, 3] (RGB), not {a.dtype} {list(a.shape)}")
    h, w, _ = a.shape
    rows = np.concatenate([np.zeros((h, 1), np.uint8), np.ascontiguousarray(a).reshape(h, w * 3)], axis=1)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + chunk(b"IEND", b""))


def _image_bytes(image) -> bytes:
    """An image file's bytes: the bytes themselves, a path, or a uint8 RGB
    array [height, width, 3] (written as a PNG)."""
    if isinstance(image, (bytes, bytearray, memoryview)):
        return bytes(image)
    if isinstance(image, (str, os.PathLike)):
        with open(image, "rb") as f:
            return f.read()
    if hasattr(image, "__array__"):
        return _png_of(image)
    raise TypeError(f"an image is a path, the file's bytes or a uint8 array, not {type(image).__name__}")


class Engine:
    def __init__(self, model: str, *, threads: int = 0, slots: int = 1, queue_capacity: int = 16,
                 context_length: int = 0, kv_type: str = "f32", reference: bool = False,
                 prefix_cache_mb: int = 256, prefix_cache_disk_mb: int = 0, prefix_cache_dir: str = "",
                 arithmetic: str = "fast", mmproj: str = ""):
        """`model`: a bundle directory, GGUF file, HF checkpoint directory or
        pulled model name (converted once into the bundle cache).
        `threads`: compute threads, 0 for this machine's physical cores.
        `arithmetic`: "fast" (one int8 activation pass, the default) or "exact" (two).
        `prefix_cache_mb`: session state kept for shared prompt prefixes
        (system prompts), 0 to keep only the slots' own.
        `prefix_cache_disk_mb`: also keep those states as files that outlive
        the process (0: off), in `prefix_cache_dir` (default
        $TESSERA_HOME/prefix-cache/<model>).
        `mmproj`: a vision projector GGUF (llama.cpp's mmproj file; Gemma
        3's) that lets a GGUF text model take `images=`."""
        from . import _core

        self._engine = _core.Engine(str(model), threads, slots, queue_capacity, context_length, kv_type, reference,
                                    prefix_cache_mb, prefix_cache_disk_mb, prefix_cache_dir, arithmetic,
                                    str(mmproj))

    @property
    def model_path(self) -> str:
        return self._engine.model_path

    def _submit(self, caller, prompt, messages, prompt_ids, settings, images=()):
        return self._engine.submit(
            prompt, None if messages is None else json.dumps(list(messages)), list(prompt_ids or []),
            settings_arguments(caller, settings), [_image_bytes(i) for i in images or ()])

    @with_settings
    def generate(self, prompt: Optional[str] = None, *, messages: Optional[Sequence[dict]] = None,
                 prompt_ids: Optional[Sequence[int]] = None, images: Sequence = (), **settings) -> GenerationResult:
        """Generates a reply to exactly one of `prompt` (text), `messages`
        (chat, rendered with the model's template) and `prompt_ids`, with any
        generation settings (below) as keyword arguments; `stop` may also be
        one string. `images`: JPEG / PNG files (paths or bytes) or uint8 RGB arrays
        [height, width, 3], one per
        {"type": "image"} content part of the messages (or image mark of the
        prompt), for a model with an image encoder (a multimodal Hugging Face
        checkpoint directory). Raises TesseraError for bad settings, a prompt
        that does not fit the context, a bad image, or a full queue."""
        handle = self._submit("generate", prompt, messages, prompt_ids, settings, images)
        return GenerationResult(**handle.result())

    @with_settings
    def stream(self, prompt: Optional[str] = None, *, messages: Optional[Sequence[dict]] = None,
               prompt_ids: Optional[Sequence[int]] = None, images: Sequence = (), **settings) -> TextStream:
        """As generate(), but returns an iterator of text pieces."""
        return TextStream(self._submit("stream", prompt, messages, prompt_ids, settings, images))

    @with_settings
    def chat(self, messages: Sequence[dict], *, tools: Optional[Sequence[dict]] = None, tool_choice="auto",
             parallel_tool_calls: bool = True, chat_template_kwargs: Optional[dict] = None,
             split_reasoning: bool = True, **settings) -> GenerationResult:
        """A chat reply to `messages` (OpenAI's shape: roles system, user,
        assistant with optional `tool_calls`, tool with `tool_call_id`) that
        may call `tools` (OpenAI's [{"type": "function", "function": {"name",
        "description", "parameters"}}]): `tool_choice` "auto", "none",
        "required" or {"type": "function", "function": {"name": ...}}. The
        calls come back in `tool_calls`, their arguments valid against each
        tool's parameters (the reply is constrained, as the server's is).
        `chat_template_kwargs`: the template's extra variables (such as
        {"enable_thinking": False}). A reply's reasoning (a template with
        <think> or Gemma 4's thought channel) comes back in `reasoning`
        unless `split_reasoning` is False. Takes every generation setting as
        a keyword argument, as generate()."""
        handle = self._engine.submit_chat(json.dumps(list(messages)), json.dumps(list(tools or [])),
                                          json.dumps(tool_choice), parallel_tool_calls,
                                          settings_arguments("chat", settings),
                                          json.dumps(chat_template_kwargs or {}), split_reasoning)
        return GenerationResult(**handle.result())

    def chat_stream(self, messages: Sequence[dict], *, tools: Optional[Sequence[dict]] = None, tool_choice="auto",
                    parallel_tool_calls: bool = True, chat_template_kwargs: Optional[dict] = None,
                    split_reasoning: bool = True, **settings) -> "ChatStream":
        """As chat(), but returns an iterator of deltas as the reply is
        written: {"reasoning": text}, {"content": text}, or a piece of call
        `index` {"index", "id", "name", "arguments"} (id and name on its
        first piece; the arguments pieces concatenate to the call's). After
        it is exhausted, `result` holds the GenerationResult."""
        handle = self._engine.submit_chat(json.dumps(list(messages)), json.dumps(list(tools or [])),
                                          json.dumps(tool_choice), parallel_tool_calls,
                                          settings_arguments("chat", settings),
                                          json.dumps(chat_template_kwargs or {}), split_reasoning)
        return ChatStream(handle)

    def reset(self) -> None:
        """Forgets every conversation's KV state."""
        self._engine.reset()
