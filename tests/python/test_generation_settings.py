"""The Python doors of the generation settings (the one list in
include/tessera/generation_settings.hpp): tessera.GenerationSettings is the
list, Engine.generate / stream and Session.generate take every setting, and
every setting set to a value off its default reaches the runtime. The C,
C++, server and CLI doors are checked in C++ (src/api/generation_settings_test.cc,
src/server/completion_request_test.cc, src/cli/generation_flags_test.cc)."""

import dataclasses
import inspect

import pytest

import tessera
from serve_helpers import make_tiny_chat_model

FIELDS = [tuple(f) for f in tessera._core.generation_settings_fields()]
NAMES = [f[0] for f in FIELDS]

# Every setting off its default: the values the C++ door tests deliver
# (src/api/generation_settings_for_tests.h).
OFF_DEFAULT = {
    "max_tokens": 7,
    "temperature": 0.5,
    "top_p": 0.875,
    "min_p": 0.0625,
    "repeat_penalty": 1.25,
    "top_k": 40,
    "repeat_last_n": 32,
    "seed": 12345,
    "stop": ["END", "\n\n"],
    "ignore_eos": True,
    "max_tokens_per_call": 16,
    "speculative": "lookup",
    "draft_max": 4,
    "json_schema": '{"type": "integer"}',
    "grammar": 'root ::= "yes" | "no"',
    "regex": "[a-z]+",
    "structural_tag": '{"type": "structural_tag", "format": {"type": "const_string", "value": "ok"}}',
}
# A request takes at most one constraint: the runs below keep json_schema.
ONE_CONSTRAINT = {k: v for k, v in OFF_DEFAULT.items() if k not in ("grammar", "regex", "structural_tag")}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A tiny chat model whose bundle is cached in a TESSERA_HOME of its own."""
    directory = tmp_path_factory.mktemp("tiny_chat")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TESSERA_HOME", str(directory / "home"))
        yield str(make_tiny_chat_model(directory / "model"))


def test_the_off_default_values_cover_every_setting():
    assert sorted(OFF_DEFAULT) == sorted(NAMES)
    for name, _, default, _ in FIELDS:
        assert OFF_DEFAULT[name] != default, name


def test_the_dataclass_is_the_list():
    fields = dataclasses.fields(tessera.GenerationSettings)
    got = [(f.name, f.type, f.default if f.default is not dataclasses.MISSING else f.default_factory(),
            f.metadata["doc"]) for f in fields]
    assert got == FIELDS
    assert all(doc for *_, doc in FIELDS)
    assert dataclasses.asdict(tessera.GenerationSettings()) == tessera._core.generation_settings()
    assert "speculative" in tessera.GenerationSettings.__doc__


def test_every_setting_reaches_the_runtime():
    """The conversion every Python door uses (settings_bindings.cc) carries
    each setting into the C++ struct and back."""
    assert tessera._core.generation_settings(**OFF_DEFAULT) == OFF_DEFAULT
    as_dataclass = tessera.GenerationSettings(**OFF_DEFAULT)
    assert tessera._core.generation_settings(**dataclasses.asdict(as_dataclass)) == OFF_DEFAULT


@pytest.mark.parametrize("method", ["generate", "stream"])
def test_the_engine_signature_has_every_setting(method):
    params = inspect.signature(getattr(tessera.Engine, method)).parameters
    for name, type_name, default, doc in FIELDS:
        assert name in params, f"Engine.{method} lacks {name}"
        p = params[name]
        assert p.kind is inspect.Parameter.KEYWORD_ONLY and p.default == default and p.annotation == type_name
        assert doc in getattr(tessera.Engine, method).__doc__


class _Submitted(Exception):
    pass


class _Recorder:
    """Stands in for _tessera.Engine: records what Engine hands it."""

    def submit(self, prompt, messages_json, prompt_ids, settings, images=()):
        self.settings = settings
        raise _Submitted


@pytest.mark.parametrize("method", ["generate", "stream"])
def test_the_engine_passes_every_setting(method):
    engine = tessera.Engine.__new__(tessera.Engine)
    engine._engine = _Recorder()
    with pytest.raises(_Submitted):
        getattr(engine, method)(prompt_ids=[1, 2], **OFF_DEFAULT)
    assert engine._engine.settings == OFF_DEFAULT
    with pytest.raises(_Submitted):
        getattr(engine, method)("x", stop="END")
    assert engine._engine.settings == {"stop": ["END"]}  # one string, as before
    with pytest.raises(TypeError, match=f"{method}\\(\\) got an unexpected keyword argument 'temp'"):
        getattr(engine, method)("x", temp=0.5)


def test_session_generate_reads_every_setting(tiny_model):
    session = tessera.Session(tessera.Model(tiny_model))
    for name in NAMES:
        if name == "max_tokens":  # the second positional argument
            continue
        with pytest.raises(TypeError, match=f"generate\\(\\): {name} must be"):
            session.generate([1, 2], 4, **{name: object()})
    with pytest.raises(TypeError, match="unexpected keyword argument 'temp'"):
        session.generate([1, 2], 4, temp=0.5)
    with pytest.raises(tessera.TesseraError, match="at most one constraint"):
        session.generate([1, 2], 4, **{k: v for k, v in OFF_DEFAULT.items() if k != "max_tokens"})
    settings = dict(ONE_CONSTRAINT)
    r = session.generate([104, 105, 106], settings.pop("max_tokens"), **settings)
    assert r["finish_reason"] in ("length", "stop") and 1 <= len(r["ids"]) <= 7


def test_every_setting_through_the_engine(tiny_model):
    """The whole list at once (one constraint) through Engine.generate runs,
    and its greedy speculative output equals plain decoding's."""
    engine = tessera.Engine(tiny_model)
    r = engine.generate(prompt_ids=[104, 105, 106], **ONE_CONSTRAINT)
    assert r.finish_reason in ("length", "stop", "eos") and 1 <= len(r.ids) <= 7
    greedy = {**ONE_CONSTRAINT, "temperature": 0.0, "repeat_penalty": 1.0, "stop": [], "json_schema": ""}
    plain = engine.generate(prompt_ids=[104, 105, 106], **{**greedy, "speculative": "off"})
    assert engine.generate(prompt_ids=[104, 105, 106], **greedy).ids == plain.ids
