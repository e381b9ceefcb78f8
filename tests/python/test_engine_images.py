"""Images through the engine's door (tessera.Engine(..., messages=..., images=[...])),
against transformers' own pipeline: a tiny random
Gemma3ForConditionalGeneration (seeded) with a byte tokenizer, Gemma 3's
special tokens and chat template, and transformers' Gemma3Processor (its
image processor and tokenizer) making input_ids, pixel_values and
token_type_ids from the same chat and the same image files.

Checked: greedy ids over 32 tokens with one and two images (a JPEG and a
PNG) equal transformers' generate(); the second turn about the same image
reuses the whole first prompt from the slot (no image encoded again: the
reused tokens cover its span) and still equals transformers; a different
image at the same place shares nothing past it; bad requests are clear
errors."""

import io
import json

import numpy as np
import pytest

import tessera

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")

@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from tiny_models import GEMMA3_IMAGE_TOKENS as T, make_tiny_gemma3_with_images

    directory = tmp_path_factory.mktemp("tiny_gemma3_engine_images")
    model = make_tiny_gemma3_with_images(directory)
    template = (directory / "chat_template.jinja").read_text()
    image_processor = transformers.Gemma3ImageProcessor.from_pretrained(directory)
    hf_tok = transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(directory / "tokenizer.json"), bos_token="<bos>", eos_token="<end_of_turn>",
        pad_token="<pad>", extra_special_tokens={"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
                                                 "image_token": "<image_soft_token>"})
    processor = transformers.Gemma3Processor(image_processor=image_processor, tokenizer=hf_tok,
                                             chat_template=template, image_seq_length=T)
    return directory, model, processor


def photo(seed, fmt):
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (37 + seed, 53, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format=fmt)
    return out.getvalue()


def chat(n_images, text="Describe this."):
    return [{"role": "user", "content": [{"type": "image"}] * n_images + [{"type": "text", "text": text}]}]


def hf_ids(model, processor, messages, images, steps=32):
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    pictures = [Image.open(io.BytesIO(b)).convert("RGB") for b in images]
    inputs = processor(text=text, images=pictures or None, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=steps, min_new_tokens=steps, do_sample=False)
    return out[0, inputs["input_ids"].shape[1]:].tolist()


@pytest.mark.parametrize("n_images", [1, 2])
def test_greedy_ids_match_transformers(tiny, n_images):
    directory, model, processor = tiny
    images = [photo(1, "JPEG"), photo(2, "PNG")][:n_images]
    want = hf_ids(model, processor, chat(n_images), images)
    engine = tessera.Engine(str(directory), reference=True)
    got = engine.generate(messages=chat(n_images), images=images, max_tokens=32, ignore_eos=True)
    assert got.ids == want


def test_second_turn_reuses_the_image_and_another_image_does_not(tiny, tmp_path):
    directory, model, processor = tiny
    image = photo(3, "JPEG")
    path = tmp_path / "photo.jpg"
    path.write_bytes(image)
    engine = tessera.Engine(str(directory), reference=True, prefix_cache_mb=0)
    first = engine.generate(messages=chat(1), images=[path], max_tokens=8, ignore_eos=True)
    turn = chat(1) + [{"role": "assistant", "content": first.text}, {"role": "user", "content": "And now?"}]
    second = engine.generate(messages=turn, images=[image], max_tokens=16, ignore_eos=True)
    assert second.reused_tokens >= first.prompt_tokens  # the image's span came from the slot
    assert second.ids == hf_ids(model, processor, turn, [image], steps=16)
    # The same chat about another picture: the reuse stops before its image.
    other = engine.generate(messages=turn, images=[photo(4, "JPEG")], max_tokens=4, ignore_eos=True)
    text = processor.apply_chat_template(turn, add_generation_prompt=True, tokenize=False)
    before_image = len(processor.tokenizer(text.split("<start_of_image>")[0] + "\n\n<start_of_image>")["input_ids"])
    assert other.reused_tokens <= before_image


def test_bad_image_requests_are_clear_errors(tiny, tmp_path):
    directory, _, _ = tiny
    engine = tessera.Engine(str(directory), reference=True)
    with pytest.raises(tessera.TesseraError, match="2 images for 1 image marks"):
        engine.generate(messages=chat(1), images=[photo(1, "PNG"), photo(2, "PNG")], max_tokens=1)
    with pytest.raises(tessera.TesseraError, match="image"):
        engine.generate(messages=chat(1), images=[b"not an image"], max_tokens=1)
    with pytest.raises(tessera.TesseraError, match="image"):
        engine.generate(messages=chat(1), images=[photo(1, "JPEG")[:200]], max_tokens=1)
    # The engine keeps serving.
    assert len(engine.generate(messages=chat(1), images=[photo(1, "PNG")], max_tokens=2).ids) == 2


def test_server_takes_images_as_data_urls(tiny):
    """`tessera serve` with OpenAI's image_url content parts (data: URLs),
    through the openai client: the reply equals the engine's; a remote URL,
    a corrupt image, more images than --max-images and an image over
    --max-image-pixels are 400s, and the server keeps serving."""
    import base64
    openai = pytest.importorskip("openai")
    from serve_helpers import Server
    directory, _, _ = tiny
    image = photo(5, "PNG")
    url = "data:image/png;base64," + base64.b64encode(image).decode()
    want = tessera.Engine(str(directory), reference=True).generate(
        messages=chat(1), images=[image], max_tokens=16, ignore_eos=True).text
    server = Server(directory, "--reference", "--max-images", "2", "--max-image-pixels", "3000")
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)

        def ask(image_url):
            content = [{"type": "image_url", "image_url": {"url": image_url}}, {"type": "text", "text": "Describe this."}]
            return client.chat.completions.create(model=server.model_name, messages=[{"role": "user", "content": content}],
                                                  max_tokens=16, temperature=0, extra_body={"ignore_eos": True})

        assert ask(url).choices[0].message.content == want
        with pytest.raises(openai.BadRequestError, match="data: URL"):
            ask("https://example.com/cat.png")
        with pytest.raises(openai.BadRequestError, match="image"):
            ask("data:image/png;base64," + base64.b64encode(image[:100]).decode())
        # The caps: images per request, pixels per image (from the header).
        three = [{"type": "image_url", "image_url": {"url": url}}] * 3
        with pytest.raises(openai.BadRequestError, match="limit of 2"):
            client.chat.completions.create(model=server.model_name, messages=[{"role": "user", "content": three}],
                                           max_tokens=1)
        big = io.BytesIO()
        Image.new("RGB", (100, 100)).save(big, format="PNG")
        with pytest.raises(openai.BadRequestError, match="over the limit"):
            ask("data:image/png;base64," + base64.b64encode(big.getvalue()).decode())
        assert ask(url).choices[0].message.content == want
    finally:
        server.stop()


def test_cli_run_with_images(tiny, tmp_path):
    """`tessera run DIR --chat --image PATH -p TEXT`: the engine's ids; a
    missing file and a model without a vision tower are exit code 2 with the
    problem named."""
    import subprocess
    from conftest import tessera_bin
    directory, _, _ = tiny
    path = tmp_path / "photo.png"
    path.write_bytes(photo(6, "PNG"))
    want = tessera.Engine(str(directory), reference=True).generate(
        messages=chat(1), images=[path], max_tokens=12, ignore_eos=True).ids
    run = subprocess.run([tessera_bin(), "run", str(directory), "--reference", "--chat", "--image", str(path), "-p",
                          "Describe this.", "-n", "12", "--ignore-eos", "--json"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["ids"] == want
    missing = subprocess.run([tessera_bin(), "run", str(directory), "--reference", "--chat", "--image",
                              str(tmp_path / "none.png"), "-p", "x", "-n", "1"], capture_output=True, text=True)
    assert missing.returncode == 2 and "none.png" in missing.stderr


def test_images_as_numpy_arrays(tiny):
    """A uint8 RGB array is the picture itself: the same ids as the PNG file
    of those pixels; other arrays are refused by name."""
    directory, _, _ = tiny
    pixels = np.random.default_rng(8).integers(0, 256, (31, 47, 3), dtype=np.uint8)
    png = io.BytesIO()
    Image.fromarray(pixels).save(png, format="PNG")
    engine = tessera.Engine(str(directory), reference=True)
    want = engine.generate(messages=chat(1), images=[png.getvalue()], max_tokens=12, ignore_eos=True).ids
    assert engine.generate(messages=chat(1), images=[pixels], max_tokens=12, ignore_eos=True).ids == want
    with pytest.raises(ValueError, match="uint8"):
        engine.generate(messages=chat(1), images=[pixels.astype(np.float32)], max_tokens=1)


def test_cli_chat_image_command(tiny, tmp_path):
    """`tessera chat DIR` with `/image PATH` before a message: the first reply
    is the engine's for that chat and image; the next turn reuses the image's
    span with the conversation's KV (more reused tokens than the first
    prompt's image span ends at); a missing file is an error that keeps the
    chat going."""
    import subprocess
    from conftest import tessera_bin
    directory, _, _ = tiny
    path = tmp_path / "photo.png"
    path.write_bytes(photo(9, "PNG"))
    first = tessera.Engine(str(directory), reference=True).generate(
        messages=chat(1), images=[path], max_tokens=6, ignore_eos=True)
    script = f"/image {tmp_path / 'missing.png'}\n/image {path}\nDescribe this.\nAnd now?\n"
    proc = subprocess.run([tessera_bin(), "chat", str(directory), "--reference", "-n", "6", "--ignore-eos",
                           "--temp", "0"], input=script.encode(), capture_output=True, timeout=300)
    stderr = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, stderr
    assert "missing.png: cannot open the file" in stderr and "image attached to the next message" in stderr
    assert proc.stdout.startswith(first.text.encode() + b"\n"), (proc.stdout[:200], first.text)
    reused = [int(line.split()[1]) for line in stderr.splitlines() if line.startswith("(reused ")]
    assert len(reused) == 2 and reused[0] == 0 and reused[1] >= first.prompt_tokens, (reused, first.prompt_tokens)
