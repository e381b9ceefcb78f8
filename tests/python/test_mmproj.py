"""Images through an mmproj GGUF (llama.cpp's vision projector file) for
Gemma 3: the tower and projector of a tiny random
Gemma3ForConditionalGeneration written as llama.cpp's converter writes them
(tiny_models.write_gemma3_mmproj: clip's names, the soft norm as 1 + w, the
input projection in F16).

Checked: the features equal the checkpoint's own tower's bit for bit with an
f32 projection, and transformers' within the F16 projection's rounding as
llama.cpp writes it; the engine given --mmproj generates what it generates
from the checkpoint's own tower; a real GGUF text model (Gemma 3 270M, whose
vocabulary lacks <image_soft_token>) takes images through a 640-wide random
mmproj at the CLI and the engine, deterministically, and its text-only
replies are unchanged; bad mmproj files are errors that name the key or
tensor."""

import io

import numpy as np
import pytest

import tessera
from conftest import run_tessera

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")

try:  # in-tree build: build/python on PYTHONPATH
    import _tessera as core
except ModuleNotFoundError:  # installed wheel
    from tessera import _tessera as core


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from tiny_models import make_tiny_gemma3_with_images, write_gemma3_mmproj
    directory = tmp_path_factory.mktemp("tiny_gemma3_mmproj")
    model = make_tiny_gemma3_with_images(directory)
    f16, f32 = directory / "mmproj-f16.gguf", directory / "mmproj-f32.gguf"
    write_gemma3_mmproj(model, f16)
    write_gemma3_mmproj(model, f32, projection_f16=False)
    return directory, model, f16, f32


def photo(seed):
    pixels = np.random.default_rng(seed).integers(0, 256, (41 + seed, 57, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def chat(text="Describe this.", images=1):
    return [{"role": "user", "content": [{"type": "image"}] * images + [{"type": "text", "text": text}]}]


def test_features_equal_the_checkpoints_tower(tiny):
    directory, model, f16, f32 = tiny
    pixels = np.random.default_rng(0).standard_normal((3, 112, 112)).astype(np.float32)
    own = core.gemma3_image_features(str(directory), pixels)
    assert np.array_equal(core.gemma3_image_features(str(f32), pixels), own)
    with torch.no_grad():
        hf = model.get_image_features(pixel_values=torch.from_numpy(pixels)[None])
    hf = getattr(hf, "pooler_output", hf)
    hf = (hf[0] if isinstance(hf, (list, tuple)) else hf).reshape(own.shape).numpy()
    # As llama.cpp writes it (an F16 projection): within its rounding.
    got = core.gemma3_image_features(str(f16), pixels)
    assert np.abs(got - hf).max() <= 2e-3 * np.abs(hf).max()
    assert np.abs(own - hf).max() <= 1e-4 * np.abs(hf).max()


def test_engine_with_mmproj_generates_what_the_checkpoints_tower_does(tiny):
    directory, _, _, f32 = tiny
    images = [photo(1), photo(2)]
    want = tessera.Engine(str(directory), reference=True).generate(
        messages=chat(images=2), images=images, max_tokens=24, ignore_eos=True)
    got = tessera.Engine(str(directory), reference=True, mmproj=str(f32)).generate(
        messages=chat(images=2), images=images, max_tokens=24, ignore_eos=True)
    assert got.ids == want.ids


@pytest.fixture(scope="module")
def wide_mmproj(tmp_path_factory):
    """A random Gemma 3 vision tower and projector into 640 dimensions (Gemma 3 270M's)."""
    from tiny_models import write_gemma3_mmproj
    cfg = transformers.Gemma3Config(
        text_config=dict(vocab_size=300, hidden_size=640, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=1, num_key_value_heads=1, head_dim=32),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                           image_size=112, patch_size=14),
        mm_tokens_per_image=16, image_token_index=299, boi_token_index=297, eoi_token_index=298)
    torch.manual_seed(3)
    model = transformers.Gemma3ForConditionalGeneration(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "vision_tower" in name or "multi_modal_projector" in name:
                p.copy_(torch.randn_like(p) * (0.3 if p.dim() > 1 else 0.1))
    path = tmp_path_factory.mktemp("wide_mmproj") / "mmproj.gguf"
    write_gemma3_mmproj(model, path)
    return path


def test_a_gguf_text_model_takes_images_through_an_mmproj(pulled_model_path, wide_mmproj, tmp_path):
    gguf = pulled_model_path("gemma3-270m")
    engine = tessera.Engine(gguf, threads=2, mmproj=str(wide_mmproj))
    a = engine.generate(messages=chat(), images=[photo(1)], max_tokens=12, ignore_eos=True)
    again = tessera.Engine(gguf, threads=1, mmproj=str(wide_mmproj)).generate(
        messages=chat(), images=[photo(1)], max_tokens=12, ignore_eos=True)
    assert a.ids == again.ids and len(a.ids) == 12
    assert a.prompt_tokens > 16  # the image's 16 soft tokens are in the prompt
    other = engine.generate(messages=chat(), images=[photo(2)], max_tokens=12, ignore_eos=True)
    assert other.ids != a.ids
    # Text alone is what the model says without the projector.
    plain = [{"role": "user", "content": "Say hello."}]
    assert engine.generate(messages=plain, max_tokens=8).ids == \
        tessera.Engine(gguf, threads=2).generate(messages=plain, max_tokens=8).ids
    # The CLI: tessera run GGUF --mmproj FILE --image FILE --chat.
    image = tmp_path / "photo.png"
    image.write_bytes(photo(1))
    out = run_tessera("run", gguf, "--mmproj", wide_mmproj, "--image", image, "--chat", "-p", "Describe this.",
                      "-n", 12, "--ignore-eos", "--temp", 0, "--json")
    import json
    assert json.loads(out.stdout)["ids"] == a.ids


def test_bad_mmproj_files_name_the_problem(tiny, tmp_path):
    directory, model, f16, _ = tiny
    from tiny_models import write_gemma3_mmproj
    llava = tmp_path / "llava.gguf"
    write_gemma3_mmproj(model, llava, projector_type="llava")
    with pytest.raises(tessera.TesseraError, match="clip.projector_type"):
        tessera.Engine(str(directory), reference=True, mmproj=str(llava))
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(f16.read_bytes()[:5000])
    with pytest.raises(tessera.TesseraError, match="cut.gguf"):
        tessera.Engine(str(directory), reference=True, mmproj=str(cut))
    with pytest.raises(tessera.TesseraError, match="missing.gguf"):
        tessera.Engine(str(directory), reference=True, mmproj=str(tmp_path / "missing.gguf"))
    proc = run_tessera("run", str(directory), "--mmproj", llava, "--image", tmp_path / "x.png", "-p", "hi", check=False)
    assert proc.returncode != 0 and "projector" in proc.stderr
