"""Writes the fuzzers' seed inputs into fuzz/seeds/<target>/: small valid
GGUF, safetensors, config.json, PNG, JPEG and WAV files covering the formats the
parsers accept. Deterministic; rerun after a format is added."""

import json
from pathlib import Path

import numpy as np

import gguf
from safetensors.numpy import save

HERE = Path(__file__).resolve().parent
rng = np.random.default_rng(0)


def gguf_seed(path: Path, arch: str, types):
    w = gguf.GGUFWriter(str(path), arch)
    w.add_context_length(64)
    w.add_embedding_length(32)
    w.add_block_count(1)
    w.add_feed_forward_length(64)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(10000.0)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"t{i}" for i in range(8)])
    w.add_array("test.ints", [1, 2, 3])
    w.add_array("test.nested", [[1, 2], [3]])
    w.add_bool("test.flag", True)
    w.add_float64("test.f64", 0.5)
    for i, t in enumerate(types):
        x = rng.standard_normal((2, 256)).astype(np.float32)
        if t in (gguf.GGMLQuantizationType.F32,):
            w.add_tensor(f"t{i}", x)
        elif t == gguf.GGMLQuantizationType.F16:
            w.add_tensor(f"t{i}", x.astype(np.float16))
        else:  # random block bytes: the parsers and dequantizers take any bits
            block, size = gguf.GGML_QUANT_SIZES[t]
            q = rng.integers(0, 256, (2, 256 // block * size), dtype=np.uint8)
            w.add_tensor(f"t{i}", q, raw_shape=q.shape, raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    T = gguf.GGMLQuantizationType
    out = HERE / "seeds" / "gguf_fuzz"
    out.mkdir(parents=True, exist_ok=True)
    gguf_seed(out / "llama_plain.gguf", "llama", [T.F32, T.F16, T.BF16, T.Q8_0])
    gguf_seed(out / "qwen2_quants.gguf", "qwen2", [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1])
    gguf_seed(out / "gemma3_kquants.gguf", "gemma3", [T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.IQ4_NL])

    out = HERE / "seeds" / "safetensors_fuzz"
    out.mkdir(parents=True, exist_ok=True)
    (out / "mixed.safetensors").write_bytes(save(
        {"a": rng.standard_normal((3, 4)).astype(np.float32),
         "b": np.arange(6, dtype=np.int64).reshape(2, 3),
         "c": np.ones(5, dtype=np.float16),
         "d": np.array([1, 0, 1], dtype=np.bool_),
         "e": np.zeros((0, 4), dtype=np.uint8)},
        metadata={"format": "pt"}))

    out = HERE / "seeds" / "config_fuzz"
    out.mkdir(parents=True, exist_ok=True)
    import transformers
    configs = {
        "llama": transformers.LlamaConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2,
                                          num_attention_heads=4, num_key_value_heads=2,
                                          rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                                        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                        "original_max_position_embeddings": 8192}),
        "qwen2": transformers.Qwen2Config(),
        "qwen3": transformers.Qwen3Config(),
        "gemma3_text": transformers.Gemma3TextConfig(),
        "gemma3": transformers.Gemma3Config(),
        "qwen3_5_text": transformers.Qwen3_5TextConfig(),
        "gemma4_text": transformers.Gemma4TextConfig(),
        "lfm2": transformers.Lfm2Config(),
    }
    for name, cfg in configs.items():
        (out / f"{name}.json").write_text(cfg.to_json_string())

    # Images in each pixel format the decoders take.
    import io
    from PIL import Image
    out = HERE / "seeds" / "image_fuzz"
    out.mkdir(parents=True, exist_ok=True)
    pixels = rng.integers(0, 256, (12, 17, 3), dtype=np.uint8)
    for name, (mode, fmt, kw) in {"rgb.png": ("RGB", "PNG", {}), "palette.png": ("P", "PNG", {}),
                                  "gray_alpha.png": ("LA", "PNG", {}), "interlaced.png": ("RGB", "PNG", {"interlace": 1}),
                                  "baseline.jpg": ("RGB", "JPEG", {}), "progressive.jpg": ("RGB", "JPEG", {"progressive": True}),
                                  "gray.jpg": ("L", "JPEG", {})}.items():
        data = io.BytesIO()
        Image.fromarray(pixels).convert(mode).save(data, format=fmt, **kw)
        (out / name).write_bytes(data.getvalue())

    # WAV files: 16-bit mono (Python's wave module), 8-bit stereo.
    import wave
    out = HERE / "seeds" / "audio_fuzz"
    out.mkdir(parents=True, exist_ok=True)
    for name, (channels, width) in {"mono16.wav": (1, 2), "stereo8.wav": (2, 1)}.items():
        data = io.BytesIO()
        with wave.open(data, "wb") as w:
            w.setnchannels(channels)
            w.setsampwidth(width)
            w.setframerate(16000)
            w.writeframes(rng.integers(0, 256, 400 * channels * width, dtype=np.uint8).tobytes())
        (out / name).write_bytes(data.getvalue())


if __name__ == "__main__":
    main()
