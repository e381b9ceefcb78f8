"""Tool calling on real chat templates: llama.cpp's collection
(models/templates/*.jinja of the llama-cpp-python 0.3.36 sdist) and the
templates of the models in scope (tests/data/chat_templates). For each
template whose style is Hermes (<tool_call> JSON blocks), Llama 3 (one
bare JSON call), Qwen XML (<function=...> blocks), Gemma 4
(<|tool_call>call:...), Pythonic (LFM2's [f(k=v)] lists, which its
templates take in the content) or Mistral ([TOOL_CALLS]f[ARGS]{...}, and
Nemo's [TOOL_CALLS][{...}] list), GLM XML (<arg_key> / <arg_value>),
DeepSeek V3.1 / R1 (<｜tool▁calls▁begin｜> blocks), DeepSeek V3.2 / V4
(DSML), Kimi K2 (<|tool_calls_section_begin|>), MiniMax M2 / M1 (<invoke>
XML, JSON lines), JSON lists after a marker (Nemotron Nano v2, Apriel,
Firefunction v2, Granite 3.3, Command R7B / Command A / Command R+,
Apertus), Seed-OSS's XML, Functionary v3.1's <function=NAME>{...}, or
the formats of gpt-oss (harmony), Solar Open, Kimi K3, MiniMax M3, Hy3,
MiniCPM5, muse-glimmer (ATEM) and GigaChat 3 / 3.1, an
assistant turn with tool calls (two; Llama 3, gpt-oss and GigaChat: one)
rendered by the template itself parses back into the same calls
(names, arguments as JSON values); every template renders the
conversation our tool calling hands it (tools, calls, results) without
error whenever it renders the same conversation without tools."""

import json
from pathlib import Path

import pytest

from llamacpp_peer import peer_dir

try:  # in-tree build: build/python on PYTHONPATH
    import _tessera as core
except ModuleNotFoundError:  # installed wheel
    from tessera import _tessera as core

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}},
]
CALLS = [("get_weather", {"city": "Zürich", "days": 2}), ("search", {"query": "rain \"tomorrow\""})]
EXTRA = {"bos_token": "<s>", "eos_token": "</s>"}
# Templates whose model writes Hermes-style <tool_call> JSON blocks (among
# others: Bielik, MiMo-VL, Reka, Granite 4).
HERMES = {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
          "Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja", "Qwen-QwQ-32B.jinja", "qwen2.5.jinja",
          "qwen3.jinja"}


def templates():
    found = sorted((peer_dir() / "models" / "templates").glob("*.jinja"))
    found += sorted((Path(__file__).resolve().parents[1] / "data" / "chat_templates").glob("*.jinja"))
    return found


LLAMA3 = {"meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja",
          "meta-llama-Llama-3.3-70B-Instruct.jinja"}


def conversation(calls=CALLS):
    return [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Weather in Zürich, and search for rain?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(calls)]},
        {"role": "tool", "tool_call_id": "call_0", "content": "{\"temp\": 21}"},
        {"role": "tool", "tool_call_id": "call_1", "content": "rain at noon"},
    ]


def render(source, messages, extra):
    return core.render_chat_template(source, json.dumps(messages), False, json.dumps({**EXTRA, **extra}))


def test_the_styles_of_known_templates():
    by_name = {p.name: core.tool_call_style(p.read_text()) for p in templates()}
    for name in HERMES:
        assert by_name[name] == "hermes", name
    for name in LLAMA3:
        assert by_name[name] == "llama3", name
    assert by_name["smollm2.jinja"] == "generic"
    assert by_name["gemma3.jinja"] == "generic"
    assert by_name["qwen3.5.jinja"] == "qwen_xml"
    assert by_name["gemma4.jinja"] == "gemma4"
    assert by_name["lfm2.jinja"] == "pythonic"
    assert by_name["lfm2.5.jinja"] == "pythonic"
    assert by_name["mistralai-Mistral-Nemo-Instruct-2407.jinja"] == "mistral_list"
    for name in ("GLM-4.6.jinja", "GLM-4.7-Flash.jinja", "inclusionai-ling-3.0-flash.jinja"):
        assert by_name[name] == "glm_xml", name
    for name in ("Mistral-Small-3.2-24B-Instruct-2506.jinja", "unsloth-mistral-Devstral-Small-2507.jinja",
                 "mistralai-Ministral-3-14B-Reasoning-2512.jinja"):
        assert by_name[name] == "mistral", name
    assert by_name["deepseek-ai-DeepSeek-V3.1.jinja"] == "deepseek_v3"
    for name in ("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
                 "llama-cpp-deepseek-r1.jinja"):
        assert by_name[name] == "deepseek_r1", name
    for name in ("moonshotai-Kimi-K2.jinja", "Kimi-K2-Instruct.jinja", "Kimi-K2-Thinking.jinja"):
        assert by_name[name] == "kimi", name
    assert by_name["MiniMax-M2.jinja"] == "minimax_xml"
    assert by_name["MiniMax-M1.jinja"] == "minimax_json"
    assert by_name["NVIDIA-Nemotron-Nano-v2.jinja"] == "nemotron"
    for name in ("unsloth-Apriel-1.5.jinja", "Apriel-1.6-15b-Thinker-fixed.jinja"):
        assert by_name[name] == "apriel", name
    assert by_name["fireworks-ai-llama-3-firefunction-v2.jinja"] == "firefunction"
    assert by_name["ibm-granite-granite-3.3-2B-Instruct.jinja"] == "granite"
    for name in ("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", "Cohere2MoE.jinja"):
        assert by_name[name] == "command_r", name
    assert by_name["ByteDance-Seed-OSS.jinja"] == "seed_xml"
    assert by_name["deepseek-ai-DeepSeek-V3.2.jinja"] == "deepseek_v3_2"
    for name in ("deepseek-ai-DeepSeek-V4.jinja", "deepseek-ai-DeepSeek-V4-Flash-0731.jinja"):
        assert by_name[name] == "deepseek_v4", name
    assert by_name["meetkai-functionary-medium-v3.1.jinja"] == "functionary"
    assert by_name["meetkai-functionary-medium-v3.2.jinja"] == "functionary_v3_2"
    assert by_name["CohereForAI-c4ai-command-r-plus-tool_use.jinja"] == "command_r_plus"
    assert by_name["Apertus-8B-Instruct.jinja"] == "apertus"
    assert by_name["openai-gpt-oss-120b.jinja"] == "harmony"
    assert by_name["upstage-Solar-Open-100B.jinja"] == "solar_open"
    assert by_name["Kimi-K3.jinja"] == "kimi_k3"
    assert by_name["MiniMax-M3.jinja"] == "minimax_m3"
    assert by_name["tencent-Hy3.jinja"] == "hy3"
    assert by_name["openbmb-MiniCPM5-1B.jinja"] == "minicpm5"
    assert by_name["muse-glimmer.jinja"] == "atem"
    assert by_name["GigaChat3-10B-A1.8B.jinja"] == "gigachat3"
    assert by_name["GigaChat3.1-10B-A1.8B.jinja"] == "gigachat3_1"
    # SmolLM3's template (this copy) renders no tools and no calls: the generic format.
    assert by_name["HuggingFaceTB-SmolLM3-3B.jinja"] == "generic"
    assert sum(s == "hermes" for s in by_name.values()) >= len(HERMES)


@pytest.mark.parametrize("path", templates(), ids=lambda p: p.name)
def test_tool_conversations_render_and_calls_parse_back(path):
    source = path.read_text()
    style = core.tool_call_style(source)
    # Llama 3: one call per message; gpt-oss and GigaChat 3 render the first call only.
    calls = CALLS[:1] if style in ("llama3", "harmony", "gigachat3", "gigachat3_1") else CALLS
    tools = TOOLS
    # Functionary v3.1 and Apertus concatenate every tool's description (and
    # fail without one, in transformers too): give each one.
    # gpt-oss and muse-glimmer require one too.
    if "[\"description\"] + " in source or ".function.description + " in source or style in ("harmony", "atem"):
        tools = [{**t, "function": {"description": "A tool", **t["function"]}} for t in TOOLS]
    messages_json, extra_json = core.tool_calling_messages(source, json.dumps(conversation(calls)), json.dumps(tools),
                                                           json.dumps("auto"))
    plain = [m for m in conversation(calls) if m["role"] in ("system", "user")]
    try:
        render(source, plain, {})
    except core.TesseraError:
        pytest.skip("the template refuses even the conversation without tools")
    try:
        text = render(source, json.loads(messages_json), json.loads(extra_json))
    except core.TesseraError as e:
        # Two templates call list.append (Kimi K2 Instruct / Thinking) and one
        # serializes a `map` generator (llama.cpp's own DeepSeek R1 template):
        # transformers' sandbox refuses both just as our Jinja does.
        if "'append' of 'list' object is unsafe" in str(e) or "generator is not JSON serializable" in str(e):
            pytest.xfail(f"transformers refuses this template's tools too: {e}")
        raise
    if style == "generic":
        return
    # The assistant turn as the template wrote it: its <tool_call> blocks, or
    # Llama 3's JSON up to its end of turn.
    after_user = text.index(conversation()[1]["content"])  # not the instructions' example
    blocks = {"hermes": ("<tool_call>", "</tool_call>"), "qwen_xml": ("<tool_call>", "</tool_call>"),
              "gemma4": ("<|tool_call>", "<tool_call|>"),
              "pythonic": ("<|tool_call_start|>", "<|tool_call_end|>"), "glm_xml": ("<tool_call>", "</tool_call>"),
              "deepseek_v3": ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"),
              "deepseek_r1": ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"),
              "kimi": ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"),
              "minimax_xml": ("<minimax:tool_call>", "</minimax:tool_call>"),
              "minimax_json": ("<tool_calls>", "</tool_calls>"),
              "nemotron": ("<TOOLCALL>", "</TOOLCALL>"), "apriel": ("<tool_calls>", "</tool_calls>"),
              "command_r": ("<|START_ACTION|>", "<|END_ACTION|>"),
              "command_r_plus": ("Action:\n```json", "```"), "apertus": ("<|tools_prefix|>", "<|tools_suffix|>"),
              "seed_xml": ("<seed:tool_call>", "</seed:tool_call>"),
              "deepseek_v3_2": ("<｜DSML｜function_calls>", "</｜DSML｜function_calls>"),
              "deepseek_v4": ("<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>"),
              "functionary": ("<function=", "</function>"),
              "solar_open": ("<|tool_calls|>", "<|calls|>"), "kimi_k3": ("<|open|>tools<|sep|>", "<|close|>tools<|sep|>"),
              "minimax_m3": ("]<]minimax[>[<tool_call>", "]<]minimax[>[</tool_call>"),
              "hy3": ("<tool_calls:opensource>", "</tool_calls:opensource>"),
              "minicpm5": ("<function name=\"", "</function>")}
    # Messages framed by headers: from after the generation prompt to the end of the turn.
    framed = {"harmony": ("<|start|>assistant", "<|call|>"), "atem": ("<|start|>assistant", "<|eot|>"),
              "gigachat3": ("assistant<|role_sep|>\n", "<|message_sep|>\n\nfunction result"),
              "gigachat3_1": ("assistant<|role_sep|>\n", "<|message_sep|>")}
    # Lists that end the reply: to the end of the turn.
    open_ended = {"firefunction": (" functools", "<|eot_id|>"), "granite": ("<|tool_call|>", "<|end_of_text|>")}
    if style in blocks:
        open_, close = blocks[style]
        start, end = text.index(open_, after_user), text.rindex(close) + len(close)
    elif style in framed:
        open_, close = framed[style]
        start = text.index(open_, after_user) + len(open_)
        end = text.index(close, start)
    elif style == "functionary_v3_2":  # the reply starts after the assistant header's first ">>>"
        start = text.index(">>>", after_user) + 3
        end = text.index("<|eot_id|>", start)
    elif style in open_ended:
        open_, close = open_ended[style]
        start = text.index(open_, after_user)
        end = text.index(close, start)
    elif style in ("mistral", "mistral_list"):  # the calls run to the end of the turn
        start = text.index("[TOOL_CALLS]", after_user)
        end = text.index(EXTRA["eos_token"], start)
    else:
        start = text.index('{"name"', after_user)
        end = text.index("<|eot_id|>", start)
    content, parsed = core.parse_tool_reply(source, text[start:end], json.dumps(tools), json.dumps("auto"))
    assert [(name, json.loads(arguments)) for _, name, arguments in parsed] == calls, text[start:end]
    assert content == ""
