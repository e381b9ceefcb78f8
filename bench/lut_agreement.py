"""Teacher-forced greedy agreement of converted bundles with the fp32
reference (the source GGUF dequantized), on the oracle corpus.

For each prompt the reference generates 32 greedy tokens; each bundle then
reads prompt + those tokens and we count the positions where its argmax
equals the reference's token.

    PYTHONPATH=python:build/python python3 bench/lut_agreement.py \\
        --model ~/.cache/tessera/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf \\
        --weights lut4 --group-sizes 1,16,32,64 [--extra "--calibration none"]

--models A.gguf,B.gguf scores already-quantized files (e.g. llama.cpp's
llama-quantize output) instead of converting.
"""

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np

import tessera

REPO = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--weights", default="lut4")
    ap.add_argument("--group-sizes", default="16")
    ap.add_argument("--extra", default="", help="more convert flags, space separated")
    ap.add_argument("--tessera", default=str(REPO / "build" / "tessera"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models", default="", help="comma-separated model files (e.g. GGUFs from llama-quantize) "
                    "to score as they are, instead of converting")
    args = ap.parse_args()
    corpus = json.loads((REPO / "python/tessera/data/oracle_prompts.json").read_text())
    tok = tessera.Tokenizer.from_file(args.model)
    ref = tessera.Model(args.model, threads=args.threads, reference=True)
    refs = []
    for p in corpus["prompts"]:
        ids = tok.encode(p)
        refs.append((ids, tessera.Session(ref).generate(ids, corpus["max_tokens"], ignore_eos=True)["ids"]))
    def agreement(model):
        agree = total = 0
        for ids, gen in refs:
            logits = tessera.Session(model).forward(ids + gen[:-1], all_logits=True)[len(ids) - 1:]
            agree += int((logits.argmax(-1) == np.array(gen)).sum())
            total += len(gen)
        return agree, total

    if args.models:
        for path in args.models.split(","):
            agree, total = agreement(tessera.Model(path, threads=args.threads))
            f = Path(path) / "weights.bin" if Path(path).is_dir() else Path(path)
            print(f"{path}: agreement {agree / total:.3f} ({agree}/{total}), {f.stat().st_size / 2**20:.1f} MiB",
                  flush=True)
        return
    with tempfile.TemporaryDirectory() as tmp:
        for gs in args.group_sizes.split(","):
            out = Path(tmp) / f"b{gs}"
            subprocess.run([args.tessera, "convert", args.model, "-o", out, "-t", str(args.threads), "--weights",
                            args.weights, "--group-size", gs, *args.extra.split()], check=True, capture_output=True)
            agree, total = agreement(tessera.Model(str(out), threads=args.threads))
            mib = (out / "weights.bin").stat().st_size / 2**20
            print(f"{args.weights} group {gs} {args.extra}: agreement {agree / total:.3f} ({agree}/{total}), weights {mib:.1f} MiB",
                  flush=True)


if __name__ == "__main__":
    main()
