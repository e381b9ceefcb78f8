"""Tessera: on-device LLM inference runtime (Python bindings)."""

try:  # installed wheel: the extension lives inside the package
    from . import _tessera as _core
except ImportError:  # in-tree build: build/python is on PYTHONPATH
    import _tessera as _core

__version__ = _core.__version__

# Every tessera::Error raised through the bindings (a ValueError subclass).
TesseraError = _core.TesseraError
GgufFile = _core.GgufFile
# Tokenizer.from_file(GGUF | tokenizer.json | HF dir): encode / decode exactly as Hugging Face.
Tokenizer = _core.Tokenizer
