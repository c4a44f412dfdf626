"""Every shipped spec (and variant) on its example shape suite: the baseline is valid, search
finds a valid configuration, and the emitted C++ compiles."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ascend_tune.base.yamlio import load_yaml
from ascend_tune.emit import render as emit
from ascend_tune.emit.styles import STYLES
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.results import format as results
from ascend_tune.spec import load_spec, spec_paths
from ascend_tune.spec.shapes import load_shape_file
from ascend_tune.tune.shape import TuneSettings, tune_shape
from tests.conftest import ROOT, STUB, needs_gxx, slow


def _refs() -> list[str]:
    refs = []
    for path in spec_paths():
        data, _ = load_yaml(path, "spec")
        refs.append(path.stem)
        refs += [f"{path.stem}:{v}" for v in (data.get("variants") or {})]
    return refs


def _suite(ref: str) -> Path:
    stem = ref.split(":")[0]
    for name in ("shapes.yaml", "shapes.csv"):
        path = ROOT / "examples" / stem / name
        if path.exists():
            return path
    raise AssertionError(f"no shape suite for {stem} under examples/")


def test_library_covers_the_operators_developers_tune() -> None:
    names = {p.stem for p in spec_paths()}
    assert {"add", "mul", "gelu", "swiglu", "cast", "softmax", "layernorm", "rmsnorm", "matmul",
            "batch_matmul", "flash_attention"} <= names
    refs = set(_refs())
    assert {"add:bfloat16", "add:float32", "matmul:float32", "matmul:hf32", "matmul:int8",
            "matmul:bfloat16", "matmul:splitk"} <= refs


@pytest.mark.parametrize("ref", _refs())
def test_baseline_valid_and_search_finds_a_configuration(ref: str, hw: HardwareProfile) -> None:
    spec = load_spec(ref)
    shapes = load_shape_file(_suite(ref), spec)
    assert len(shapes) >= 6
    for shape in shapes:
        model = ShapeModel(spec, hw, shape)
        base = model.baseline_values()
        ev = model.evaluate(np.array([[base[p] for p in spec.params]]))
        assert ev.valid[0], (ref, shape, model.constraint_names[int(ev.failed[0])])
        entry = tune_shape(spec, hw, shape, TuneSettings("auto", 150, 0))
        assert entry["predicted"]["latency_us"] <= entry["baseline"]["latency_us"] + 1e-9
        assert entry["predicted"]["latency_us"] >= entry["predicted"]["roofline_us"]


@needs_gxx
# The second tier: in the first, test_emit.py compiles every file of add and matmul the same
# way (both styles, C++11 and C++17, nothing pre-included).
@slow
@pytest.mark.parametrize("ref", [p.stem for p in spec_paths()])
def test_emitted_code_compiles(ref: str, hw: HardwareProfile, tmp_path: Path) -> None:
    spec = load_spec(ref)
    shapes = load_shape_file(_suite(ref), spec)[:3]
    doc: dict[str, Any] = {**results.header(spec.name, spec.sha256, spec.source_text, hw.name,
                                            hw.sha256, hw.data, "auto", 0, 100, spec.variant),
                           "shapes": [tune_shape(spec, hw, s, TuneSettings("auto", 100, 0))
                                      for s in shapes]}
    bundle = emit.load_bundle(json.loads(results.to_text(doc)), "results.json")
    for style in STYLES:
        out = tmp_path / style
        emit.write(out, emit.render(bundle, style, op_host=True))
        for path in sorted(out.rglob("*.[hc]*")):
            for std in ("c++11", "c++17"):
                proc = subprocess.run(["g++", f"-std={std}", "-Wall", "-Wextra", "-Werror",
                                       f"-I{STUB}", f"-I{path.parent}", "-fsyntax-only", "-x",
                                       "c++", str(path)], capture_output=True, text=True)
                assert proc.returncode == 0, (style, std, path.name, proc.stderr[:2000])
