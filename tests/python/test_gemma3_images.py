"""Images in Gemma 3's sequence, against transformers: a tiny random
Gemma3ForConditionalGeneration (seeded), prompts with one and two images.

Each image becomes the processor's span `<start_of_image>`, 16 soft tokens,
`<end_of_image>`; the soft tokens' embeddings are the image features (our
reference encoder, src/media/gemma3_vision.h) instead of their table rows, and
during prefill they attend to each other both ways (transformers'
token_type_ids mask: OR(causal, same image), and on sliding layers
AND(window, OR(causal, same image))). The span is longer than the sliding
window (8) and than a prefill call of 7, so the window cuts into it and the
call split would cut it: the session runs each span in one call of its own.

Checked: logits at every position (top-1 and the parity suite's 1e-3
tolerance), greedy ids over 32 tokens equal transformers' generate(), and our
own bits unchanged by the call size (1, 7, 512), the thread count (1, 2) and
the chunk count; the encoder on the vector kernels agrees with the reference
and transformers within tolerances, its bits independent of threads."""

import numpy as np
import pytest

import tessera

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

try:  # in-tree build: build/python on PYTHONPATH
    import _tessera as core
except ModuleNotFoundError:  # installed wheel
    from tessera import _tessera as core

BOI, EOI, IMAGE = 260, 261, 262  # tiny_models.make_tiny_gemma3_with_images's special tokens
TOKENS_PER_IMAGE = 16
IMAGE_SIZE = 112


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from tiny_models import GEMMA3_IMAGE_SIZE, GEMMA3_IMAGE_TOKENS, make_tiny_gemma3_with_images
    assert (GEMMA3_IMAGE_SIZE, GEMMA3_IMAGE_TOKENS) == (IMAGE_SIZE, TOKENS_PER_IMAGE)
    directory = tmp_path_factory.mktemp("tiny_gemma3_images")
    return directory, make_tiny_gemma3_with_images(directory)


def prompt_with_images(n_images, seed):
    """bos, text, then per image: text, <start_of_image>, soft tokens, <end_of_image>, text."""
    rng = np.random.default_rng(seed)
    text = lambda n: rng.integers(3, 256, n).tolist()  # byte tokens
    ids, begins = [256] + text(5), []  # <bos>
    for _ in range(n_images):
        ids += [BOI]
        begins.append(len(ids))
        ids += [IMAGE] * TOKENS_PER_IMAGE + [EOI] + text(4)
    pixels = [rng.uniform(-1, 1, (3, IMAGE_SIZE, IMAGE_SIZE)).astype(np.float32) for _ in range(n_images)]
    return ids, begins, pixels


def media_of(directory, begins, pixels):
    return [(b, core.gemma3_image_features(str(directory), p), True) for b, p in zip(begins, pixels)]


def hf_inputs(ids, pixels):
    input_ids = torch.tensor([ids])
    return dict(input_ids=input_ids, pixel_values=torch.from_numpy(np.stack(pixels)),
                token_type_ids=(input_ids == IMAGE).long(), attention_mask=torch.ones_like(input_ids))


def assert_close_to_hf(ours, ref, what):
    assert ours.shape == ref.shape
    top1 = (ours.argmax(-1) == ref.argmax(-1)).mean()
    err, scale = np.abs(ours - ref).max(), np.abs(ref).max()
    assert top1 == 1.0, f"{what}: top-1 agreement {top1:.3f}"
    assert err <= 1e-3 * scale, f"{what}: max |Δlogit| {err:.3g} > 1e-3 · {scale:.3g}"


@pytest.mark.parametrize("n_images", [1, 2])
def test_logits_match_transformers_at_every_position(tiny, n_images):
    directory, model = tiny
    ids, begins, pixels = prompt_with_images(n_images, seed=n_images)
    with torch.no_grad():
        ref = model(**hf_inputs(ids, pixels)).logits[0].numpy()
    session = tessera.Session(tessera.Model(str(directory), reference=True))
    ours = session.forward(ids, all_logits=True, media=media_of(directory, begins, pixels))
    assert_close_to_hf(ours, ref, f"{n_images} image(s)")
    # The bidirectional mask matters here: causal attention over the same
    # embeddings gives other logits inside the spans.
    causal = tessera.Session(tessera.Model(str(directory), reference=True)).forward(
        ids, all_logits=True, media=[(b, f, False) for b, f, _ in media_of(directory, begins, pixels)])
    assert np.abs(causal - ref).max() > 1e-2 * np.abs(ref).max()


def test_call_size_threads_and_chunks_do_not_change_bits(tiny):
    directory, _ = tiny
    ids, begins, pixels = prompt_with_images(2, seed=7)
    media = media_of(directory, begins, pixels)
    one = tessera.Session(tessera.Model(str(directory), reference=True)).forward(ids, all_logits=True, media=media)
    for threads, chunks, per_call in [(1, 1, 1), (1, 1, 7), (2, 1, 512), (2, 2, 7), (2, 1, 1)]:
        model = tessera.Model(str(directory), reference=True, threads=threads, chunks=chunks)
        got = tessera.Session(model).forward(ids, all_logits=True, max_tokens_per_call=per_call, media=media)
        assert np.array_equal(got, one), f"threads={threads} chunks={chunks} per_call={per_call}"


@pytest.mark.parametrize("n_images", [1, 2])
def test_greedy_ids_match_transformers_generate(tiny, n_images):
    directory, model = tiny
    ids, begins, pixels = prompt_with_images(n_images, seed=10 + n_images)
    with torch.no_grad():
        out = model.generate(**hf_inputs(ids, pixels), max_new_tokens=32, min_new_tokens=32, do_sample=False)
    want = out[0, len(ids):].tolist()
    media = media_of(directory, begins, pixels)
    for per_call in (1, 7, 512):
        session = tessera.Session(tessera.Model(str(directory), reference=True))
        got = session.generate(ids, 32, ignore_eos=True, max_tokens_per_call=per_call, media=media)["ids"]
        assert got == want, f"per_call={per_call}"


def test_bad_spans_are_clear_errors(tiny):
    directory, _ = tiny
    ids, begins, pixels = prompt_with_images(1, seed=3)
    features = core.gemma3_image_features(str(directory), pixels[0])
    session = tessera.Session(tessera.Model(str(directory), reference=True))
    with pytest.raises(tessera.TesseraError, match="outside"):
        session.forward(ids, media=[(len(ids) - 2, features, True)])
    with pytest.raises(tessera.TesseraError, match="hidden size"):
        session.forward(ids, media=[(begins[0], features[:, :10], True)])
    with pytest.raises(tessera.TesseraError, match="overlaps"):
        session.forward(ids, media=[(begins[0], features, True), (begins[0] + 2, features[:4], True)])
    model = tessera.Model(str(directory), reference=True, prefill_sizes=[8])
    with pytest.raises(tessera.TesseraError, match="largest call"):
        tessera.Session(model).forward(ids, media=[(begins[0], features, True)])
    assert session.length == 0


def test_batched_beside_a_text_only_request(tiny):
    """After its prefill, a request with an image decodes in one batched step
    with a text-only one (Session::decode_batch): each keeps the ids it gets
    alone."""
    directory, _ = tiny
    model = tessera.Model(str(directory), reference=True)
    ids, begins, pixels = prompt_with_images(1, seed=21)
    media = media_of(directory, begins, pixels)
    text = [256] + np.random.default_rng(5).integers(3, 256, 30).tolist()
    alone_image = tessera.Session(model).generate(ids, 16, ignore_eos=True, media=media)["ids"]
    alone_text = tessera.Session(model).generate(text, 16, ignore_eos=True)["ids"]
    a, b = tessera.Session(model), tessera.Session(model)
    got_a = [int(a.forward(ids, all_logits=False, media=media)[-1].argmax())]
    got_b = [int(b.forward(text, all_logits=False)[-1].argmax())]
    for _ in range(15):
        logits = tessera.decode_batch([a, b], [got_a[-1], got_b[-1]])
        got_a.append(int(logits[0].argmax()))
        got_b.append(int(logits[1].argmax()))
    assert got_a == alone_image
    assert got_b == alone_text


def test_encoder_on_the_vector_kernels_agrees_with_the_reference(tiny):
    """Gemma3VisionEncoder (the engine's encoder unless --reference): f32
    lanes instead of the reference's double sums, within 1e-5 of the
    reference's largest feature; its bits do not depend on the thread count."""
    directory, model = tiny
    for seed in range(3):
        pixels = np.random.default_rng(seed).uniform(-1, 1, (3, IMAGE_SIZE, IMAGE_SIZE)).astype(np.float32)
        ref = core.gemma3_image_features(str(directory), pixels)
        fast = core.gemma3_image_features(str(directory), pixels, reference=False, threads=2)
        assert np.abs(fast - ref).max() <= 1e-5 * np.abs(ref).max()
        assert np.array_equal(fast, core.gemma3_image_features(str(directory), pixels, reference=False, threads=1))
        with torch.no_grad():
            hf = model.get_image_features(pixel_values=torch.from_numpy(pixels)[None])
        hf = getattr(hf, "pooler_output", hf)
        hf = (hf[0] if isinstance(hf, (list, tuple)) else hf).reshape(fast.shape).numpy()
        assert np.abs(fast - hf).max() <= 1e-4 * np.abs(hf).max()
