"""Gemma 3's image encoder at a real shape: seconds per image on the vector
kernels (Gemma3VisionEncoder) against the plain reference.

Writes a random mmproj GGUF of SigLIP So400m's shape as Gemma 3 4B-27B use
it (hidden 1152, 4304, 27 layers, 16 heads, 896 px, patch 14, 256 tokens,
text hidden 2560; F16 linears as `convert_hf_to_gguf.py --mmproj --outtype
f16` writes them) under $TESSERA_HOME/bench, then times one 896-pixel image
through each encoder. The reference is timed on a copy with --reference-layers
layers (it is minutes per image at 27) and scaled to 27.

    PYTHONPATH=python:build/python .venv/bin/python bench/gemma3_vision_encoder.py --threads 2
"""
import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np


def write_mmproj(path, layers, hidden=1152, inter=4304, heads=16, image=896, patch=14, text=2560, seed=0):
    import gguf
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), "clip")
    w.add_string("general.type", "mmproj")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_string("clip.projector_type", "gemma3")
    for key, value in (("projection_dim", text), ("image_size", image), ("patch_size", patch),
                       ("embedding_length", hidden), ("feed_forward_length", inter), ("block_count", layers),
                       ("attention.head_count", heads)):
        w.add_uint32("clip.vision." + key, value)
    w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])

    def mat(rows, cols):
        return (rng.standard_normal((rows, cols), dtype=np.float32) / np.sqrt(cols)).astype(np.float16)

    def vec(n, scale=0.02, base=0.0):
        return (base + scale * rng.standard_normal(n)).astype(np.float32)

    grid = image // patch
    w.add_tensor("mm.input_projection.weight", mat(hidden, text))
    w.add_tensor("mm.soft_emb_norm.weight", vec(hidden, 0.1, 1.0))
    w.add_tensor("v.patch_embd.weight", (0.02 * rng.standard_normal((hidden, 3, patch, patch))).astype(np.float32))
    w.add_tensor("v.patch_embd.bias", vec(hidden))
    w.add_tensor("v.position_embd.weight", (0.02 * rng.standard_normal((grid * grid, hidden))).astype(np.float32))
    for i in range(layers):
        for name in ("ln1", "ln2"):
            w.add_tensor(f"v.blk.{i}.{name}.weight", vec(hidden, 0.1, 1.0))
            w.add_tensor(f"v.blk.{i}.{name}.bias", vec(hidden))
        for name, rows, cols in (("attn_q", hidden, hidden), ("attn_k", hidden, hidden), ("attn_v", hidden, hidden),
                                 ("attn_out", hidden, hidden), ("ffn_up", inter, hidden), ("ffn_down", hidden, inter)):
            w.add_tensor(f"v.blk.{i}.{name}.weight", mat(rows, cols))
            w.add_tensor(f"v.blk.{i}.{name}.bias", vec(rows))
    w.add_tensor("v.post_ln.weight", vec(hidden, 0.1, 1.0))
    w.add_tensor("v.post_ln.bias", vec(hidden))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reference-layers", type=int, default=1)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--skip-reference", action="store_true", help="time the vector-kernel encoder only")
    args = ap.parse_args()
    import _tessera as core
    home = Path(os.environ.get("TESSERA_HOME", Path.home() / ".cache" / "tessera")) / "bench"
    home.mkdir(parents=True, exist_ok=True)
    full, small = home / "mmproj-so400m-27.gguf", home / f"mmproj-so400m-{args.reference_layers}.gguf"
    for path, layers in ((full, 27), (small, args.reference_layers)):
        if not path.exists():
            write_mmproj(path.with_suffix(".tmp"), layers)
            path.with_suffix(".tmp").rename(path)
    pixels = np.random.default_rng(1).uniform(-1, 1, (3, 896, 896)).astype(np.float32)
    fast = []
    for _ in range(args.reps):
        t = time.perf_counter()
        core.gemma3_image_features(str(full), pixels, reference=False, threads=args.threads)
        fast.append(time.perf_counter() - t)
    print(f"vector kernels, 27 layers, {args.threads} threads: {min(fast):.1f} s per image "
          f"(runs {', '.join(f'{x:.1f}' for x in fast)}; loading included)")
    if args.skip_reference:
        return 0
    t = time.perf_counter()
    ref_small = core.gemma3_image_features(str(small), pixels)
    ref_time = time.perf_counter() - t
    fast_small = core.gemma3_image_features(str(small), pixels, reference=False, threads=args.threads)
    agree = float(np.abs(fast_small - ref_small).max() / np.abs(ref_small).max())
    print(f"reference, {args.reference_layers} layer(s): {ref_time:.1f} s -> about "
          f"{ref_time * 27 / args.reference_layers:.0f} s at 27 layers")
    print(f"agreement at {args.reference_layers} layer(s): max |fast - reference| / max |reference| = {agree:.2e}")


if __name__ == "__main__":
    sys.exit(main())
