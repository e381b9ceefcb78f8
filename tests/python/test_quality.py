"""`tessera quality`: a converted bundle against the GGUF it came from, on a
short English text. An f32 bundle holds exactly the GGUF's dequantized
weights, so it must match the reference everywhere (same kernels, same
order); an int8 bundle must stay close but not be identical."""

import json

import pytest

from conftest import run_tessera

MODEL = "smollm2-135m-instruct"
TEXT = (
    "Lighthouses are towers built near coasts and harbours to guide ships at night and in poor weather. "
    "Early lighthouses burned wood or coal in open fires, and later ones used oil lamps with polished "
    "reflectors. In the nineteenth century the Fresnel lens, made of many carefully shaped rings of glass, "
    "allowed a small flame to produce a beam that could be seen from more than twenty miles away. Each "
    "lighthouse was given its own pattern of flashes, so that sailors could identify it by counting the "
    "seconds between them. Keepers lived at the stations, often with their families, trimming wicks, "
    "cleaning the glass and winding the clockwork that turned the lens. Many lighthouses stood on remote "
    "rocks, and supplies could arrive only when the sea was calm. During the twentieth century electric "
    "lamps replaced oil, and automatic equipment gradually made the keepers unnecessary. Today satellite "
    "navigation guides most ships, yet lighthouses remain in service as a reliable backup, and many of the "
    "old towers are preserved as museums. They are admired for their engineering, their history and the "
    "lonely beauty of the places where they were built, from rocky northern islands to warm tropical "
    "shores, and they continue to appear in paintings, stories and songs about the sea."
)


def quality(bundle, ref, text_file):
    proc = run_tessera("quality", bundle, "--ref", ref, "--text", text_file, "--max-tokens", 128, "--threads", 2,
                       "--json")
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def setup(pulled_model_path, tmp_path_factory):
    ref = pulled_model_path(MODEL)
    tmp = tmp_path_factory.mktemp("quality")
    text_file = tmp / "text.txt"
    text_file.write_text(TEXT, encoding="utf-8")
    return ref, tmp, text_file


def test_f32_bundle_matches_reference_exactly(setup):
    ref, tmp, text_file = setup
    bundle = tmp / "f32"
    run_tessera("convert", ref, "-o", bundle, "--weights", "f32", "--embeddings", "f32", "--lm-head", "f32")
    q = quality(bundle, ref, text_file)
    assert q["tokens"] == 128
    assert q["predictions"] == 127
    assert q["top1_agreement"] == 1.0
    assert q["kl_mean"] < 1e-9
    assert q["kl_max"] < 1e-9
    assert q["logits_cosine_min"] > 0.99999
    assert len(q["layers"]) == 29  # 30 layers; the last one's output is the logits
    assert all(layer["min_cosine"] > 0.99999 for layer in q["layers"]), q["layers"]
    assert q["ppl_test"] == pytest.approx(q["ppl_ref"], rel=1e-6)
    assert 1.0 < q["ppl_ref"] < 100.0


def test_int8_bundle_is_close_to_reference(setup):
    ref, tmp, text_file = setup
    bundle = tmp / "int8"
    run_tessera("convert", ref, "-o", bundle, "--weights", "int8")
    q = quality(bundle, ref, text_file)
    assert q["tokens"] == 128
    assert q["top1_agreement"] >= 0.9
    assert q["kl_mean"] > 0.0
    assert q["ppl_test"] == pytest.approx(q["ppl_ref"], rel=0.10)
    assert q["layer_cosine_min"] > 0.9


def test_text_output_and_errors(setup, tmp_path):
    ref, _, text_file = setup
    proc = run_tessera("quality", ref, "--ref", ref, "--text", text_file, "--max-tokens", 16)
    assert "top-1 agreement     1.0000" in proc.stdout
    assert "worst layers" in proc.stdout
    missing = run_tessera("quality", ref, "--ref", ref, "--text", tmp_path / "nope.txt", check=False)
    assert missing.returncode != 0
    assert "cannot open the text file" in missing.stderr
