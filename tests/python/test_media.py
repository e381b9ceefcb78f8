"""Images and audio in (src/media): decoding, resizing and the processors'
preprocessing, each against what Hugging Face's processors (PIL backend)
and feature extractors see and give.

- Decoding equals Pillow's `Image.open(...).convert("RGB")` on llama.cpp's
  own test photo (tools/mtmd/test-1.jpeg) and on PNGs and JPEGs Pillow
  writes in every pixel format (palette, gray, alpha, 1-bit, interlaced,
  progressive) and a 16-bit RGB PNG (its high bytes). 16-bit grayscale is
  not compared: Pillow reads it as I;16 and clips it on convert("RGB"),
  where we keep the high byte.
- Resizing equals Pillow's `Image.resize`, bit for bit, over random sizes
  (up, down, mixed) and all six filters.
- WAV files decode to their samples and Gemma 4's log-mel features equal
  its feature extractor's within 1e-6.
- Pixel values equal Gemma 3's (pan and scan too) and SigLIP's processors
  exactly, and the
  patches and grids of Qwen2-VL's processor (Qwen2 / 2.5 / 3-VL, Qwen3.5:
  smart resize with Python's rounding, merge-block patch order) and of
  Gemma 4's (aspect-preserving resize within a soft-token budget, padded
  patches and positions).
- Bad input (truncated, corrupt, not an image, a header claiming 50,000 ×
  50,000 pixels, unsupported processor settings) is a TesseraError naming
  the problem."""

import io
import json
import struct
import zlib

import numpy as np
import pytest

from llamacpp_peer import peer_dir

try:  # in-tree build: build/python on PYTHONPATH
    import _tessera as core
except ModuleNotFoundError:  # installed wheel
    from tessera import _tessera as core

Image = pytest.importorskip("PIL.Image")


def photo() -> bytes:
    return (peer_dir() / "tools" / "mtmd" / "test-1.jpeg").read_bytes()


def encoded(image, fmt, **kw) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **kw)
    return out.getvalue()


def pil_rgb(data: bytes) -> np.ndarray:
    return np.array(Image.open(io.BytesIO(data)).convert("RGB"))


def test_the_photo_decodes_as_pillow_does():
    pixels = core.decode_image(photo())
    assert pixels.shape == (488, 640, 3)
    assert np.array_equal(pixels, pil_rgb(photo()))


def random_pixels(rng, h, w):
    # Smooth gradients plus noise: JPEG's chroma subsampling and the
    # resampling filters see structure, not only noise.
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([(x * 255 // max(w - 1, 1)), (y * 255 // max(h - 1, 1)), ((x + y) * 7 % 256)], axis=-1)
    return np.clip(base + rng.integers(-40, 41, (h, w, 3)), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("mode,fmt,kw", [
    ("RGB", "PNG", {}), ("RGBA", "PNG", {}), ("L", "PNG", {}), ("LA", "PNG", {}), ("P", "PNG", {}),
    ("1", "PNG", {}), ("RGB", "PNG", {"interlace": 1}),
    ("RGB", "JPEG", {"quality": 90}), ("L", "JPEG", {}), ("RGB", "JPEG", {"progressive": True}),
    ("RGB", "JPEG", {"subsampling": 0}),
])
def test_pixel_formats_decode_as_pillow_does(mode, fmt, kw):
    rng = np.random.default_rng(7)
    image = Image.fromarray(random_pixels(rng, 37, 53))
    image = image.convert(mode) if mode != "P" else image.convert("P", palette=Image.Palette.ADAPTIVE, colors=17)
    data = encoded(image, fmt, **kw)
    assert np.array_equal(core.decode_image(data), pil_rgb(data)), (mode, fmt, kw)


def test_16_bit_rgb_keeps_the_high_byte():
    rng = np.random.default_rng(3)
    wide = rng.integers(0, 65536, (9, 11, 3), dtype=np.uint16)
    # A 16-bit RGB PNG by hand (Pillow writes none): big-endian samples.
    raw = b"".join(b"\x00" + row.astype(">u2").tobytes() for row in wide)
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 11, 9, 16, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    assert np.array_equal(core.decode_image(png), (wide >> 8).astype(np.uint8))
    assert np.array_equal(core.decode_image(png), pil_rgb(png))


def test_resizing_is_pillows_bit_for_bit():
    rng = np.random.default_rng(0)
    for _ in range(300):
        h, w = (int(v) for v in rng.integers(1, 200, 2))
        height, width = (int(v) for v in rng.integers(1, 260, 2))
        resample = int(rng.integers(0, 6))
        pixels = random_pixels(rng, h, w)
        ours = core.resize_image(pixels, width, height, resample)
        theirs = np.array(Image.fromarray(pixels).resize((width, height), resample=resample))
        assert np.array_equal(ours, theirs), ((w, h), (width, height), resample)


def processors():
    from transformers import Gemma3ImageProcessorPil, SiglipImageProcessorPil
    return {"gemma3": Gemma3ImageProcessorPil(size={"height": 896, "width": 896}),
            "siglip": SiglipImageProcessorPil(size={"height": 384, "width": 384}, resample=3,
                                              image_mean=[0.48145466, 0.4578275, 0.40821073],
                                              image_std=[0.26862954, 0.26130258, 0.27577711])}


@pytest.mark.parametrize("name", ["gemma3", "siglip"])
def test_pixel_values_equal_the_hf_processor(name):
    processor = processors()[name]
    config = json.dumps(processor.to_dict())
    rng = np.random.default_rng(11)
    images = [photo(), encoded(Image.fromarray(random_pixels(rng, 300, 217)), "PNG"),
              encoded(Image.fromarray(random_pixels(rng, 20, 1000)).convert("RGBA"), "PNG")]
    for data in images:
        ours = core.preprocess_image(data, config)
        theirs = processor(Image.open(io.BytesIO(data)).convert("RGB"), return_tensors="np")["pixel_values"][0]
        assert ours.dtype == np.float32 and ours.shape == theirs.shape
        assert np.array_equal(ours, theirs), np.abs(ours - theirs).max()


def test_pan_and_scan_crops_equal_the_hf_processor():
    from transformers import Gemma3ImageProcessorPil
    processor = Gemma3ImageProcessorPil(size={"height": 64, "width": 64}, do_pan_and_scan=True,
                                        pan_and_scan_min_crop_size=32, pan_and_scan_max_num_crops=4,
                                        pan_and_scan_min_ratio_to_activate=1.2)
    config = json.dumps(processor.to_dict())
    rng = np.random.default_rng(4)
    # Square (no crops), just under and over the ratio, wide and tall, past
    # max_num_crops, capped by min_crop_size, and a last crop shorter than the rest.
    for h, w in [(100, 100), (100, 119), (100, 121), (100, 300), (300, 90), (40, 1000), (33, 100), (100, 250)]:
        data = encoded(Image.fromarray(random_pixels(rng, h, w)), "PNG")
        ours = core.preprocess_image_and_crops(data, config)
        theirs = processor(Image.open(io.BytesIO(data)).convert("RGB"), return_tensors="np")
        assert ours.shape[0] == 1 + theirs["num_crops"][0], (h, w)
        assert np.array_equal(ours, theirs["pixel_values"]), (h, w)


def png_header(width, height):
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))


def test_bad_images_are_clear_errors():
    jpeg = photo()
    png = encoded(Image.fromarray(random_pixels(np.random.default_rng(1), 40, 40)), "PNG")
    cases = {
        b"": "no bytes",
        b"GIF89a....": "not a JPEG or PNG",
        jpeg[:200]: "JPEG",
        jpeg[:2] + bytes(200): "JPEG",
        png[:60]: "PNG",
        png[:40] + bytes(len(png) - 40): "PNG",
        png_header(50_000, 50_000) + bytes(64): "over the limit",
        png_header(0, 10) + bytes(64): "empty",
    }
    for data, words in cases.items():
        with pytest.raises(core.TesseraError, match=words):
            core.decode_image(data)


def test_processor_settings_it_cannot_honour_are_refused():
    data = photo()
    size = {"size": {"height": 32, "width": 32}}
    for config, words in [({"size": {"shortest_edge": 224}}, "size"), ({**size, "do_center_crop": True}, "do_center_crop"),
                          ({**size, "resample": 9}, "resample"), ({**size, "image_std": [0, 1, 1]}, "image_std"),
                          ({"size": {"height": 0, "width": 10}}, "size"), ({}, "size")]:
        with pytest.raises(core.TesseraError, match=words):
            core.preprocess_image(data, json.dumps(config))


@pytest.mark.parametrize("settings", [
    {},  # Qwen2-VL / Qwen2.5-VL: patch 14, CLIP's mean and std
    {"patch_size": 16, "image_mean": [0.5] * 3, "image_std": [0.5] * 3,
     "size": {"shortest_edge": 65536, "longest_edge": 16777216}},  # Qwen3-VL / Qwen3.5
    {"size": {"shortest_edge": 3136, "longest_edge": 50000}, "resample": 2},  # a small budget: downscaled
])
def test_qwen_patches_equal_the_hf_processor(settings):
    from transformers import Qwen2VLImageProcessorPil
    processor = Qwen2VLImageProcessorPil(**settings)
    config = json.dumps(processor.to_dict())
    rng = np.random.default_rng(5)
    # The photo, a tiny picture (up to min_pixels), a long thin one, and
    # sides at exact half-multiples of the factor (Python's round: ties to even).
    images = [photo()] + [encoded(Image.fromarray(random_pixels(rng, h, w)), "PNG")
                          for h, w in [(9, 13), (30, 900), (42, 70), (98, 126)]]
    for data in images:
        ours, grid = core.qwen_preprocess_image(data, config)
        theirs = processor(Image.open(io.BytesIO(data)).convert("RGB"), return_tensors="np")
        assert list(grid) == theirs["image_grid_thw"][0].tolist()
        assert np.array_equal(ours, theirs["pixel_values"])


def test_qwen_refuses_extreme_aspect_ratios():
    data = encoded(Image.fromarray(random_pixels(np.random.default_rng(2), 2, 500)), "PNG")
    with pytest.raises(core.TesseraError, match="aspect ratio"):
        core.qwen_preprocess_image(data, "{}")


@pytest.mark.parametrize("settings", [{}, {"max_soft_tokens": 70},
                                      {"max_soft_tokens": 1120, "do_normalize": True, "image_mean": [0.5] * 3,
                                       "image_std": [0.5] * 3}])
def test_gemma4_patches_equal_the_hf_processor(settings):
    from transformers import Gemma4ImageProcessorPil
    processor = Gemma4ImageProcessorPil(**settings)
    config = json.dumps(processor.to_dict())
    rng = np.random.default_rng(9)
    # The photo, a small picture (scaled up), and strips so thin that one
    # side rounds to no multiple of the pooled patch (the aspect-ratio path).
    images = [photo()] + [encoded(Image.fromarray(random_pixels(rng, h, w)), "PNG")
                          for h, w in [(20, 31), (6, 900), (700, 9), (96, 144)]]
    for data in images:
        values, positions, soft_tokens = core.gemma4_preprocess_image(data, config)
        theirs = processor(Image.open(io.BytesIO(data)).convert("RGB"), return_tensors="np")
        assert soft_tokens == theirs["num_soft_tokens_per_image"][0]
        assert np.array_equal(positions, theirs["image_position_ids"][0])
        assert np.array_equal(values, theirs["pixel_values"][0])


def test_gemma4_refuses_an_unsupported_token_budget():
    with pytest.raises(core.TesseraError, match="max_soft_tokens"):
        core.gemma4_preprocess_image(photo(), json.dumps({"max_soft_tokens": 100}))


def wav_bytes(samples, rate=16000, bits=16, float_format=False, extensible=False):
    """A WAV file of `samples` ([frames, channels] ints, or floats for float_format), by hand."""
    samples = np.asarray(samples)
    frames, channels = samples.shape
    if float_format:
        data = samples.astype("<f4" if bits == 32 else "<f8").tobytes()
    elif bits == 8:
        data = samples.astype(np.uint8).tobytes()
    elif bits == 24:
        v = samples.astype("<i4").reshape(-1)
        data = b"".join(int(s).to_bytes(3, "little", signed=True) for s in v)
    else:
        data = samples.astype("<i2" if bits == 16 else "<i4").tobytes()
    tag = 3 if float_format else 1
    block = channels * bits // 8
    fmt = struct.pack("<HHIIHH", 0xFFFE if extensible else tag, channels, rate, rate * block, block, bits)
    if extensible:
        fmt += struct.pack("<HHI", 22, bits, 0) + struct.pack("<H", tag) + bytes(14)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"LIST" + struct.pack("<I", 3) + b"abc\x00"
    body += b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def test_wav_decodes_every_sample_format():
    rng = np.random.default_rng(6)
    ints16 = rng.integers(-32768, 32768, (50, 2))
    samples, rate = core.decode_wav(wav_bytes(ints16, rate=22050))
    assert rate == 22050
    assert np.array_equal(samples, ((ints16[:, 0] / 32768 + ints16[:, 1] / 32768) / 2).astype(np.float32))
    mono8 = rng.integers(0, 256, (40, 1))
    assert np.array_equal(core.decode_wav(wav_bytes(mono8, bits=8))[0], ((mono8[:, 0] - 128) / 128).astype(np.float32))
    ints24 = rng.integers(-(1 << 23), 1 << 23, (30, 1))
    assert np.array_equal(core.decode_wav(wav_bytes(ints24, bits=24))[0], (ints24[:, 0] / (1 << 23)).astype(np.float32))
    floats = rng.uniform(-1, 1, (20, 1)).astype(np.float32)
    assert np.array_equal(core.decode_wav(wav_bytes(floats, bits=32, float_format=True, extensible=True))[0], floats[:, 0])
    # Python's own wave module writes the common case.
    import wave
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000), w.writeframes(ints16[:, 0].astype("<i2").tobytes())
    assert np.array_equal(core.decode_wav(out.getvalue())[0], (ints16[:, 0] / 32768).astype(np.float32))


def test_bad_wavs_are_clear_errors():
    good = wav_bytes(np.zeros((100, 1), dtype=np.int16))
    huge = bytearray(good)
    huge[-200 - 4:-200] = struct.pack("<I", 2_000_000_000)  # the data chunk claims 10^9 samples
    for data, words in [(b"", "no bytes"), (b"RIFF....WAVX", "not a WAV"), (good[:30], "past the end"),
                        (good[:48], "no data chunk"), (wav_bytes(np.zeros((4, 1)), bits=12), "12-bit")]:
        with pytest.raises(core.TesseraError, match=words):
            core.decode_wav(data)
    samples, _ = core.decode_wav(bytes(huge))  # a streamed WAV's size field: what is there is read
    assert len(samples) == 100


def test_gemma4_audio_features_match_the_hf_extractor():
    from transformers.models.gemma4.feature_extraction_gemma4 import Gemma4AudioFeatureExtractor
    extractor = Gemma4AudioFeatureExtractor()
    config = extractor.to_json_string()
    rng = np.random.default_rng(8)
    # A tone in noise after a silent quarter (log of the mel floor), at
    # lengths that pad, that end mid-frame and that exceed max_length.
    for n in [300, 12_345, 16_000, 500_000]:
        t = np.arange(n) / 16000
        x = (0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * rng.standard_normal(n)).astype(np.float32)
        x[: n // 4] = 0
        ours, mask = core.gemma4_audio_features(x, config)
        theirs = extractor([x], return_tensors="np")
        assert np.array_equal(mask, theirs["input_features_mask"][0])
        # numpy's FFT runs in f32, ours in double: the difference is numpy's rounding.
        np.testing.assert_allclose(ours, theirs["input_features"][0], rtol=0, atol=1e-6)
    with pytest.raises(core.TesseraError, match="preemphasis"):
        core.gemma4_audio_features(np.zeros(10, np.float32), json.dumps({"preemphasis": 0.97}))
