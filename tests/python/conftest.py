"""Shared pytest fixtures: the tessera CLI binary, pulled real models, and
tiny random Hugging Face checkpoints made on the fly with transformers."""

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def pytest_configure(config):
    config.addinivalue_line("markers", "network: downloads from PyPI; runs by default (CI has PyPI access) and "
                                       "skips itself when PyPI cannot be reached")


def tessera_bin() -> str:
    return os.environ.get("TESSERA_BIN", str(REPO / "build" / "tessera"))


def run_tessera(*args, check=True, input=None, timeout=600, env=None):
    """Runs the CLI; returns CompletedProcess with text stdout/stderr.
    env: variables added to (not replacing) the environment."""
    proc = subprocess.run([tessera_bin(), *map(str, args)], capture_output=True, text=True, errors="replace",
                          input=input, timeout=timeout, env={**os.environ, **env} if env else None)
    if check and proc.returncode != 0:
        raise AssertionError(f"tessera {' '.join(map(str, args))} exited {proc.returncode}:\n"
                             f"{proc.stderr}")
    return proc


@pytest.fixture(scope="session")
def pulled_model_path():
    """pulled_model_path(name) -> path of the GGUF, pulled on first use (idempotent)."""
    cache = {}

    def get(name: str) -> str:
        if name not in cache:
            proc = run_tessera("pull", name)
            path = proc.stdout.strip().splitlines()[-1]
            assert Path(path).is_file(), path
            cache[name] = path
        return cache[name]

    return get


@pytest.fixture(scope="session")
def real_bundle(pulled_model_path, tmp_path_factory):
    """real_bundle(name, weights="lut4") -> a bundle of that pulled model with
    the default convert options (int8 embeddings) and `weights` layers, made
    once per session."""
    cache = {}

    def get(name: str, weights: str = "lut4") -> Path:
        if (name, weights) not in cache:
            out = tmp_path_factory.mktemp("bundles") / f"{name}-{weights}"
            run_tessera("convert", pulled_model_path(name), "-o", out, "-t", "2", "--weights", weights)
            cache[(name, weights)] = out
        return cache[(name, weights)]

    return get


def info_json(model) -> dict:
    return json.loads(run_tessera("info", model, "--json").stdout)
