"""Tokenizer encode throughput: Tessera vs Hugging Face tokenizers, same text,
same tokenizer, same process, one core.

    TOKENIZERS_PARALLELISM=false taskset -c 0 \
      env PYTHONPATH=python:build/python python3 bench/tokenizer_bench.py [--mb 5] [--text FILE]

English text: FILE, else the license texts every Debian system ships
(/usr/share/common-licenses/*, ~250 KB of English prose), repeated to --mb MB.
Models: the pulled SmolLM2-135M-Instruct GGUF (byte-level BPE) and, with
--gemma, Gemma 3 270M (SentencePiece BPE); with --gguf PATH (repeatable) any
tokenizer GGUF instead, e.g. llama.cpp's Llama 3 and Qwen2 vocabularies
(ggml-vocab-llama-bpe.gguf, ggml-vocab-qwen2.gguf, which the vocabulary suite
caches under $TESSERA_HOME/peer-sdist/llama-cpp-python-0.3.36/models/); the
HF side of a Llama 3 vocabulary gets the original's ignore_merges. The HF reference is built from the
same GGUF by transformers (AutoTokenizer gguf_file=...); its backend
`tokenizers.Tokenizer.encode` is timed (no Python-side wrapper overhead). Ids
are checked equal. Prints one line per model and tokenizer: MB/s (best of 3).
"""

import argparse
import glob
import os
import subprocess
import sys
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def english_text(path, mb):
    if path:
        base = open(path, encoding="utf-8").read()
    else:
        files = sorted(glob.glob("/usr/share/common-licenses/*"))
        base = "\n".join(open(f, encoding="utf-8", errors="replace").read() for f in files if os.path.isfile(f))
    want = int(mb * 1_000_000)
    reps = want // max(1, len(base.encode())) + 1
    text = (base * reps).encode()[:want].decode("utf-8", errors="ignore")
    return text


def best_of(fn, n=3):
    best = float("inf")
    out = None
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def pulled(name, tessera_bin):
    return subprocess.run([tessera_bin, "pull", name], capture_output=True, text=True, check=True).stdout.split()[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=5.0)
    ap.add_argument("--text")
    ap.add_argument("--gemma", action="store_true", help="also Gemma 3 (SentencePiece BPE)")
    ap.add_argument("--gguf", action="append", default=[], help="a tokenizer GGUF (repeatable; replaces the pulled models)")
    ap.add_argument("--tessera-bin", default=os.environ.get("TESSERA_BIN", "build/tessera"))
    args = ap.parse_args()

    try:
        from tessera import _core
    except ImportError:
        import _tessera as _core
    from transformers import AutoTokenizer

    text = english_text(args.text, args.mb)
    nbytes = len(text.encode())
    print(f"text: {nbytes / 1e6:.2f} MB English, python {sys.version.split()[0]}, "
          f"cpu affinity {sorted(os.sched_getaffinity(0))}")
    models = ["smollm2-135m-instruct"] + (["gemma3-270m"] if args.gemma else [])
    for name in args.gguf or models:
        path = name if args.gguf else pulled(name, args.tessera_bin)
        if args.gguf:
            name = os.path.basename(path)
        ours = _core.Tokenizer.from_file(path)
        hf = AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path)).backend_tokenizer
        if "llama-bpe" in name:  # Llama 3's tokenizer.json sets ignore_merges; transformers' GGUF loader does not
            hf.model.ignore_merges = True
        t_ours, ids_ours = best_of(lambda: ours.encode(text))
        t_hf, enc = best_of(lambda: hf.encode(text))
        same = ids_ours == enc.ids
        print(f"{name:24s} {ours.kind:18s} tessera {nbytes / t_ours / 1e6:7.2f} MB/s   "
              f"HF tokenizers {nbytes / t_hf / 1e6:7.2f} MB/s   tokens {len(ids_ours)}   ids equal: {same}")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
