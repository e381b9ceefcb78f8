#!/usr/bin/env python3
"""Checks that every non-test source under src/ includes only the layers its
own layer may depend on.

The layer order is written down once, in docs/ARCHITECTURE.md's "Layers"
block: one row per layer, `name  description  → dependency, dependency`
(continuation lines indent the description and continue the
dependencies from the column of the row's arrow). This script reads that block
and every `#include "layer/..."` of the non-test sources, and fails naming
each include that goes to a layer not listed after its own layer's arrow.

A dependency may name the only files outside its own layer that may
include it: `cpu (only runtime/model.cc)` lets runtime/model.cc include cpu/
and no other file of any layer, `all of the above` included (the backend
seam: one place picks the backend).

Usage: scripts/check_layers.py [repository root]   (exit status 1 on a violation)
"""

import pathlib
import re
import sys


def layer_rows(doc: str) -> dict:
    """layer -> its dependency text (after the arrow), from the Layers block."""
    block = doc.split("## Layers", 1)[1].split("```", 2)[1]
    rows = {}
    current, column = None, 0
    for line in block.splitlines():
        if not line.strip():
            continue
        m = re.match(r"^(\w+)\s", line)
        if m:  # a layer's first line: its dependencies follow the last arrow
            current, column = m.group(1), line.rindex("→")
            rows[current] = line[column + 1:]
        elif current and len(line) > column:  # continued: the text from the arrow's column on
            rows[current] += " " + line[column:]
    return rows


def only_files(doc: str) -> dict:
    """layer -> the files (paths under src/) that alone, outside the layer
    itself, may include it, for dependencies written `layer (only a, b)`."""
    found = {}
    for deps in layer_rows(doc).values():
        for dep, files in re.findall(r"(\w+)\s*\(only ([^)]*)\)", deps):
            found.setdefault(dep, set()).update(f.strip() for f in files.split(",") if f.strip())
    return found


def allowed_layers(doc: str) -> dict:
    """layer -> the set of layers it may include, from the Layers block."""
    allowed = {}
    for layer, deps in layer_rows(doc).items():
        deps = re.sub(r"\([^)]*\)", "", deps)  # remarks in parentheses
        names = {d.strip() for d in deps.replace("all of the above", "*").split(",")}
        names = {n.split()[0] for n in names if n and n.split()[0] != "nothing"}
        allowed[layer] = names
    return allowed


def violations(root: pathlib.Path, allowed: dict, only: dict) -> list:
    found = []
    layers = set(allowed)
    for path in sorted((root / "src").rglob("*")):
        if path.suffix not in (".h", ".cc") or path.name.endswith("_test.cc") or "_for_tests" in path.name:
            continue
        layer = path.relative_to(root / "src").parts[0]
        if layer not in allowed:
            found.append(f"{path.relative_to(root)}: layer '{layer}' is not in docs/ARCHITECTURE.md's Layers block")
            continue
        ok = allowed[layer]
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([^/"]+)/', line)
            if not m or m.group(1) not in layers or m.group(1) == layer:
                continue
            if m.group(1) in only:
                files = only[m.group(1)]
                if path.relative_to(root / "src").as_posix() not in files:
                    found.append(f"{path.relative_to(root)}:{n}: {layer} includes {m.group(1)} "
                                 f"(only {', '.join(sorted(files))} may)")
                continue
            if "*" in ok:
                continue
            if m.group(1) not in ok:
                found.append(f"{path.relative_to(root)}:{n}: {layer} includes {m.group(1)} "
                             f"(allowed: {', '.join(sorted(ok)) or 'nothing'})")

    return found


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    doc = (root / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    allowed = allowed_layers(doc)
    found = violations(root, allowed, only_files(doc))
    for v in found:
        print(v)
    if found:
        print(f"{len(found)} include(s) against the layer order in docs/ARCHITECTURE.md")
        return 1
    print(f"layers: {len(allowed)} layers, every include within its layer's arrow")
    return 0


if __name__ == "__main__":
    sys.exit(main())
