"""Gemma 3's image encoder, the plain reference (src/media/gemma3_vision.h),
against transformers: a tiny random Gemma3ForConditionalGeneration (seeded;
SigLIP tower of 2 layers on a 4 × 4 patch grid pooled to 4 soft tokens),
its image features (`get_image_features`: tower, average pool, RMSNorm,
projection) from the same pixel values, and from pixel values our own
preprocessing made from a photo."""

import json

import numpy as np
import pytest

try:  # in-tree build: build/python on PYTHONPATH
    import _tessera as core
except ModuleNotFoundError:  # installed wheel
    from tessera import _tessera as core

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny_gemma3(tmp_path_factory):
    cfg = transformers.Gemma3Config(
        text_config=dict(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=32, max_position_embeddings=512,
                         sliding_window=16),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                           image_size=56, patch_size=14),
        mm_tokens_per_image=4, image_token_index=299, boi_token_index=297, eoi_token_index=298)
    torch.manual_seed(0)
    model = transformers.Gemma3ForConditionalGeneration(cfg).eval()
    with torch.no_grad():  # norms and the projector away from their zero / one initialisation
        for name, p in model.named_parameters():
            if "vision_tower" in name or "multi_modal_projector" in name:
                p.copy_(torch.randn_like(p) * (0.3 if p.dim() > 1 else 0.1))
    directory = tmp_path_factory.mktemp("tiny_gemma3_vision")
    model.save_pretrained(directory)
    return directory, model


def features(model, pixel_values):
    with torch.no_grad():
        out = model.model.get_image_features(torch.from_numpy(pixel_values)[None])
    out = getattr(out, "pooler_output", out)
    return (out[0] if isinstance(out, (list, tuple)) else out).reshape(-1, model.config.text_config.hidden_size).numpy()


def test_random_pixels_give_transformers_features(tiny_gemma3):
    directory, model = tiny_gemma3
    rng = np.random.default_rng(0)
    for _ in range(3):
        pixels = rng.uniform(-1, 1, (3, 56, 56)).astype(np.float32)
        ours = core.gemma3_image_features(str(directory), pixels)
        theirs = features(model, pixels)
        assert ours.shape == theirs.shape == (4, 64)
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)


def test_a_photo_through_our_preprocessing(tiny_gemma3):
    from llamacpp_peer import peer_dir
    directory, model = tiny_gemma3
    config = json.dumps({"size": {"height": 56, "width": 56}, "resample": 2, "image_mean": [0.5] * 3,
                         "image_std": [0.5] * 3})
    pixels = core.preprocess_image((peer_dir() / "tools" / "mtmd" / "test-1.jpeg").read_bytes(), config)
    np.testing.assert_allclose(core.gemma3_image_features(str(directory), pixels), features(model, pixels),
                               rtol=1e-4, atol=1e-4)


def test_wrong_inputs_are_clear_errors(tiny_gemma3, tmp_path):
    directory, _ = tiny_gemma3
    with pytest.raises(core.TesseraError, match="pixel values"):
        core.gemma3_image_features(str(directory), np.zeros((3, 28, 28), np.float32))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gemma3_text"}))
    with pytest.raises(core.TesseraError, match="vision_config"):
        core.gemma3_image_features(str(tmp_path), np.zeros((3, 56, 56), np.float32))
