"""scripts/check_layers.py, the include-order check ctest runs
(layers.include_order), can fail: an upward include in a copy of the tree's
layer table is reported by file, line and the layers it may include."""

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "check_layers.py"), str(root)],
                          capture_output=True, text=True)


def test_the_tree_passes():
    assert run_check(REPO).returncode == 0


def test_an_upward_include_fails(tmp_path):
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO / "docs" / "ARCHITECTURE.md", tmp_path / "docs" / "ARCHITECTURE.md")
    (tmp_path / "src" / "runtime").mkdir(parents=True)
    (tmp_path / "src" / "runtime" / "ok.cc").write_text('#include "model/builders.h"\n#include "core/error.h"\n')
    assert run_check(tmp_path).returncode == 0
    (tmp_path / "src" / "runtime" / "up.cc").write_text('#include "core/error.h"\n#include "convert/bundle_cache.h"\n')
    proc = run_check(tmp_path)
    assert proc.returncode == 1
    assert "src/runtime/up.cc:2: runtime includes convert" in proc.stdout
    # A test source may include anything; a layer missing from the table is an error.
    (tmp_path / "src" / "runtime" / "up.cc").rename(tmp_path / "src" / "runtime" / "up_test.cc")
    assert run_check(tmp_path).returncode == 0
    (tmp_path / "src" / "gpu").mkdir()
    (tmp_path / "src" / "gpu" / "x.cc").write_text("")
    assert "layer 'gpu' is not in" in run_check(tmp_path).stdout


def test_only_the_backend_choice_includes_the_cpu_backend(tmp_path):
    """The backend seam: `cpu (only runtime/model.cc)` in the table lets that
    one file include the CPU backend; any other file, of any layer (cli's
    `all of the above` included), fails."""
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO / "docs" / "ARCHITECTURE.md", tmp_path / "docs" / "ARCHITECTURE.md")
    for layer in ("runtime", "cli", "eval"):
        (tmp_path / "src" / layer).mkdir(parents=True)
    (tmp_path / "src" / "runtime" / "model.cc").write_text('#include "cpu/cpu_backend.h"\n')
    (tmp_path / "src" / "runtime" / "session.cc").write_text('#include "backend/backend.h"\n')
    assert run_check(tmp_path).returncode == 0
    (tmp_path / "src" / "runtime" / "session.cc").write_text('#include "backend/backend.h"\n#include "cpu/executor.h"\n')
    (tmp_path / "src" / "cli" / "cmd_bench.cc").write_text('#include "cpu/executor.h"\n')
    proc = run_check(tmp_path)
    assert proc.returncode == 1
    assert "src/runtime/session.cc:2: runtime includes cpu (only runtime/model.cc may)" in proc.stdout
    assert "src/cli/cmd_bench.cc:1: cli includes cpu (only runtime/model.cc may)" in proc.stdout
