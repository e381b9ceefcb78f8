"""llama.cpp's collection of real chat templates (models/templates/*.jinja of
the llama-cpp-python 0.3.36 sdist, tests/python/llamacpp_peer.py) rendered by
Tessera and by transformers' renderer (render_jinja_template, the function
apply_chat_template calls): byte-identical output on every conversation below,
with and without the generation prompt. Where transformers raises, Tessera
must raise too (with transformers' message for Jinja template errors such as
raise_exception or an unknown filter in a branch that runs).

Conversations: a single turn; system + multi-turn; multi-turn without a system
message; unicode, quotes, braces and Jinja-looking text in the content; plain
chat and multi-turn with tool definitions; tool definitions with a tool call and its
result (templates that take no tools render them as transformers does, usually
ignoring them); tool-call arguments as a JSON string (the branch where
DeepSeek V3.2 / V4 apply `from_json`, which transformers lacks: both raise);
tools in Cohere's own format plus FireFunction's `functions` variable.
A few templates are also run through `tessera tokenize --chat`.
"""

import copy
import json

import pytest

from conftest import run_tessera
from llamacpp_peer import peer_dir

jinja2 = pytest.importorskip("jinja2")
chat_utils = pytest.importorskip("transformers.utils.chat_template_utils")

try:  # in-tree build: build/python on PYTHONPATH
    import _tessera as core
except ModuleNotFoundError:  # installed wheel
    from tessera import _tessera as core

TesseraError = core.TesseraError
N_TEMPLATES = 70  # *.jinja files in the pinned sdist
SPECIAL = {"bos_token": "<s>", "eos_token": "</s>"}

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city.",
        "parameters": {"type": "object",
                       "properties": {"city": {"type": "string", "description": "City name, e.g. \"Zürich\""},
                                      "days": {"type": "integer"}},
                       "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search", "description": "Search the web.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}},
]
SYSTEM = {"role": "system", "content": "You are a helpful assistant. Answer briefly."}


def tool_turns(arguments):
    return [
        SYSTEM,
        {"role": "user", "content": "What's the weather in Zürich?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21.5}"},
        {"role": "assistant", "content": "It is 21.5 °C."},
        {"role": "user", "content": "Thanks!"},
    ]


OWN_TOOLS = {
    "tools": [{"name": "get_weather", "description": "Current weather in a city.",
               "parameter_definitions": {"city": {"type": "str", "description": "City name", "required": True},
                                         "days": {"type": "int", "description": "Days", "required": False}}}],
    "functions": json.dumps([t["function"] for t in TOOLS], indent=2), "datetime": "2026-12-04"}

CONVERSATIONS = {
    "single": ([{"role": "user", "content": "Hello!"}], {}),
    "system_multi": ([
        SYSTEM,
        {"role": "user", "content": "Hi, who are you?"},
        {"role": "assistant", "content": "I am an assistant."},
        {"role": "user", "content": "  Tell me a joke.\n"},
    ], {}),
    "unicode_quotes_braces": ([
        {"role": "user", "content": "Grüße, 世界! 🙂 \"quoted\" 'single' {braces} {{ not jinja }} {% raw %} \\ back\ttab"},
        {"role": "assistant", "content": "Ça va — {\"json\": [1, 2]} </s> <|im_end|>"},
        {"role": "user", "content": "<b>html</b> & more}\r\n"},
    ], {}),
    # The same turns for templates that refuse a system message (Gemma 2) or
    # need tools to render anything (the tool_use templates).
    "multi_no_system": ([
        {"role": "user", "content": "Hi, who are you?"},
        {"role": "assistant", "content": "I am an assistant."},
        {"role": "user", "content": "  Tell me a joke.\n"},
    ], {}),
    "chat_with_tools": ([SYSTEM, {"role": "user", "content": "Hello!"}], {"tools": TOOLS}),
    "multi_with_tools": ([
        {"role": "user", "content": "Hi, who are you?"},
        {"role": "assistant", "content": "I am an assistant."},
        {"role": "user", "content": "Grüße, 世界! \"quoted\" {braces}"},
    ], {"tools": TOOLS}),
    "tools": (tool_turns({"city": "Zürich", "days": 2}), {"tools": TOOLS}),
    "tools_string_arguments": (tool_turns("{\"city\": \"Zürich\"}"), {"tools": TOOLS}),
    # Templates with their own tool conventions: Cohere's tool_use templates take
    # tools as {name, description, parameter_definitions}; FireFunction v2 reads
    # `functions` and `datetime` variables.
    "own_tool_conventions": ([SYSTEM, {"role": "user", "content": "What's the weather in Zürich?"}], OWN_TOOLS),
    # More turns in those conventions, so that those templates too render
    # at least four conversations.
    "own_tools_multi": ([
        SYSTEM,
        {"role": "user", "content": "Hi, who are you?"},
        {"role": "assistant", "content": "I am an assistant."},
        {"role": "user", "content": "  Tell me a joke.\n"},
    ], OWN_TOOLS),
    "own_tools_unicode": ([{"role": "user", "content": "Grüße, 世界! 🙂 \"quoted\" {braces} {{ not jinja }}"}],
                          OWN_TOOLS),
    "own_tools_no_system": ([{"role": "user", "content": "Hello!"}], OWN_TOOLS),
}


@pytest.fixture(scope="module")
def templates():
    files = sorted((peer_dir() / "models" / "templates").glob("*.jinja"))
    return {p.stem: p.read_text(encoding="utf-8") for p in files}


def reference(template, messages, add_generation_prompt, extra, special=SPECIAL):
    kwargs = {**special, **copy.deepcopy(extra)}
    tools = kwargs.pop("tools", None)
    rendered, _ = chat_utils.render_jinja_template(
        conversations=[copy.deepcopy(messages)], tools=tools, chat_template=template,
        add_generation_prompt=add_generation_prompt, **kwargs)
    return rendered[0]


def ours(template, messages, add_generation_prompt, extra, origin):
    return core.render_chat_template(template, json.dumps(messages), add_generation_prompt,
                                     json.dumps({**SPECIAL, **extra}), origin)


def test_the_collection_is_the_expected_one(templates):
    assert len(templates) == N_TEMPLATES


@pytest.mark.parametrize("index", range(N_TEMPLATES))
def test_template_renders_as_transformers(templates, index):
    name = sorted(templates)[index]
    template = templates[name]
    outcomes = []
    for cname, (messages, extra) in CONVERSATIONS.items():
        for gen in (False, True):
            where = f"{name} / {cname} / add_generation_prompt={gen}"
            try:
                want = reference(template, messages, gen, extra)
            except Exception as exc:  # transformers refuses: so must we
                with pytest.raises(TesseraError) as info:
                    ours(template, messages, gen, extra, name)
                if isinstance(exc, jinja2.TemplateError) and not isinstance(exc, jinja2.UndefinedError):
                    assert str(exc) in str(info.value), where
                outcomes.append("raised")
                continue
            got = ours(template, messages, gen, extra, name)
            assert got == want, where
            outcomes.append("rendered")
    # Every template renders at least four of the conversations (the others
    # transformers refuses too: a system role Gemma 2 rejects, tools in a
    # template's own format, ...).
    assert outcomes.count("rendered") >= 2 * 4, (name, outcomes)


@pytest.mark.parametrize("name", ["Qwen-Qwen3-0.6B", "tencent-Hy3", "deepseek-ai-DeepSeek-V3.2",
                                  "meetkai-functionary-medium-v3.1"])
def test_tokenize_chat_cli(templates, tmp_path, name):
    # tessera tokenize --chat with the template in an HF-style directory: the
    # text is transformers' rendering.
    model = tmp_path / "model"
    model.mkdir()
    (model / "chat_template.jinja").write_text(templates[name], encoding="utf-8")
    gpt2 = peer_dir() / "models" / "ggml-vocab-gpt-2.gguf"
    # A tokenizer.json is needed beside the template: make one from gpt-2's vocabulary.
    tokenizers = pytest.importorskip("tokenizers")
    import gguf
    reader = gguf.GGUFReader(str(gpt2))
    vocab = {t: i for i, t in enumerate(reader.fields["tokenizer.ggml.tokens"].contents())}
    merges = [tuple(m.split(" ")) for m in reader.fields["tokenizer.ggml.merges"].contents()]
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(vocab, merges))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    tok.save(str(model / "tokenizer.json"))
    special = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}
    (model / "tokenizer_config.json").write_text(json.dumps(special))
    messages, extra = CONVERSATIONS["tools"]
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": messages, "add_generation_prompt": True, **extra}))
    proc = run_tessera("tokenize", model, "--chat", chat)
    assert proc.stdout == reference(templates[name], messages, True, extra, special)
