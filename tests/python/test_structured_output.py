"""Structured outputs through `tessera serve`, driven by the official `openai`
client on SmolLM2-135M: response_format json_schema (20 schemas, greedy and
sampled, each reply validated with `jsonschema`), json_object, llama.cpp's
`grammar` (GBNF) and `regex` extensions, streaming, bad and unsatisfiable
schemas answered 400, and batch invariance: 8 concurrent requests, half of
them constrained, each byte-identical to its own single-request output."""

import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from serve_helpers import Server

openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")

SMOLLM2 = "smollm2-135m-instruct"
MAX_TOKENS = 384

# (prompt, schema): nested objects, arrays, enums, anyOf, string formats,
# numbers with ranges, optional properties.
SCHEMAS = [
    ("Describe a person.", {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                            "required": ["name", "age"]}),
    ("Give a city and its country.", {"type": "object", "properties": {
        "city": {"type": "string"}, "country": {"type": "string"}, "population": {"type": "integer", "minimum": 0}},
        "required": ["city", "country", "population"]}),
    ("List three fruits.", {"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 3}),
    ("Pick a color.", {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]}},
                       "required": ["color"]}),
    ("Is the sky blue?", {"type": "object", "properties": {"answer": {"type": "boolean"}, "reason": {"type": "string"}},
                          "required": ["answer", "reason"]}),
    ("Describe a book.", {"type": "object", "properties": {
        "title": {"type": "string"},
        "author": {"type": "object", "properties": {"first": {"type": "string"}, "last": {"type": "string"}},
                   "required": ["first", "last"]},
        "year": {"type": "integer", "minimum": 1000, "maximum": 2100}},
        "required": ["title", "author", "year"]}),
    ("Give a temperature reading.", {"type": "object", "properties": {
        "celsius": {"type": "number", "minimum": -100, "maximum": 100}, "unit": {"const": "C"}},
        "required": ["celsius", "unit"]}),
    ("Give an identifier.", {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 12}]}),
    ("Describe a shape.", {"type": "object", "properties": {"shape": {"anyOf": [
        {"type": "object", "properties": {"kind": {"const": "circle"}, "radius": {"type": "number"}},
         "required": ["kind", "radius"]},
        {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
         "required": ["kind", "side"]}]}}, "required": ["shape"]}),
    ("Give today's date.", {"type": "object", "properties": {"date": {"type": "string", "format": "date"}},
                            "required": ["date"]}),
    ("Give an email address.", {"type": "object", "properties": {"email": {"type": "string", "format": "email"}},
                                "required": ["email"]}),
    ("Give a server address.", {"type": "object", "properties": {"ip": {"type": "string", "format": "ipv4"},
                                                                  "port": {"type": "integer", "minimum": 1,
                                                                           "maximum": 65535}},
                                "required": ["ip", "port"]}),
    ("Give a unique id.", {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}},
                           "required": ["id"]}),
    ("List two people with ages.", {"type": "array", "items": {
        "type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"]}, "minItems": 2, "maxItems": 2}),
    ("Rate a movie.", {"type": "object", "properties": {"stars": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
                                                        "review": {"type": "string", "maxLength": 80}},
                       "required": ["stars"]}),
    ("Give a product code.", {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}),
    ("Describe a task list.", {"type": "object", "properties": {"tasks": {"type": "array", "items": {
        "type": "object", "properties": {"title": {"type": "string"}, "done": {"type": "boolean"}},
        "required": ["title", "done"]}, "maxItems": 3}}, "required": ["tasks"]}),
    ("Give a number between 1 and 10.", {"type": "integer", "minimum": 1, "maximum": 10}),
    ("Describe a pet.", {"type": "object", "properties": {
        "species": {"enum": ["cat", "dog", "bird"]}, "name": {"type": "string"},
        "vaccinated": {"type": "boolean"}, "weight_kg": {"type": "number"}},
        "required": ["species", "name", "vaccinated", "weight_kg"]}),
    ("Give a key and a list of values.", {"type": "object", "properties": {
        "key": {"type": "string"}, "values": {"type": "array", "items": {"type": ["integer", "null"]},
                                               "maxItems": 4}},
        "required": ["key", "values"]}),
]


@pytest.fixture(scope="module")
def server(pulled_model_path):
    with Server(pulled_model_path(SMOLLM2), "--threads", 2, "--parallel", 8) as s:
        yield s


def client_of(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def messages_for(prompt, schema):
    """The prompt with the schema stated, as an application asks for JSON
    (the constraint guarantees the form; the words help a 135M model fill it
    with content that ends)."""
    return [{"role": "system", "content": "Reply with one short JSON value that follows this JSON Schema: "
             + json.dumps(schema)},
            {"role": "user", "content": prompt}]


def ask(server, prompt, schema, **kw):
    return client_of(server).chat.completions.create(
        model=server.model_name, messages=messages_for(prompt, schema), max_tokens=MAX_TOKENS,
        response_format={"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": True}},
        **kw)


def check_valid(reply, schema):
    choice = reply.choices[0]
    assert choice.finish_reason == "stop", choice.message.content
    value = json.loads(choice.message.content)
    jsonschema.validate(value, schema, format_checker=jsonschema.FormatChecker())
    return value


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_json_schema_replies_validate(server, index):
    prompt, schema = SCHEMAS[index]
    check_valid(ask(server, prompt, schema, temperature=0), schema)
    check_valid(ask(server, prompt, schema, temperature=0.7, top_p=0.95, seed=index), schema)


def test_json_object_gives_an_object(server):
    reply = client_of(server).chat.completions.create(
        model=server.model_name, messages=[{"role": "system", "content": "Reply with a JSON object of three fields."},
                                           {"role": "user", "content": "Describe a car."}],
        max_tokens=MAX_TOKENS, temperature=0, response_format={"type": "json_object"})
    assert reply.choices[0].finish_reason == "stop"
    assert isinstance(json.loads(reply.choices[0].message.content), dict)


def test_grammar_and_regex(server):
    client = client_of(server)
    reply = client.chat.completions.create(
        model=server.model_name, messages=[{"role": "user", "content": "Is water wet?"}], max_tokens=16,
        temperature=0, extra_body={"grammar": 'root ::= ("yes" | "no") "." '})
    assert reply.choices[0].message.content in ("yes.", "no.")
    reply = client.completions.create(model=server.model_name, prompt="The year the war ended:", max_tokens=16,
                                      temperature=0.7, seed=3, extra_body={"regex": "[12][0-9]{3}"})
    assert re.fullmatch("[12][0-9]{3}", reply.choices[0].text), reply.choices[0].text
    assert reply.choices[0].finish_reason == "stop"


def test_streamed_constrained_reply_concatenates_to_the_whole(server):
    prompt, schema = SCHEMAS[5]
    whole = ask(server, prompt, schema, temperature=0).choices[0].message.content
    pieces = [c.choices[0].delta.content or "" for c in ask(server, prompt, schema, temperature=0, stream=True)
              if c.choices]
    assert "".join(pieces) == whole


@pytest.mark.parametrize("response_format, words", [
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": 5}}},
     "json_schema"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "no-such-type"}}}, "json_schema"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"enum": []}}}, "enum array must not be empty"),
    ({"type": "json_schema", "json_schema": {"name": "x"}}, None),  # no schema: any object, accepted
    ({"type": "xml"}, "response_format"),
])
def test_bad_schemas_get_400_naming_the_problem(server, response_format, words):
    call = lambda: client_of(server).chat.completions.create(  # noqa: E731
        model=server.model_name, messages=[{"role": "user", "content": "hi"}], max_tokens=8,
        response_format=response_format)
    if words is None:
        call()
        return
    with pytest.raises(openai.BadRequestError) as e:
        call()
    assert words in str(e.value)


def test_two_constraints_get_400(server):
    with pytest.raises(openai.BadRequestError, match="at most one constraint"):
        client_of(server).chat.completions.create(
            model=server.model_name, messages=[{"role": "user", "content": "hi"}], max_tokens=8,
            response_format={"type": "json_object"}, extra_body={"grammar": 'root ::= "a"'})
    with pytest.raises(openai.BadRequestError, match="grammar"):
        client_of(server).chat.completions.create(
            model=server.model_name, messages=[{"role": "user", "content": "hi"}], max_tokens=8,
            extra_body={"grammar": 'root ::= "a'})


def test_batch_invariance_with_constraints(server):
    """8 concurrent requests, every other one constrained (different
    schemas), greedy and sampled: each reply is byte-identical to the same
    request run alone."""
    requests = []
    for i in range(8):
        prompt, schema = SCHEMAS[i]
        kw = {"model": server.model_name, "messages": messages_for(prompt, schema), "max_tokens": 64,
              "temperature": 0 if i % 4 < 2 else 0.9, "seed": i}
        if i % 2 == 0:
            kw["response_format"] = {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}
            kw["max_tokens"] = MAX_TOKENS
        requests.append(kw)
    client = client_of(server)
    alone = [client.chat.completions.create(**kw).choices[0].message.content for kw in requests]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda kw: client.chat.completions.create(**kw).choices[0].message.content, requests))
    assert together == alone
    for i in range(0, 8, 2):
        json.loads(alone[i])


def test_speculation_keeps_constrained_output(server):
    """Prompt-lookup drafts under a constraint: drafts the schema refuses
    are never verified, and greedy output equals plain constrained decoding."""
    prompt, schema = SCHEMAS[13]  # a list of objects: repeated keys for lookup to draft
    plain = ask(server, prompt, schema, temperature=0, extra_body={"speculative": "off"})
    drafted = ask(server, prompt, schema, temperature=0, extra_body={"speculative": "lookup"})
    assert drafted.choices[0].message.content == plain.choices[0].message.content
    check_valid(drafted, schema)
    sampled = ask(server, prompt, schema, temperature=0.8, seed=5, extra_body={"speculative": "lookup"})
    check_valid(sampled, schema)
