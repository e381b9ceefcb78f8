"""Tessera on Ray Serve: N replicas of tessera.Engine behind one
OpenAI-compatible endpoint, with a conversation-affinity request router so
that each turn of a conversation reaches the replica that holds its earlier
turns' KV (and prefills only what the turn adds).

    pip install 'tessera[ray]'        # or: pip install 'ray[serve]'
    python -m tessera.ray_serve smollm2-135m-instruct --replicas 2 --threads 1 --port 8000

    client = openai.OpenAI(base_url="http://127.0.0.1:8000/v1", api_key="unused")

Routes: POST /v1/chat/completions (`stream` with server-sent events as
tessera serve sends them, `tools`, `chat_template_kwargs` and every
generation setting by its name), GET /v1/models, GET /health. Each
response carries `usage.prompt_tokens_details.cached_tokens`, Tessera's
`timings` and `replica` (the replica's id and pid); a stream carries the
usage only with stream_options.include_usage. A reply's reasoning comes
back as `reasoning_content`.

Routing (ConversationAffinityRouter): a request's key is its message list;
after a request is routed its key is remembered with the replica. A new
request goes to the replica that served the longest earlier message list
that is a prefix of its own (turn n + 1 starts with turn n's messages), and
otherwise to a replica drawn at random (then the others, if it is full).
Only whole conversations are keys, not shared system prompts alone, so
conversations that share a system prompt still spread over the replicas
(each replica's prefix cache serves the shared part).

A replica that dies fails only the requests in flight on it, each with a
503 OpenAI-shaped error (a stream: an error event before [DONE]); Ray Serve restarts it and the other replicas keep
serving. No home-made cluster layer: scale-out, health checks and restarts
are Ray Serve's."""

import argparse
import hashlib
import json
import os
import time
import random
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import List, Optional

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from ray import serve
from ray.serve._private.request_router.request_router import RequestRouter
from ray.serve.config import RequestRouterConfig

# Settings requests may set, by the names of tessera.GenerationSettings.
_SETTINGS = None


def _setting_names():
    global _SETTINGS
    if _SETTINGS is None:
        from .settings import FIELDS
        _SETTINGS = {name for name, *_ in FIELDS}
    return _SETTINGS


@dataclass
class ChatCall:
    """What the ingress hands a replica; the router reads `messages`."""
    messages: list
    settings: dict = field(default_factory=dict)
    tools: Optional[list] = None
    tool_choice: object = "auto"
    parallel_tool_calls: bool = True
    chat_template_kwargs: Optional[dict] = None


def _key(messages: list) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()


class ConversationAffinityRouter(RequestRouter):
    """Routes a conversation's next turn to the replica that served the
    previous one (the module's docstring says how)."""

    def initialize_state(self, max_conversations: int = 100_000):
        self._owner = OrderedDict()  # message-list key -> replica id, LRU
        self._max = max_conversations

    @staticmethod
    def _messages(pending_request) -> Optional[list]:
        for arg in getattr(pending_request, "args", ()) or ():
            if isinstance(arg, ChatCall):
                return arg.messages
        return None

    async def choose_replicas(self, candidate_replicas, pending_request=None):
        messages = self._messages(pending_request) if pending_request is not None else None
        if messages:
            by_id = {r.replica_id: r for r in candidate_replicas}
            for n in range(len(messages) - 1, 0, -1):  # the longest earlier conversation first
                owner = self._owner.get(_key(messages[:n]))
                if owner in by_id:
                    return [[by_id[owner]]]
        # None known: a replica drawn at random first (conversations that
        # arrive together are routed before any is recorded, so counts or
        # queue lengths would send them all to one), the others after it.
        ranked = random.sample(list(candidate_replicas), len(candidate_replicas))
        return [ranked[:1], ranked[1:]] if len(ranked) > 1 else [ranked]

    def on_request_routed(self, pending_request, replica_id, result):
        messages = self._messages(pending_request)
        if not messages:
            return
        key = _key(messages)
        self._owner[key] = replica_id
        self._owner.move_to_end(key)
        while len(self._owner) > self._max:
            self._owner.popitem(last=False)

    def on_replica_actor_died(self, replica_id):
        super().on_replica_actor_died(replica_id)
        for key in [k for k, v in self._owner.items() if v == replica_id]:
            del self._owner[key]


@serve.deployment(
    request_router_config=RequestRouterConfig(request_router_class=ConversationAffinityRouter),
    ray_actor_options={"num_cpus": 0},
    max_ongoing_requests=16,
)
class TesseraReplica:
    def __init__(self, model: str, threads: int, slots: int, context_length: int = 0):
        import tessera
        self.engine = tessera.Engine(model, threads=threads, slots=slots, context_length=context_length)
        self.replica = {"id": serve.get_replica_context().replica_id.unique_id, "pid": os.getpid()}

    def chat(self, call: ChatCall) -> dict:
        start = time.time()
        r = self.engine.chat(call.messages, tools=call.tools, tool_choice=call.tool_choice,
                             parallel_tool_calls=call.parallel_tool_calls,
                             chat_template_kwargs=call.chat_template_kwargs, **call.settings)
        message = {"role": "assistant", "content": r.text}
        if r.reasoning:
            message["reasoning_content"] = r.reasoning
        finish = "length" if r.finish_reason in ("length", "context") else "stop"
        if r.tool_calls:
            message["content"] = r.text or None
            message["tool_calls"] = [{"id": c["id"], "type": "function",
                                      "function": {"name": c["name"], "arguments": c["arguments"]}}
                                     for c in r.tool_calls]
            finish = "tool_calls" if finish == "stop" else finish
        return self._reply_object(start, r, message, finish)

    def chat_stream(self, call: ChatCall):
        """The reply as OpenAI's chunk objects (without id and model, which
        the ingress adds), as they are written: reasoning_content, content
        and tool_calls deltas, then the finish reason and the usage."""
        start = time.time()
        stream = self.engine.chat_stream(call.messages, tools=call.tools, tool_choice=call.tool_choice,
                                         parallel_tool_calls=call.parallel_tool_calls,
                                         chat_template_kwargs=call.chat_template_kwargs, **call.settings)
        first = True
        for d in stream:
            if "reasoning" in d:
                delta = {"reasoning_content": d["reasoning"]}
            elif "content" in d:
                delta = {"content": d["content"]}
            else:
                piece = {"index": d["index"], "function": {"arguments": d["arguments"]}}
                if "id" in d:
                    piece.update(id=d["id"], type="function")
                    piece["function"]["name"] = d["name"]
                delta = {"tool_calls": [piece]}
            if first:
                delta = {"role": "assistant", **delta}
                first = False
            yield {"object": "chat.completion.chunk", "created": int(start),
                   "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        r = stream.result
        finish = "length" if r.finish_reason in ("length", "context") else "stop"
        if r.tool_calls and finish == "stop":
            finish = "tool_calls"
        final = self._reply_object(start, r, {}, finish)
        final["object"] = "chat.completion.chunk"
        final["choices"] = [{"index": 0, "delta": {}, "finish_reason": finish}]
        yield final

    def _reply_object(self, start: float, r, message: dict, finish: str) -> dict:
        completion = len(r.ids)
        return {
            "object": "chat.completion", "created": int(start),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": r.prompt_tokens, "completion_tokens": completion,
                      "total_tokens": r.prompt_tokens + completion,
                      "prompt_tokens_details": {"cached_tokens": r.reused_tokens}},
            "timings": {"ttft_ms": r.ttft_ms, "prefill_tok_s": r.prefill_tok_s, "decode_tok_s": r.decode_tok_s,
                        "reused_tokens": r.reused_tokens, "reused_from": r.reused_from},
            "replica": self.replica,
        }


def _error(status: int, message: str, param: str = "", code: str = ""):
    return JSONResponse(status_code=status, content={"error": {
        "message": message, "type": "invalid_request_error" if status < 500 else "server_error",
        "param": param or None, "code": code or None}})


def _ingress(model_name: str):
    app = FastAPI()

    @serve.deployment(ray_actor_options={"num_cpus": 0}, max_ongoing_requests=256)
    @serve.ingress(app)
    class OpenAIIngress:
        def __init__(self, replicas):
            self.replicas = replicas

        @app.get("/health")
        def health(self):
            return {"status": "ok"}

        @app.get("/v1/models")
        def models(self):
            return {"object": "list", "data": [{"id": model_name, "object": "model", "owned_by": "tessera"}]}

        @app.post("/v1/chat/completions")
        async def chat(self, request: Request):
            try:
                body = await request.json()
            except ValueError:
                return _error(400, "the request body is not valid JSON", code="invalid_json")
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
                return _error(400, "'messages' must be a non-empty list", "messages")
            if body.get("model") not in (None, model_name):
                return _error(404, f"model '{body['model']}' does not exist; this endpoint serves '{model_name}'",
                              "model", "model_not_found")
            names = _setting_names()
            settings = {k: v for k, v in body.items() if k in names}
            if "max_completion_tokens" in body:
                settings["max_tokens"] = body["max_completion_tokens"]
            settings.setdefault("temperature", 1.0)  # OpenAI's default
            if isinstance(settings.get("stop"), str):
                settings["stop"] = [settings["stop"]]
            call = ChatCall(messages=body["messages"], settings=settings, tools=body.get("tools"),
                            tool_choice=body.get("tool_choice", "auto"),
                            parallel_tool_calls=body.get("parallel_tool_calls", True),
                            chat_template_kwargs=body.get("chat_template_kwargs"))
            if body.get("stream"):
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                return StreamingResponse(self._stream(call, include_usage), media_type="text/event-stream",
                                         headers={"Cache-Control": "no-cache"})
            try:
                reply = await self.replicas.chat.remote(call)
            except Exception as e:  # noqa: BLE001 (the replica's error, or its death)
                text = str(e)
                if "TesseraError" in type(e).__name__ or "TesseraError" in text:
                    return _error(400, text.splitlines()[-1] if text else "bad request")
                return _error(503, f"the replica serving this request failed: {type(e).__name__}", code="replica_failed")
            reply["id"] = "chatcmpl-" + os.urandom(8).hex()
            reply["model"] = model_name
            return reply

        async def _stream(self, call: ChatCall, include_usage: bool):
            """Server-sent events of the replica's chunks; a replica that
            fails mid-reply ends the stream with an error event."""
            reply_id = "chatcmpl-" + os.urandom(8).hex()
            try:
                async for chunk in self.replicas.options(stream=True).chat_stream.remote(call):
                    usage = chunk.pop("usage", None)
                    chunk.update(id=reply_id, model=model_name)
                    yield f"data: {json.dumps(chunk)}\n\n"
                    if usage is not None and include_usage:
                        yield f"data: {json.dumps({'id': reply_id, 'object': 'chat.completion.chunk', 'model': model_name, 'choices': [], 'usage': usage})}\n\n"
            except Exception as e:  # noqa: BLE001 (the replica's error, or its death)
                text = str(e)
                bad = "TesseraError" in type(e).__name__ or "TesseraError" in text
                yield "data: " + json.dumps({"error": {
                    "message": text.splitlines()[-1] if bad and text else
                    f"the replica serving this request failed: {type(e).__name__}",
                    "type": "invalid_request_error" if bad else "server_error",
                    "code": None if bad else "replica_failed"}}) + "\n\n"
            yield "data: [DONE]\n\n"

    return OpenAIIngress


def build(model: str, replicas: int = 2, threads: int = 1, slots: int = 4, model_name: str = "",
          context_length: int = 0):
    """The Ray Serve application: `serve.run(build(...))`."""
    name = model_name or os.path.basename(str(model).rstrip("/"))
    replica = TesseraReplica.options(num_replicas=replicas).bind(model, threads, slots, context_length)
    return _ingress(name).bind(replica)


def main(argv: Optional[List[str]] = None):
    ap = argparse.ArgumentParser(prog="python -m tessera.ray_serve", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="bundle, GGUF, HF checkpoint directory or pulled model name")
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="compute threads per replica")
    ap.add_argument("--parallel", type=int, default=4, help="conversations each replica keeps (slots)")
    ap.add_argument("-c", "--ctx", type=int, default=0, help="context length per slot (0: the model's)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--model-name", default="")
    args = ap.parse_args(argv)
    import ray
    # A small machine busy loading models answers Ray Serve's proxy
    # readiness probe late; its 5 s default then kills the proxy.
    os.environ.setdefault("RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S", "60")
    os.environ.setdefault("RAY_SERVE_PROXY_HEALTH_CHECK_TIMEOUT_S", "60")
    ray.init(include_dashboard=False, configure_logging=False)
    serve.start(http_options={"host": args.host, "port": args.port})
    serve.run(build(args.model, args.replicas, args.threads, args.parallel, args.model_name, args.ctx), name="tessera",
              route_prefix="/")
    print(f"listening on http://{args.host}:{args.port} ({args.replicas} replicas)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        serve.shutdown()


if __name__ == "__main__":
    main()
