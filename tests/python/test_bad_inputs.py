"""Corrupt, truncated and hostile inputs: every one must give a clean error
(exit code 2, a message naming the problem) and never a crash. Run in CI twice:
against the normal build and against an ASan+UBSan build (make test-asan)."""

import json
import os
import random
import struct

import numpy as np
import pytest

from conftest import run_tessera

SANITIZED = os.environ.get("TESSERA_SANITIZED") == "1"
SANITIZER_MARKERS = ("AddressSanitizer", "runtime error:", "LeakSanitizer", "Segmentation fault")
CASES = 60 if SANITIZED else 120  # mutations per file kind


def assert_clean(proc, expect_error=True):
    for marker in SANITIZER_MARKERS:
        assert marker not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode in (0, 2), f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    if expect_error:
        assert proc.returncode == 2, proc.stdout[-2000:]
    if proc.returncode == 2:
        assert proc.stderr.startswith("error: "), proc.stderr[-2000:]


def write_tiny_gguf(path):
    """A small valid llama GGUF. Tensor sizes are multiples of 32 bytes, so the
    file ends exactly where the last tensor ends: any truncation cuts data."""
    import gguf
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(128)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_vocab_size(32)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"t{i}" for i in range(32)])
    rng = np.random.default_rng(0)
    w.add_tensor("token_embd.weight", rng.standard_normal((32, 64)).astype(np.float32))
    w.add_tensor("blk.0.attn_norm.weight", rng.standard_normal(64).astype(np.float16))
    q8 = gguf.quants.quantize(rng.standard_normal((8, 64)).astype(np.float32),
                              gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("blk.0.attn_q.weight", q8, raw_shape=q8.shape,
                 raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def write_tiny_hf_dir(path):
    from safetensors.numpy import save_file
    path.mkdir()
    config = dict(model_type="llama", architectures=["LlamaForCausalLM"], vocab_size=32,
                  hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                  rms_norm_eps=1e-5, tie_word_embeddings=True)
    (path / "config.json").write_text(json.dumps(config))
    rng = np.random.default_rng(0)
    save_file({"model.embed_tokens.weight": rng.standard_normal((32, 64)).astype(np.float32),
               "model.norm.weight": np.ones(64, dtype=np.float16)},
              str(path / "model.safetensors"))
    return path


@pytest.fixture
def tiny_gguf(tmp_path):
    return write_tiny_gguf(tmp_path / "tiny.gguf")


@pytest.fixture
def tiny_hf(tmp_path):
    return write_tiny_hf_dir(tmp_path / "hf")


def test_valid_baselines_are_accepted(tiny_gguf, tiny_hf):
    assert_clean(run_tessera("info", tiny_gguf, check=False), expect_error=False)
    assert_clean(run_tessera("info", tiny_hf, check=False), expect_error=False)
    assert run_tessera("info", tiny_gguf, check=False).returncode == 0
    assert run_tessera("info", tiny_hf, check=False).returncode == 0


def test_truncated_gguf(tiny_gguf, tmp_path):
    data = tiny_gguf.read_bytes()
    rng = random.Random(1)
    cuts = sorted({0, 1, 4, 8, 23, len(data) - 1} | {rng.randrange(len(data)) for _ in range(CASES)})
    bad = tmp_path / "cut.gguf"
    for cut in cuts:
        bad.write_bytes(data[:cut])
        assert_clean(run_tessera("info", bad, check=False))


def test_flipped_gguf_header_bytes(tiny_gguf, tmp_path):
    data = tiny_gguf.read_bytes()
    header_end = data.find(b"t31") + 64  # metadata, then the tensor infos
    rng = random.Random(2)
    bad = tmp_path / "flip.gguf"
    for _ in range(CASES):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(min(header_end + 200, len(data)))
            mutated[pos] ^= 1 << rng.randrange(8)
        bad.write_bytes(bytes(mutated))
        assert_clean(run_tessera("info", bad, check=False), expect_error=False)


def gguf_with_tensor_dims(dims, ggml_type=0):
    """A GGUF v3 with no metadata and one tensor of the given dims, no data."""
    out = b"GGUF" + struct.pack("<IQQ", 3, 1, 0)
    name = b"t"
    out += struct.pack("<Q", len(name)) + name + struct.pack("<I", len(dims))
    out += b"".join(struct.pack("<Q", d) for d in dims)
    out += struct.pack("<IQ", ggml_type, 0)
    return out


@pytest.mark.parametrize("dims,needle", [
    ([1 << 40, 1 << 40], "tensor 't'"),              # element count overflows the file
    ([1 << 63, 4], "tensor 't'"),                     # overflows 64 bits
    ([2, 3, 4, 5, 6], "tensor 't'"),                  # too many dims
])
def test_absurd_gguf_dims(tmp_path, dims, needle):
    bad = tmp_path / "dims.gguf"
    bad.write_bytes(gguf_with_tensor_dims(dims))
    proc = run_tessera("info", bad, check=False)
    assert_clean(proc)
    assert needle in proc.stderr


def test_absurd_gguf_counts(tmp_path):
    bad = tmp_path / "counts.gguf"
    bad.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 1 << 62, 1 << 62))
    assert_clean(run_tessera("info", bad, check=False))
    bad.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 60) + b"k")
    assert_clean(run_tessera("info", bad, check=False))


def test_wrong_magic_and_version(tiny_gguf, tmp_path):
    data = tiny_gguf.read_bytes()
    bad = tmp_path / "magic.gguf"
    bad.write_bytes(b"GGUX" + data[4:])
    proc = run_tessera("info", bad, check=False)
    assert_clean(proc)
    bad.write_bytes(data[:4] + struct.pack("<I", 1) + data[8:])
    proc = run_tessera("info", bad, check=False)
    assert_clean(proc)
    assert "version" in proc.stderr


def test_truncated_safetensors(tiny_hf):
    st = tiny_hf / "model.safetensors"
    data = st.read_bytes()
    rng = random.Random(3)
    for cut in sorted({0, 7, 8, 9, len(data) - 1} | {rng.randrange(len(data)) for _ in range(CASES)}):
        st.write_bytes(data[:cut])
        proc = run_tessera("info", tiny_hf, check=False)
        assert_clean(proc)
        assert "model.safetensors" in proc.stderr


def test_flipped_safetensors_header_bytes(tiny_hf):
    st = tiny_hf / "model.safetensors"
    data = st.read_bytes()
    header_len = struct.unpack("<Q", data[:8])[0]
    rng = random.Random(4)
    for _ in range(CASES):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(8 + header_len)
            mutated[pos] ^= 1 << rng.randrange(8)
        st.write_bytes(bytes(mutated))
        assert_clean(run_tessera("info", tiny_hf, check=False), expect_error=False)


def safetensors_bytes(header: dict, data_len: int) -> bytes:
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + b"\0" * data_len


@pytest.mark.parametrize("header,data_len,needle", [
    ({"w": {"dtype": "F32", "shape": [1 << 40, 1 << 40], "data_offsets": [0, 16]}}, 16, "'w'"),
    ({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 1 << 50]}}, 16, "'w'"),
    ({"w": {"dtype": "F32", "shape": [-1, 4], "data_offsets": [0, 16]}}, 16, "'w'"),
    ({"w": {"dtype": "F99", "shape": [4], "data_offsets": [0, 16]}}, 16, "F99"),
    ({"w": {"dtype": "F32", "shape": [4]}}, 16, "data_offsets"),
])
def test_hostile_safetensors_headers(tiny_hf, header, data_len, needle):
    (tiny_hf / "model.safetensors").write_bytes(safetensors_bytes(header, data_len))
    proc = run_tessera("info", tiny_hf, check=False)
    assert_clean(proc)
    assert needle in proc.stderr


def test_huge_safetensors_header_length(tiny_hf):
    (tiny_hf / "model.safetensors").write_bytes(struct.pack("<Q", 1 << 62) + b"{}")
    assert_clean(run_tessera("info", tiny_hf, check=False))


@pytest.mark.parametrize("edit,needle", [
    (lambda c: "{not json", "config.json"),
    (lambda c: json.dumps({**c, "model_type": "mamba9"}), "mamba9"),
    (lambda c: json.dumps({**c, "hidden_size": "big"}), "hidden_size"),
    (lambda c: json.dumps({**c, "num_hidden_layers": -3}), "num_hidden_layers"),
    (lambda c: json.dumps({k: v for k, v in c.items() if k != "vocab_size"}), "vocab_size"),
    (lambda c: "[]", "config.json"),
])
def test_bad_config_json(tiny_hf, edit, needle):
    cfg = tiny_hf / "config.json"
    cfg.write_text(edit(json.loads(cfg.read_text())))
    proc = run_tessera("info", tiny_hf, check=False)
    assert_clean(proc)
    assert needle in proc.stderr


def test_missing_files(tmp_path):
    for target in (tmp_path / "nope.gguf", tmp_path):  # missing file; dir without config
        proc = run_tessera("info", target, check=False)
        assert_clean(proc)


# Hostile images through `tessera run DIR --chat --image ...` on a tiny
# multimodal Gemma 3: each is exit 2 naming the problem, or (a valid one) a
# reply; never a crash, never a pixel buffer sized by a lying header.
@pytest.fixture(scope="module")
def tiny_gemma3_images(tmp_path_factory):
    pytest.importorskip("transformers")
    from tiny_models import make_tiny_gemma3_with_images
    directory = tmp_path_factory.mktemp("tiny_gemma3_images")
    make_tiny_gemma3_with_images(directory)
    return directory


def png_with_header(width, height, body=b""):
    import zlib
    chunk = lambda kind, data: (struct.pack(">I", len(data)) + kind + data +
                                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", body) + chunk(b"IEND", b""))


def a_png(width=5, height=3):
    import zlib
    raw = b"".join(b"\x00" + bytes(range(3 * width)) for _ in range(height))
    return png_with_header(width, height, zlib.compress(raw))


def run_with_images(directory, tmp_path, images, prompt="Describe.", chat=True):
    paths = []
    for i, data in enumerate(images):
        paths.append(tmp_path / f"image{i}")
        paths[-1].write_bytes(data)
    args = ["run", directory, "--reference", "-n", "2", "-p", prompt] + (["--chat"] if chat else [])
    for p in paths:
        args += ["--image", p]
    proc = run_tessera(*args, check=False)
    # --reference says first which path it runs; the error (if any) follows.
    proc.stderr = "".join(l for l in proc.stderr.splitlines(True) if not l.startswith("reference path: "))
    return proc


def test_a_valid_and_a_one_pixel_image_are_accepted(tiny_gemma3_images, tmp_path):
    for image in (a_png(), a_png(1, 1)):
        assert_clean(run_with_images(tiny_gemma3_images, tmp_path, [image]), expect_error=False)


@pytest.mark.parametrize("data, needle", [
    (b"", "image"),
    (b"not an image at all", "image"),
    (png_with_header(50000, 50000), "over the limit"),
    (png_with_header(0, 7), "image"),
    (png_with_header(7, 7, b"garbage"), "image"),
    (b"\xff\xd8\xff\xe0" + bytes(100), "image"),  # a JPEG that ends in its header
])
def test_hostile_images(tiny_gemma3_images, tmp_path, data, needle):
    proc = run_with_images(tiny_gemma3_images, tmp_path, [data])
    assert_clean(proc)
    assert needle in proc.stderr


def test_truncated_and_mutated_images(tiny_gemma3_images, tmp_path):
    import io
    from PIL import Image
    jpeg = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 30, 3), dtype=np.uint8)).save(jpeg, "JPEG")
    rng = random.Random(7)
    for source in (jpeg.getvalue(), a_png(40, 30)):
        for cut in (len(source) // 3, len(source) - 3):
            assert_clean(run_with_images(tiny_gemma3_images, tmp_path, [source[:cut]]))
        for _ in range(CASES // 12):
            data = bytearray(source)
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            assert_clean(run_with_images(tiny_gemma3_images, tmp_path, [bytes(data)]), expect_error=False)


def test_marks_and_images_that_do_not_pair_up(tiny_gemma3_images, tmp_path):
    proc = run_with_images(tiny_gemma3_images, tmp_path, [a_png()] * 3, prompt="<start_of_image> only one",
                           chat=False)
    assert_clean(proc)
    assert "3 images for 1 image marks" in proc.stderr
    proc = run_with_images(tiny_gemma3_images, tmp_path, [a_png()] * 60)  # 60 × 16 tokens > the 1,024 context
    assert_clean(proc)
    assert "context" in proc.stderr
