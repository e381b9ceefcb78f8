"""tessera.GenerationSettings: every generation setting, made from the
runtime's one list (include/tessera/generation_settings.hpp, read through
_tessera.generation_settings_fields()) with its type, default and doc line.

Engine.generate, Engine.stream and Session.generate take the same names as
keyword arguments; `**dataclasses.asdict(settings)` passes a whole
GenerationSettings. A setting added to the list appears here, in their
signatures and in their docs without a change to this package."""

from __future__ import annotations

import dataclasses
import inspect

from . import _core

# (name, type, default, doc) for every setting, in the list's order; type is
# "int", "float", "bool", "str" or "list[str]".
FIELDS = tuple(tuple(f) for f in _core.generation_settings_fields())
NAMES = tuple(f[0] for f in FIELDS)


def _field(name, type_name, default, doc):
    if isinstance(default, list):
        spec = dataclasses.field(default_factory=lambda d=tuple(default): list(d), metadata={"doc": doc})
    else:
        spec = dataclasses.field(default=default, metadata={"doc": doc})
    return name, type_name, spec


def settings_doc(indent: str = "    ") -> str:
    """One line per setting: name (type, default): doc."""
    return "\n".join(f"{indent}{name} ({type_name}, default {default!r}): {doc}"
                     for name, type_name, default, doc in FIELDS)


GenerationSettings = dataclasses.make_dataclass(
    "GenerationSettings", [_field(*f) for f in FIELDS], frozen=True, namespace={"__module__": __name__})
GenerationSettings.__doc__ = ("Every generation setting with its default (include/tessera/generation_settings.hpp):\n"
                              + settings_doc())


def settings_arguments(caller: str, settings: dict) -> dict:
    """The keyword arguments `settings` of `caller`, checked against the list
    (TypeError for another name, as Python raises for an unknown keyword);
    `stop` may be one string or None."""
    for name in settings:
        if name not in NAMES:
            raise TypeError(f"{caller}() got an unexpected keyword argument '{name}'")
    out = dict(settings)
    if "stop" in out:
        stop = out["stop"]
        out["stop"] = [stop] if isinstance(stop, str) else list(stop or [])
    return out


def with_settings(function):
    """Gives `function(..., **settings)` a signature with every setting as a
    keyword-only parameter (with its type and default) and their docs."""
    signature = inspect.signature(function)
    params = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    for name, type_name, default, _ in FIELDS:
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=type_name))
    function.__signature__ = signature.replace(parameters=params)
    function.__doc__ = ((function.__doc__ or "").rstrip() + "\n\n        Generation settings:\n"
                        + settings_doc(" " * 8))
    return function
