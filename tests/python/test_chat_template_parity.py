"""Parity of Tessera's chat template renderer with transformers.

Every real model template in tests/data/chat_templates/ renders a set of
conversations (single turn, multi-turn, with and without a system message,
with and without add_generation_prompt, reasoning in <think> tags and in
reasoning_content, tool definitions, tool calls and tool results, content as a
list of parts, non-ASCII text) and thinking switches; Tessera's output must
equal transformers' render_jinja_template (the function apply_chat_template
calls, with transformers' exact Jinja environment) byte for byte. When
transformers raises, Tessera must raise too (TesseraError), with the template's
own message for raise_exception.

A second set of small templates pins the Jinja engine itself (whitespace
control, filters, tests, scoping, Python value formatting) against the same
environment, and a third the errors: unsupported features name themselves with
line and column, hostile templates stop at a limit.
"""

import copy
import json
from pathlib import Path

import pytest

jinja2 = pytest.importorskip("jinja2")
chat_utils = pytest.importorskip("transformers.utils.chat_template_utils")

try:  # in-tree build: build/python on PYTHONPATH
    import _tessera as core
except ModuleNotFoundError:  # installed wheel
    from tessera import _tessera as core

TesseraError = core.TesseraError
TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "chat_templates"
TEMPLATE_FILES = sorted(TEMPLATES.glob("*.jinja"))

SPECIAL = {"bos_token": "<|bos|>", "eos_token": "<|eos|>"}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. \"Zürich\""},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    "days": {"type": "integer", "description": "Forecast days", "nullable": True},
                    "hours": {"type": "array", "items": {"type": "integer"}, "description": "Hours of the day"},
                    "where": {
                        "type": "object",
                        "description": "Coordinates",
                        "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                        "required": ["lat"],
                    },
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        },
    },
]

USER = {"role": "user", "content": "What's the weather in Zürich?"}
SYSTEM = {"role": "system", "content": "You are a helpful assistant. Answer briefly."}

CONVERSATIONS = {
    "single": [{"role": "user", "content": "Hello!"}],
    "system": [SYSTEM, {"role": "user", "content": "Hello!"}],
    "multi": [
        {"role": "user", "content": "Hi, who are you?"},
        {"role": "assistant", "content": "I am an assistant."},
        {"role": "user", "content": "  Tell me a joke.\n"},
    ],
    "multi_system": [
        SYSTEM,
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "Thanks"},
    ],
    "think_tags": [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "<think>\nSimple arithmetic.\n</think>\n\n2+2 = 4."},
        {"role": "user", "content": "And 3+3?"},
    ],
    "think_last": [
        SYSTEM,
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "<think>\nAdd them.\n</think>\n\nIt is 4."},
    ],
    "reasoning_field": [
        {"role": "user", "content": "Capital of France?"},
        {"role": "assistant", "content": "Paris.", "reasoning_content": "The capital of France is Paris."},
        {"role": "user", "content": "And of Italy?"},
    ],
    "tool_calls": [
        SYSTEM,
        USER,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius", "days": 2,
                                                                   "hours": [9, 12], "where": {"lat": 47.37}}}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21.5, \"sky\": \"clear\"}"},
        {"role": "assistant", "content": "It is 21.5 °C and clear in Zürich."},
        {"role": "user", "content": "And search for 'fondue'."},
    ],
    "tool_calls_multi": [
        USER,
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Bern"}}},
                {"id": "b", "type": "function",
                 "function": {"name": "search", "arguments": "{\"query\": \"Bern weather\"}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "name": "get_weather", "content": "sunny"},
        {"role": "tool", "tool_call_id": "b", "name": "search", "content": "no results"},
    ],
    "parts": [
        {"role": "system", "content": [{"type": "text", "text": "Be nice."}]},
        {"role": "user", "content": [{"type": "text", "text": "Describe "}, {"type": "text", "text": "this."}]},
    ],
    "unicode": [
        {"role": "user", "content": "Grüße, 世界! 🙂 \"quoted\" back\\slash\ttab"},
        {"role": "assistant", "content": "Ça va — très bien."},
        {"role": "user", "content": "<b>html</b> & more\r\n"},
    ],
}

EXTRAS = {
    "plain": {},
    "think_on": {"enable_thinking": True},
    "think_off": {"enable_thinking": False},
    "tools": {"tools": TOOLS},
    "keep_thinking": {"keep_past_thinking": True},
}


def reference(template: str, messages, add_generation_prompt: bool, extra: dict):
    kwargs = {**SPECIAL, **copy.deepcopy(extra)}
    tools = kwargs.pop("tools", None)
    documents = kwargs.pop("documents", None)
    rendered, _ = chat_utils.render_jinja_template(
        conversations=[copy.deepcopy(messages)], tools=tools, documents=documents, chat_template=template,
        add_generation_prompt=add_generation_prompt, **kwargs)
    return rendered[0]


def ours(template: str, messages, add_generation_prompt: bool, extra: dict, origin="chat_template"):
    return core.render_chat_template(template, json.dumps(messages), add_generation_prompt,
                                     json.dumps({**SPECIAL, **extra}), origin)


def check_parity(template: str, messages, add_generation_prompt: bool, extra: dict):
    try:
        want = reference(template, messages, add_generation_prompt, extra)
    except Exception as exc:  # transformers refuses: so must we
        with pytest.raises(TesseraError) as info:
            ours(template, messages, add_generation_prompt, extra)
        if isinstance(exc, jinja2.TemplateError) and not isinstance(exc, jinja2.UndefinedError):
            assert str(exc) in str(info.value)
        return
    got = ours(template, messages, add_generation_prompt, extra)
    assert got == want


@pytest.mark.parametrize("extra", list(EXTRAS), ids=list(EXTRAS))
@pytest.mark.parametrize("conversation", list(CONVERSATIONS), ids=list(CONVERSATIONS))
@pytest.mark.parametrize("path", TEMPLATE_FILES, ids=[p.stem for p in TEMPLATE_FILES])
def test_model_templates(path, conversation, extra):
    template = path.read_text(encoding="utf-8")
    for add_generation_prompt in (False, True):
        check_parity(template, CONVERSATIONS[conversation], add_generation_prompt, EXTRAS[extra])


def test_every_model_in_scope_has_a_template():
    names = {p.stem for p in TEMPLATE_FILES}
    assert {"smollm2", "qwen2.5", "qwen3", "qwen3.5", "gemma3", "gemma4", "lfm2"} <= names


def test_smollm2_template_is_the_ggufs(pulled_model_path):
    gguf_path = pulled_model_path("smollm2-135m-instruct")
    assert core.find_chat_template(gguf_path) == (TEMPLATES / "smollm2.jinja").read_text(encoding="utf-8")


def test_find_chat_template_in_hf_dirs(tmp_path):
    tpl = "{{ messages[0]['content'] }}"
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": "from config"}))
    assert core.find_chat_template(str(tmp_path)) == "from config"
    (tmp_path / "chat_template.json").write_text(json.dumps({"chat_template": "from json"}))
    assert core.find_chat_template(str(tmp_path)) == "from json"
    (tmp_path / "chat_template.jinja").write_text(tpl)
    assert core.find_chat_template(str(tmp_path)) == tpl
    named = tmp_path / "named"
    named.mkdir()
    (named / "tokenizer_config.json").write_text(json.dumps(
        {"chat_template": [{"name": "tool_use", "template": "t"}, {"name": "default", "template": "d"}]}))
    assert core.find_chat_template(str(named)) == "d"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert core.find_chat_template(str(empty)) is None
    (empty / "tokenizer_config.json").write_text("{not json")
    with pytest.raises(TesseraError, match="invalid JSON"):
        core.find_chat_template(str(empty))


# ---------------------------------------------------------------- engine snippets

SNIPPETS = [
    # whitespace control: trim_blocks, lstrip_blocks, -, +
    "  {% if true %}\n  x\n  {% endif %}\n  y\n",
    "a  {%- if true -%}  b  {%- endif -%}  c",
    "{% for i in range(3) %}\n    {{ i }}\n{% endfor %}\n",
    "  {%+ if true %}kept{% endif +%}\nnext",
    "{# comment #}\nA {#- trimmed -#}   B\n  {# indented #}\nC",
    "{{ 'x' }}\n{{ 'y' -}}\n\n  z",
    "line\r\nwindows\rmac\n",
    "{% raw %}{{ not parsed }}{% endraw %}",
    # values and printing
    "{{ 1 }} {{ 1.0 }} {{ 1.5e20 }} {{ 0.0001 }} {{ 0.00001 }} {{ 1/3 }} {{ -0.0 }} {{ 10/2 }}",
    "{{ none }} {{ true }} {{ [1, 'a', none, true, 2.5] }} {{ {'a': 1, 'b': [1, 2]} }} {{ (1,) }} {{ ('a', \"b'c\") }}",
    "{{ 'it\\'s' }} {{ \"say \\\"hi\\\"\" }} {{ ['it\\'s', 'a\\nb', 'tab\\t'] }}",
    "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }}",
    "{{ 'a' ~ 1 ~ none ~ true }} {{ 'ab' * 3 }} {{ [1] + [2] }} {{ 'x' + 'y' }}",
    # tojson (transformers' own: ensure_ascii False, no HTML escaping)
    "{{ d | tojson }}|{{ d | tojson(indent=2) }}|{{ d | tojson(sort_keys=true) }}|{{ d | tojson(separators=(',', ':')) }}",
    "{{ [] | tojson }} {{ {} | tojson(indent=4) }} {{ 'é<&>\\'\"\\n' | tojson }} {{ 3.0 | tojson }} {{ none | tojson }}",
    "{{ d | tojson(ensure_ascii=true) }}",
    # filters
    "{{ '  a b  ' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ 'Hello' | upper }}|{{ 'Hello' | lower }}|{{ 'hello world' | title }}|{{ 'hELLO' | capitalize }}",
    "{{ [3, 1, 2] | length }} {{ 'héllo' | length }} {{ d | length }} {{ u | length }}",
    "{{ [1, 2, 3] | first }} {{ [1, 2, 3] | last }} {{ 'abc' | first }} {{ [1, 2] | join(', ') }} {{ ['a', 'b'] | join }}",
    "{{ u | default('dflt') }} {{ '' | default('e', true) }} {{ none | default('n') }} {{ 0 | d(5, boolean=true) }}",
    "{{ 'a-b-c' | replace('-', '+') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 'ab' | replace('', '.') }}",
    "{{ d | items | list }} {% for k, v in d | items %}{{ k }}={{ v }};{% endfor %} {% for k, v in d.items() %}{{ k }}:{{ v }}{% endfor %}",
    "{{ d | dictsort }} {{ {'b': 1, 'A': 2, 'a': 0} | dictsort }} {{ {'b': 1, 'a': 2} | dictsort(by='value', reverse=true) }}",
    "{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | join('|') }}",
    "{{ msgs | rejectattr('role', 'eq', 'user') | list | length }} {{ msgs | map(attribute='nope', default='-') | list }}",
    "{{ [1, 2, 3, 4] | select('odd') | list }} {{ [1, none, 2] | reject('none') | list }} {{ ['a', 'b'] | map('upper') | join }}",
    "{{ [3, 1, 2] | sort }} {{ ['b', 'A', 'a'] | sort }} {{ [1, 2, 1] | unique | list }} {{ [1, 5, 3] | max }} {{ [4, 2] | min }} {{ [1, 2.5] | sum }}",
    "{{ [1, 2] | reverse | list }} {{ 'abc' | reverse }} {{ '3' | int + 1 }} {{ '2.5' | float }} {{ 'x' | int(7) }} {{ -3 | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }}",
    "{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent('>', blank=true) }}",
    "{{ 42 | string }}{{ [1] | string }}{{ 'x' | safe }}{{ '<a>' | e }}{{ 'one two  three' | wordcount }}",
    # tests
    "{{ u is defined }}{{ u is undefined }}{{ none is none }}{{ 1 is number }}{{ true is number }}{{ true is integer }}{{ 1 is integer }}{{ 1.0 is float }}",
    "{{ 'a' is string }}{{ d is mapping }}{{ [] is mapping }}{{ d is iterable }}{{ 1 is iterable }}{{ 'a' is sequence }}{{ d is sequence }}{{ u is sequence }}{{ none is sequence }}",
    "{{ true is boolean }}{{ false is false }}{{ true is true }}{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 2 is in [1, 2] }}{{ 'ab' is lower }}{{ 'AB' is upper }}{{ x is not none }}",
    "{{ 1 is eq 1 }}{{ 1 is ne 2 }}{{ 1 is lt 2 }}{{ 2 is ge 2 }}{{ none is sameas none }}{{ range is callable }}{{ 'trim' is filter }}{{ 'odd' is test }}",
    # string methods
    "{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ 'x'.split('y') }}",
    "{{ '\\n x \\n'.strip() }}|{{ 'xxhixx'.lstrip('x') }}|{{ 'hi\\n\\n'.rstrip('\\n') }}|{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}",
    "{{ 'Hello'.upper() }}{{ 'Hello'.lower() }}{{ 'a-b'.replace('-', '_') }}{{ 'hello'.find('l') }}{{ 'hello'.count('l') }}{{ ', '.join(['a', 'b']) }}{{ 'a b'.title() }}",
    "{{ 'x1'.isdigit() }}{{ '12'.isdigit() }}{{ '  '.isspace() }}{{ 'prefix-x'.removeprefix('prefix-') }}{{ 'ab'.center(6, '*') }}{{ 'a\\nb'.splitlines() }}",
    # subscripts and slices
    "{{ msgs[0].role }} {{ msgs[-1]['content'] }} {{ msgs[5] is defined }} {{ d.a }} {{ d['b'] }} {{ d.missing is defined }} {{ d.get('a') }} {{ d.get('z', 'zz') }} {{ d.get('z') }}",
    "{{ [1, 2, 3, 4][1:] }} {{ [1, 2, 3, 4][::-1] }} {{ [1, 2, 3, 4][:-1] }} {{ [1, 2, 3, 4][::2] }} {{ 'hello'[1:3] }} {{ 'héllo'[::-1] }} {{ 'abc'[-1] }} {{ [1, 2, 3][-5:10] }} {{ [1, 2, 3][5:] }} {{ [1, 2, 3][2:0:-1] }}",
    "{{ d.keys() | list }} {{ d.values() | list }} {{ 'a' in d }} {{ 'x' in 'xyz' }} {{ 3 not in [1, 2] }} {{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ [1, 2] == [1, 2] }}",
    "{{ 0 or 'b' }} {{ 'a' and 'b' }} {{ none or [] }} {{ not 0 }} {{ not none is none }} {{ -1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ 'a' if false }}|{{ 'y' if 1 else 'n' }}",
    # loops
    "{% for m in msgs %}{{ loop.index }}/{{ loop.length }}:{{ loop.index0 }},{{ loop.revindex }},{{ loop.revindex0 }},{{ loop.first }},{{ loop.last }};{% endfor %}",
    "{% for m in msgs %}{{ loop.previtem.role if loop.previtem is defined else '-' }}>{{ loop.nextitem.role if loop.nextitem is defined else '-' }} {% endfor %}",
    "{% for i in range(10) if i is odd %}{{ i }}{{ loop.length }},{% else %}none{% endfor %}|{% for i in [] %}x{% else %}empty{% endfor %}",
    "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}",
    "{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %} {% for c in 'héy' %}[{{ c }}]{% endfor %} {% for k in d %}{{ k }}{% endfor %} {% for x in u %}x{% endfor %}",
    "{% for i in range(2) %}{% for j in range(2) %}{{ loop.index }}{{ i }}{{ j }} {% endfor %}{{ loop.index }}|{% endfor %}",
    "{% for i in range(1, 10, 3) %}{{ i }}{{ loop.cycle('a', 'b') }}{% endfor %} {{ range(5, 0, -2) | list }}",
    # scoping and set
    "{% set x = 1 %}{% for i in range(2) %}{{ x }}{% set x = i + 10 %}{{ x }}{% endfor %}{{ x }}",
    "{% set ns = namespace(n=0, items=[]) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}{% if true %}{% set y = 5 %}{% endif %}{{ y }}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = (3, 4) %}{% set c, e = t %}{{ c }}{{ e }}{% set msgs2 = msgs[1:] %}{{ msgs2 | length }}",
    "{% set block %}  inner {{ 1 + 1 }}  {% endset %}[{{ block }}]{% set b2 | trim | upper %}  x  {% endset %}[{{ b2 }}]",
    "{{ dict(a=1, b='x') }} {{ dict(a=1) | tojson }} {{ namespace(a=1).a }}",
    # macros
    "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bob') }} {{ greet('Al', punct='?') }} {{ greet() }}",
    "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}",
    "{% set y = 1 %}{% macro show() %}{{ y }}{% endmacro %}{% set y = 2 %}{{ show() }}{% macro inner() %}{% set y = 9 %}{{ y }}{% endmacro %}{{ inner() }}{{ y }}",
    "{%- macro fmt(v) -%}\n  {%- if v is mapping -%}{ {%- for k, x in v | dictsort -%}{{ k }}:{{ fmt(x) }}{{ ',' if not loop.last }}{%- endfor -%} }\n  {%- elif v is string -%}'{{ v }}'\n  {%- else -%}{{ v }}{%- endif -%}\n{%- endmacro -%}\n{{ fmt({'b': {'y': 1, 'x': 'z'}, 'a': true}) }}",
    "{% generation %}gen {{ 1 }}{% endgeneration %}",
    "{% macro greet() %}x{% endmacro %}{{ greet }} {{ greet | upper }} {{ greet ~ '' }}",
    "{{ 7.5 // 2 }} {{ -7.5 // 2 }} {{ 7.5 % -2 }} {{ -0.0 // 1 }} {{ 0.0 % -3 }} {{ 1e300 // 3.0 }} {{ 5 % 2.5 }}",
    "{{ d.items() }} {{ d.keys() }} {{ d.values() | list }} {{ d.items() | length }} {{ d.keys()[0] is defined }} {{ 'a' in d.keys() }}",
    # case mappings beyond ASCII, Jinja's title filter
    "{{ 'Zürich ÉTÉ ñandú Ωmega'.upper() }} {{ 'ÀÉÎ ΩΜΕΓΑ ДОМ'.lower() }} {{ 'éCOLE'.capitalize() }} {{ 'ça va' | upper }}",
    "{{ \"don't stop-me (now) <b>x\" | title }} {{ 'éLAN vital' | title }}",
    # corner cases found by differential fuzzing
    "{{ [1, u, 2] }} {{ none[] }} {{ u is callable }} {{ msgs | map(attribute='role') | list | length }} {{ 00 }}",
    "{% if 1 %}a{% elif 2 %}b{% endif %}{{ (msgs | selectattr('role', 'eq', 'user') | first).content }}",
]

# Features of llama.cpp's template collection (test_llamacpp_template_suite.py).
SNIPPETS += [
    "{{ '{} and {x} {{literal}}'.format(1, x='y') }} {{ '{0}{1}{0}'.format('a', [1, 'b']) }} {{ '{!r}'.format('q') }}",
    "{% filter upper %}x{{ 1 }} {{ 'y' }}{% endfilter %}|{% filter trim | title %}  ab cd  {% endfilter %}|",
    "{{ 'a' | safe + '<b>' + '&' | e }}|{{ '<' ~ 'x' | safe }}|{{ ('x' | safe + '\"') | length }}|{{ 'x' | e | e }}",
    "{% if false %}{{ u | from_json }}{% elif 0 %}{{ 1 is frob }}{% endif %}ok {{ 1 | nope if false else 2 }}",
    "{{ none | selectattr('a') | list }} {{ u | map(attribute='x') | list }} {{ none | reject('none') | list }} {{ [] | map('int') | list }}",
]

# Templates Jinja refuses (syntax or runtime): Tessera must refuse them too.
REFUSED = [
    "{% if true %}{{ 1 | from_json }}{% endif %}",
    "{% for i in [] %}{{ 1 | from_json }}{% endfor %}",
    "{{ '{}{0}'.format(1, 2) }}",
    "{{ '{2}'.format(1, 2) }}",
    "{{ '{x}'.format(1) }}",
    "{{ '{'.format() }}",
    "{% set l = [1] %}{{ l.append(2) }}",
    "{{ d.update({}) }}",
    "{% if a if b else c %}x{% endif %}",
    "{{ 0001 }}",
    "{{ msgs | map(attribute='role') | length }}",
    "{{ msgs | selectattr('role') | last }}",
    "{{ x[1:] }}",
    "{{ u[1:] }}",
    "{{ [1][u:] }}",
    "{{ 3 | indent }}",
    "{{ 'a'.center(5, 'xy') }}",
    "{{ 1 is none 2 }}",
    "{{ d | items | length }}",
    "{{ [1, 2] | reverse | tojson }}",
    "{{ dict(u) }}",
]

# Python maps these to several characters (or by context): refused, not guessed.
@pytest.mark.parametrize("template", ["{{ 'Straße' | upper }}", "{{ 'ΑΣ'.lower() }}", "{{ 'ﬁ'.upper() }}"])
def test_case_mappings_python_does_not_map_one_to_one_are_refused(template):
    with pytest.raises(TesseraError, match="unsupported Jinja feature"):
        core.render_chat_template(template, "[]", False, "{}")

SNIPPET_VARS = {
    "d": {"a": 1, "b": "two", "c": [1.5, None, True], "é": "ü"},
    "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"},
             {"role": "user", "content": "bye"}],
    "x": 0,
}


def jinja_reference(template: str, variables: dict) -> str:
    return chat_utils._compile_jinja_template(template).render(**copy.deepcopy(variables))


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_engine_snippets(index):
    template = SNIPPETS[index]
    want = jinja_reference(template, SNIPPET_VARS)
    messages = SNIPPET_VARS["msgs"]
    extra = {k: v for k, v in SNIPPET_VARS.items() if k != "msgs"}
    extra["msgs"] = messages
    got = core.render_chat_template(template, "[]", False, json.dumps(extra))
    assert got == want


@pytest.mark.parametrize("index", range(len(REFUSED)))
def test_engine_refuses_what_jinja_refuses(index):
    template = REFUSED[index]
    with pytest.raises(Exception):
        jinja_reference(template, SNIPPET_VARS)
    with pytest.raises(TesseraError):
        core.render_chat_template(template, "[]", False, json.dumps(SNIPPET_VARS))


def test_strftime_now_and_raise_exception():
    out = core.render_chat_template("{{ strftime_now('%Y') }}", "[]", False, "{}")
    assert out == jinja_reference("{{ strftime_now('%Y') }}", {})
    with pytest.raises(TesseraError, match="Conversation roles must alternate"):
        core.render_chat_template((TEMPLATES / "gemma3.jinja").read_text(), json.dumps(
            [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]), True, "{}")


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("template, message", [
    ("{% call foo() %}x{% endcall %}", r"unsupported Jinja feature: '\{% call %\}' tag.*|line 1, column 4"),
    ("x\n{{ a | frobnicate }}", r"line 2, column 8.*unsupported Jinja feature: filter 'frobnicate'"),
    ("{% if a is frob %}{% endif %}", r"line 1, column 9.*unsupported Jinja feature: test 'frob'"),
    ("{% include 'x' %}", r"unsupported Jinja feature: '\{% include %\}' tag"),
    ("{% for x in y recursive %}{% endfor %}", r"unsupported Jinja feature: recursive loops"),
    ("{{ 'a %s' % 1 }}", r"printf-style"),
    ("{% if x %}", r"unexpected end of template"),
    ("{{ 'abc }}", r"unterminated string"),
    ("{{ x.y.z }}", r"'x' is undefined"),
    ("{{ raise_exception('custom failure: ' ~ 42) }}", r"custom failure: 42"),
    ("{% do x %}", r"unknown tag 'do'"),
    ("{{ 1 + 'a' }}", r"unsupported operand"),
    ("{% set ns = namespace(_x=1) %}", r"underscore"),
])
def test_errors(template, message):
    with pytest.raises(TesseraError, match=message):
        core.render_chat_template(template, "[]", False, "{}", "my_template.jinja")


HOSTILE = [
    "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",                       # unbounded recursion
    "{% for i in range(100000000) %}{% endfor %}",                            # huge range
    "{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",  # doubling
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",  # too many iterations
    "{{ 'x' * 10000000000 }}",
    "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}",
    "{% if true %}" * 5000,
    "{% for a in x %}" * 300,
    "{{ [" * 3000 + "]" * 3000 + " }}",
]


@pytest.mark.parametrize("index", range(len(HOSTILE)))
def test_hostile_templates_stop_at_a_limit(index):
    template = HOSTILE[index]
    with pytest.raises(TesseraError):
        core.render_chat_template(template, "[]", False, "{}", "hostile", 1_000_000)


def test_iteration_limit_is_named():
    template = "{% for i in range(100000) %}{% for j in range(100) %}{% endfor %}{% endfor %}"
    with pytest.raises(TesseraError, match="loop iterations"):
        core.render_chat_template(template, "[]", False, "{}", "hostile", 100_000)


def test_messages_must_be_objects():
    with pytest.raises(TesseraError, match="messages"):
        core.render_chat_template("{{ messages }}", "[1]", False, "{}")
    with pytest.raises(TesseraError, match="invalid JSON"):
        core.render_chat_template("{{ messages }}", "[", False, "{}")


# ---------------------------------------------------------------- CLI

def test_cli_tokenize_chat_renders_with_the_models_template(pulled_model_path, tmp_path):
    from conftest import run_tessera

    gguf_path = pulled_model_path("smollm2-135m-instruct")
    messages = CONVERSATIONS["multi_system"]
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": messages, "add_generation_prompt": True}))
    out = json.loads(run_tessera("tokenize", gguf_path, "--chat", chat, "--json").stdout)
    got = out["ids"]
    # Without --json: the rendered text itself, equal to transformers' rendering.
    template = (TEMPLATES / "smollm2.jinja").read_text(encoding="utf-8")
    text = reference(template, messages, True, {})
    assert run_tessera("tokenize", gguf_path, "--chat", chat).stdout == text
    assert out["text"] == text
    # The same ids as tokenizing the rendered text without adding special tokens
    # (what apply_chat_template(tokenize=True) does).
    want = json.loads(run_tessera("tokenize", gguf_path, "--json", "--no-special", input=text).stdout)["ids"]
    assert got == want
    assert got[:1] == [1]  # <|im_start|> from the template, not added again
    no_template = tmp_path / "list.json"
    no_template.write_text("{\"not\": \"messages\"}")
    proc = run_tessera("tokenize", gguf_path, "--chat", no_template, check=False)
    assert proc.returncode == 2 and "messages" in proc.stderr
