"""Tool calling through `tessera serve` with the official `openai` client:
SmolLM2-135M (a template without tools: the generic JSON style) and tiny
random models with real chat templates: Qwen3 (the Hermes <tool_call>
style), Llama 3.2 (bare JSON), Qwen3.5 (XML calls), Gemma 4 (its
<|tool_call>call: format), LFM2 (Python calls), DeepSeek V3.1 / R1 and
Kimi K2 and MiniMax M1 (marker-wrapped blocks of calls), DeepSeek V3.2 (DSML
XML), Command R7B and Apriel 1.5 (JSON lists of calls), Solar Open, Kimi K3
and muse-glimmer (messages framed by headers of their own) and Hy3;
reasoning split off as reasoning_content.
Calls are schema-valid (arguments validated with `jsonschema`), streamed
deltas concatenate to the whole reply's calls, tool results go back in as
`tool` messages, and bad tool requests are 400s naming the field."""

import json
from pathlib import Path

import pytest

from serve_helpers import Server
from tiny_models import make_tiny_chat_checkpoint

openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")

SMOLLM2 = "smollm2-135m-instruct"
TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "chat_templates"

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city today",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 24},
        "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The time in a time zone",
    "parameters": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET", "PST"]}}, "required": ["zone"]}}}
TOOLS = [WEATHER, TIME]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
ASK = [{"role": "user", "content": "What is the weather in Paris today?"}]


# Templates whose prompt opens a reasoning block unless told not to: a tiny
# random model would reason until max_tokens.
NO_THINKING = {"chat_template_kwargs": {"enable_thinking": False}}


PEER_TEMPLATES = {"tiny-llama3": ("meta-llama-Llama-3.2-3B-Instruct.jinja", "llama3"),
                  "tiny-deepseek-v3": ("deepseek-ai-DeepSeek-V3.1.jinja", "deepseek_v3"),
                  "tiny-deepseek-r1": ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "deepseek_r1"),
                  "tiny-kimi": ("moonshotai-Kimi-K2.jinja", "kimi"),
                  # M1: M2's template always opens <think>, which a random model never closes
                  # (gpt-oss's harmony alike: a random model that opens the analysis
                  # channel writes it until max_tokens; test_tool_templates covers it).
                  "tiny-minimax-m1": ("MiniMax-M1.jinja", "minimax_json"),
                  "tiny-deepseek-v3.2": ("deepseek-ai-DeepSeek-V3.2.jinja", "deepseek_v3_2"),
                  "tiny-command-r7b": ("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", "command_r"),
                  "tiny-apriel": ("unsloth-Apriel-1.5.jinja", "apriel"),
                  "tiny-solar": ("upstage-Solar-Open-100B.jinja", "solar_open"),
                  "tiny-kimi-k3": ("Kimi-K3.jinja", "kimi_k3"),
                  "tiny-muse": ("muse-glimmer.jinja", "atem"),
                  "tiny-hy3": ("tencent-Hy3.jinja", "hy3")}
# Kimi K3's prompt opens a thinking block unless told not to.
PEER_EXTRA = {"tiny-kimi-k3": {"chat_template_kwargs": {"thinking": False}}}


@pytest.fixture(scope="module", params=["smollm2", "tiny-qwen3", "tiny-llama3", "tiny-qwen3.5", "tiny-gemma4",
                                                "tiny-lfm2", "tiny-deepseek-v3", "tiny-deepseek-r1", "tiny-kimi",
                                                "tiny-minimax-m1", "tiny-deepseek-v3.2", "tiny-command-r7b",
                                                "tiny-apriel", "tiny-solar", "tiny-kimi-k3",
                                                "tiny-muse", "tiny-hy3"])
def served(request, pulled_model_path, tmp_path_factory):
    """(server, style): SmolLM2 (generic), a tiny Qwen3 with its real template
    (hermes), a tiny Llama with Llama 3.2's (llama3, from llama.cpp's
    template collection), a tiny Qwen3.5 with its own (qwen_xml, thinking
    off), a tiny Gemma 4 with its own (gemma4), a tiny LFM2 with its own
    (pythonic), and tiny Llamas with DeepSeek V3.1's, DeepSeek R1 Distill
    Qwen's, Kimi K2's, MiniMax M1's, DeepSeek V3.2's, Command R7B's,
    Apriel 1.5's, Solar Open's, Kimi K3's,
    muse-glimmer's (ATEM) and Hy3's templates from the same collection."""
    extra_body = None
    if request.param == "smollm2":
        model, env, style = pulled_model_path(SMOLLM2), {}, "generic"
    else:
        if request.param == "tiny-qwen3":
            name, template, style = "qwen3", (TEMPLATES / "qwen3.jinja").read_text(), "hermes"
            extra_body = NO_THINKING
        elif request.param == "tiny-qwen3.5":
            name, template, style = "qwen3_5", (TEMPLATES / "qwen3.5.jinja").read_text(), "qwen_xml"
            extra_body = NO_THINKING
        elif request.param == "tiny-gemma4":
            name, template, style = "gemma4", (TEMPLATES / "gemma4.jinja").read_text(), "gemma4"
        elif request.param == "tiny-lfm2":
            name, template, style = "lfm2", (TEMPLATES / "lfm2.jinja").read_text(), "pythonic"
        else:
            from llamacpp_peer import peer_dir
            file, style = PEER_TEMPLATES[request.param]
            name, template = "llama", (peer_dir() / "models" / "templates" / file).read_text()
            extra_body = PEER_EXTRA.get(request.param)
        directory = tmp_path_factory.mktemp(f"tiny_{name}")
        # Command R7B's tool prompt is ~6,400 byte tokens.
        context = 8192 if style == "command_r" else 4096
        model = str(make_tiny_chat_checkpoint(name, directory, template, context=context))
        env = {"TESSERA_HOME": str(tmp_path_factory.mktemp("home"))}
    with Server(model, "--threads", 2, env=env) as s:
        s.chat_extra = extra_body
        # A byte tokenizer spells each of DeepSeek's and Kimi's markers
        # (special tokens of the real models) in 20-30 tokens.
        s.max_tokens = 400 if style in ("deepseek_v3", "deepseek_r1", "kimi", "deepseek_v3_2", "command_r",
                                        "solar_open", "kimi_k3", "atem", "hy3") else 160
        yield s, style


def client_of(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def chat(server, messages=ASK, **kw):
    # One call per reply unless a test asks for more: a 135M model allowed
    # several repeats the same call until max_tokens.
    kw.setdefault("parallel_tool_calls", False)
    kw.setdefault("max_tokens", getattr(server, "max_tokens", 160))
    kw.setdefault("temperature", 0)
    if getattr(server, "chat_extra", None):
        kw["extra_body"] = {**server.chat_extra, **kw.get("extra_body", {})}
    return client_of(server).chat.completions.create(model=server.model_name, messages=messages, tools=TOOLS, **kw)


def check_calls(message):
    assert message.tool_calls, message.content
    for call in message.tool_calls:
        assert call.type == "function" and call.id.startswith("call_")
        jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])
    return message.tool_calls


def test_required_calls_are_schema_valid(served):
    server, _ = served
    for temperature in (0, 0.8):
        reply = chat(server, tool_choice="required", temperature=temperature, seed=1)
        check_calls(reply.choices[0].message)
        assert reply.choices[0].finish_reason == "tool_calls"


def test_named_choice_and_no_parallel_calls(served):
    server, _ = served
    reply = chat(server, tool_choice={"type": "function", "function": {"name": "get_time"}},
                 parallel_tool_calls=False)
    calls = check_calls(reply.choices[0].message)
    assert [c.function.name for c in calls] == ["get_time"]


def test_streamed_calls_concatenate_to_the_whole(served):
    server, _ = served
    whole = chat(server, tool_choice="required").choices[0].message
    calls, finish = {}, None
    for chunk in chat(server, tool_choice="required", stream=True):
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for d in choice.delta.tool_calls or []:
                c = calls.setdefault(d.index, {"id": None, "name": None, "arguments": ""})
                if d.id:
                    c["id"], c["name"] = d.id, d.function.name
                c["arguments"] += d.function.arguments or ""
    assert [(c["name"], c["arguments"]) for _, c in sorted(calls.items())] == \
        [(c.function.name, c.function.arguments) for c in whole.tool_calls]
    assert finish == "tool_calls"


def test_tool_results_go_back_in(served):
    server, _ = served
    first = chat(server, tool_choice="required").choices[0].message
    call = first.tool_calls[0]
    messages = ASK + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call.id, "type": "function",
             "function": {"name": call.function.name, "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temperature": 21, "sky": "clear"})}]
    reply = chat(server, messages, tool_choice="none", max_tokens=24)
    assert reply.choices[0].message.tool_calls is None
    assert reply.choices[0].finish_reason in ("stop", "length")


def test_auto_gives_calls_or_text(served):
    server, style = served
    reply = chat(server, tool_choice="auto", max_tokens=64)
    message = reply.choices[0].message
    if message.tool_calls:
        check_calls(message)
    else:
        assert message.content is not None
    if style == "generic":  # SmolLM2 answers the weather question with a call
        check_calls(message)


@pytest.mark.parametrize("fields, param", [
    ({"tools": [{"type": "function", "function": {"description": "no name"}}]}, "tools"),
    ({"tools": TOOLS, "tool_choice": "sometimes"}, "tool_choice"),
    ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "get_stock"}}}, "tool_choice"),
    ({"tools": TOOLS, "parallel_tool_calls": "yes"}, "parallel_tool_calls"),
    ({"tools": TOOLS, "tool_choice": "required", "response_format": {"type": "json_object"}}, "tools"),
])
def test_bad_tool_requests_are_400s(served, fields, param):
    server, _ = served
    with pytest.raises(openai.BadRequestError) as e:
        client_of(server).chat.completions.create(model=server.model_name, messages=ASK, max_tokens=8,
                                                  extra_body=fields)
    assert e.value.body["param"] == param, e.value.body


def test_python_engine_chat_with_tools(pulled_model_path):
    import tessera
    engine = tessera.Engine(pulled_model_path(SMOLLM2), threads=2)
    r = engine.chat(ASK, tools=TOOLS, tool_choice="required", parallel_tool_calls=False, max_tokens=160)
    assert r.tool_calls and r.finish_reason == "eos"
    for call in r.tool_calls:
        jsonschema.validate(json.loads(call["arguments"]), SCHEMAS[call["name"]])
    # Streamed: the deltas concatenate to the same calls, ids included.
    stream = engine.chat_stream(ASK, tools=TOOLS, tool_choice="required", parallel_tool_calls=False, max_tokens=160)
    calls = {}
    for d in stream:
        if "index" in d:
            c = calls.setdefault(d["index"], {"id": d.get("id"), "name": d.get("name"), "arguments": ""})
            c["arguments"] += d["arguments"]
    assert [(c["name"], c["arguments"]) for _, c in sorted(calls.items())] == \
        [(c["name"], c["arguments"]) for c in r.tool_calls]
    assert [c["id"] for _, c in sorted(calls.items())] == [c["id"] for c in stream.result.tool_calls]
    plain = engine.chat(ASK, max_tokens=8)  # no tools: a plain chat reply
    assert plain.tool_calls == [] and plain.text
    with pytest.raises(tessera.TesseraError, match="tool_choice"):
        engine.chat(ASK, tools=TOOLS, tool_choice="sometimes")


@pytest.fixture(scope="module")
def thinking_qwen35(tmp_path_factory):
    """A tiny Qwen3.5 with its real template, whose prompt opens <think>."""
    directory = tmp_path_factory.mktemp("tiny_qwen3_5_thinking")
    model = str(make_tiny_chat_checkpoint("qwen3_5", directory, (TEMPLATES / "qwen3.5.jinja").read_text()))
    with Server(model, "--threads", 2, env={"TESSERA_HOME": str(tmp_path_factory.mktemp("home"))}) as s:
        yield s


def test_reasoning_is_split_off_whole_and_streamed(thinking_qwen35):
    """Qwen3.5's prompt ends inside <think>: a reply cut short is all
    reasoning; streamed reasoning deltas concatenate to it; reasoning_format
    "none" leaves it in content."""
    server = thinking_qwen35
    client = client_of(server)
    ask = dict(model=server.model_name, messages=ASK, max_tokens=12, temperature=0)
    whole = client.chat.completions.create(**ask).choices[0].message
    reasoning = whole.model_extra.get("reasoning_content")
    assert reasoning and whole.content == ""
    streamed, content = "", ""
    for chunk in client.chat.completions.create(**ask, stream=True):
        for choice in chunk.choices:
            streamed += (choice.delta.model_extra or {}).get("reasoning_content") or ""
            content += choice.delta.content or ""
    assert (streamed, content) == (reasoning, "")
    kept = client.chat.completions.create(**ask, extra_body={"reasoning_format": "none"}).choices[0].message
    assert kept.content.strip() == reasoning and not kept.model_extra.get("reasoning_content")
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(**ask, extra_body={"reasoning_format": "sometimes"})
    assert e.value.body["param"] == "reasoning_format"
