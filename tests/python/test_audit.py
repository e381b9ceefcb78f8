"""`tessera audit`: the placement plan of every program and the fallback
shares. A lut4 bundle, an f16 or bf16 bundle and an f32 checkpoint run
every op on an optimized kernel at the CPU's level (pass, exit 0); forcing
TESSERA_ISA=scalar puts ops on reference kernels (fail, exit 1); bad options
exit 2. At avx2 the integer linears (decode GEMV, prefill GEMM) name their
AVX-VNNI variants when they run them (TESSERA_AVX_VNNI=0 switches them off)."""

import json

import pytest

from conftest import run_tessera
from tiny_models import make_tiny_model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    src = tmp_path_factory.mktemp("audit_llama")
    make_tiny_model("llama", src)
    bundle = tmp_path_factory.mktemp("audit_bundle") / "b"
    run_tessera("convert", src, "-o", bundle, "--chunks", "2")
    return src, bundle


def audit(model, *args, env=None):
    proc = run_tessera("audit", model, "--json", "--steps", "3", *args, env=env, check=False)
    return proc, (json.loads(proc.stdout) if proc.stdout.strip() else None)


def test_lut4_bundle_runs_on_optimized_kernels(tiny):
    _, bundle = tiny
    proc, out = audit(bundle, "-t", "2", "--arithmetic", "exact")
    if out["isa"] == "scalar":
        pytest.skip("this CPU has no optimized level")
    assert proc.returncode == 0, proc.stderr
    assert out["pass"] is True
    assert out["fallback_op_percent"] == 0 and out["fallback_time_percent"] == 0
    names = [p["program"] for p in out["programs"]]
    assert names == sorted(names, key=names.index) and "decode.c0" in names and "decode.c1" in names
    assert any(n.startswith("prefill") for n in names)
    kernels = {k["kernel"] for p in out["programs"] for k in p["kernels"]}
    isa = out["isa"]
    # At amx, vector ops and decode linears run the avx512 kernels; prefill
    # programs' linears run on AMX tiles.
    vec = "avx512" if isa == "amx" else isa
    lin = vec + ("_vnni" if out["avx_vnni"] else "")  # the avx2 integer kernels' AVX-VNNI variants
    assert isa == "avx2" or out["avx_vnni"] is False
    assert {f"linear.lut4.{lin}", f"linear.int8.{lin}", f"attention.{vec}", f"rms_norm.{vec}"} <= kernels
    if isa == "amx":
        assert {"linear.lut4.amx", "linear.int8.amx"} <= kernels
        decode = out["programs"][names.index("decode.c0")]
        assert not any(k["kernel"].endswith(".amx") for k in decode["kernels"])
    for p in out["programs"]:
        assert p["ops"] == sum(k["ops"] for k in p["kernels"])
        assert (p["ms_per_call"] > 0) == (p["calls"] > 0)
    assert out["programs"][names.index("decode.c0")]["calls"] == 3
    # At the fast level (the default) every call takes the integer-dot
    # kernels: no program names a GEMM.
    proc, fast = audit(bundle, "-t", "2")
    assert proc.returncode == 0, proc.stderr
    linears = {k["kernel"] for p in fast["programs"] for k in p["kernels"] if k["kernel"].startswith("linear.")}
    assert linears == {f"linear.lut4.{lin}", f"linear.int8.{lin}"}


def test_scalar_level_is_all_reference_and_fails(tiny):
    _, bundle = tiny
    proc, out = audit(bundle, env={"TESSERA_ISA": "scalar"})
    assert proc.returncode == 1
    assert out["pass"] is False and out["isa"] == "scalar"
    assert out["fallback_op_percent"] > 50
    fallback = {k["kernel"] for p in out["programs"] for k in p["kernels"] if k["fallback"]}
    assert "linear.lut4.reference" in fallback and "attention.reference" in fallback


@pytest.mark.parametrize("weights", ["source f32", "f16", "bf16"])
def test_unquantized_linears_run_the_float_kernels(tiny, tmp_path, weights):
    src, _ = tiny
    model = src
    if weights != "source f32":
        model = tmp_path / weights
        run_tessera("convert", src, "-o", model, "--weights", weights, "--embeddings", weights, "--lm-head", weights)
    proc, out = audit(model)
    if out["isa"] == "scalar":
        pytest.skip("this CPU has no optimized level")
    assert proc.returncode == 0, proc.stderr
    assert out["fallback_op_percent"] == 0 and out["fallback_time_percent"] == 0
    vec = "avx512" if out["isa"] == "amx" else out["isa"]
    fmt = weights.split()[-1]
    kernels = {k["kernel"] for p in out["programs"] for k in p["kernels"]}
    assert f"linear.{fmt}.{vec}" in kernels and not any(k.startswith("linear.") and k != f"linear.{fmt}.{vec}"
                                                         for k in kernels), kernels


def test_avx2_integer_linears_name_their_avx_vnni_variants(tiny):
    _, bundle = tiny

    def linear_kernels(vnni):
        proc, out = audit(bundle, "--arithmetic", "exact", env={"TESSERA_ISA": "avx2", "TESSERA_AVX_VNNI": vnni})
        if proc.returncode != 0 and ("does not support avx2" in proc.stderr or "has no AVX-VNNI" in proc.stderr):
            return None
        assert proc.returncode == 0, proc.stderr
        assert out["avx_vnni"] is (vnni == "1")
        return {k["kernel"] for p in out["programs"] for k in p["kernels"] if k["kernel"].startswith("linear.")}

    plain = linear_kernels("0")
    if plain is None:
        pytest.skip("this CPU has no AVX2")
    assert plain == {"linear.lut4.avx2_i16gemm", "linear.int8.avx2_i16gemm", "linear.lut4.avx2", "linear.int8.avx2"}
    vnni = linear_kernels("1")
    if vnni is None:
        pytest.skip("this CPU has no AVX-VNNI")
    assert vnni == {"linear.lut4.avx2_vnni_i16gemm", "linear.int8.avx2_vnni_i16gemm", "linear.lut4.avx2_vnni",
                    "linear.int8.avx2_vnni"}


def test_bad_avx_vnni_setting_is_refused(tiny):
    _, bundle = tiny
    proc = run_tessera("audit", bundle, "--steps", "1", env={"TESSERA_AVX_VNNI": "yes"}, check=False)
    assert proc.returncode != 0 and "TESSERA_AVX_VNNI" in proc.stderr and "expected 0 or 1" in proc.stderr


def test_text_report_and_threshold(tiny):
    _, bundle = tiny
    proc = run_tessera("audit", bundle, "--steps", "2", "--max-fallback", "100", env={"TESSERA_ISA": "scalar"},
                       check=False)
    assert proc.returncode == 0, proc.stderr  # everything allowed on fallback
    assert "decode.c0" in proc.stdout and "PASS" in proc.stdout and "FALLBACK" in proc.stdout


@pytest.mark.parametrize("args", [["--max-fallback", "150"], ["--steps", "0"]])
def test_bad_options_exit_2(tiny, args):
    _, bundle = tiny
    proc = run_tessera("audit", bundle, *args, check=False)
    assert proc.returncode == 2 and "error" in proc.stderr
