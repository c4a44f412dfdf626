"""A pre-pass side (``prologue: true``): in a mix kernel, the side runs to a barrier over its
cores before the other side starts (CATLASS OptimizedMatmul padding A and B on the AIVs before
the AICs' matmul), so the kernel takes the two sides' sum instead of their maximum. Held by
hand, and bit for bit across the numpy engine, the test reference, the row kernel and the
run-time dispatch model (Python, and compiled C++)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from ascend_tune.base.errors import SpecError
from ascend_tune.expr import CPP_RUNTIME
from ascend_tune.hardware import load_profile
from ascend_tune.model.dispatch import dispatch_model
from ascend_tune.model.dispatch_cpp import CPP_DISPATCH_RUNTIME, render_function
from ascend_tune.model.engine import ShapeModel
from ascend_tune.spec import OperatorSpec, load_spec, load_spec_text
from tests.conftest import needs_gxx
from tests.test_dispatch import _PREDICT_MAIN
from tests.test_model_fastpaths import _Reference, _same

QUANT_VECTOR = "\n  vector:\n    cores: 2 * blockDim\n"
SHAPE = {"M": 512, "K": 1024, "G": 1, "N": 4096}


def _quant(prologue: bool) -> OperatorSpec:
    text = load_spec("quant_matmul").source_text
    assert QUANT_VECTOR in text
    if prologue:
        text = text.replace(QUANT_VECTOR, QUANT_VECTOR + "    prologue: true\n", 1)
    return load_spec_text(text, "quant_matmul (vector prologue)" if prologue else "quant")


def _scalar_mix(prologue: bool, vector_cycles: int, cube_cycles: int) -> OperatorSpec:
    flag = "\n    prologue: true" if prologue else ""
    return load_spec_text(f"""
operator: TwoStepCustom
core: mix
dtypes: {{x: float16, y: float16}}
shape:
  n: {{min: 1, max: 1024, from: input0.size}}
params:
  blockDim: {{range: [1, 4]}}
pipeline:
  handoffs: 1
  roofline: {{gm_bytes: n}}
  vector:{flag}
    cores: 2 * blockDim
    body:
      - {{stage: pad, pipe: scalar, cycles: {vector_cycles}}}
  cube:
    cores: blockDim
    body:
      - {{stage: work, pipe: scalar, cycles: {cube_cycles}}}
baseline: {{blockDim: 1}}
tiling:
  struct: TwoStepTilingData
  fields: {{n: {{type: uint32_t, value: n}}}}
  block_dim: blockDim
kernel: {{mode: mix}}
io: {{inputs: [x], outputs: {{y: {{like: x}}}}}}
""", "two_step.yaml")


def test_a_prologue_side_runs_before_the_other_by_hand() -> None:
    hw = load_profile("ascend910b3")
    clock = float(hw["clock_mhz"])
    for prologue in (False, True):
        spec = _scalar_mix(prologue, 1800, 3600)
        ev = ShapeModel(spec, hw, {"n": 64}).evaluate(np.array([[2]]))
        head = max(float(hw["head_base_us"]) + float(hw["head_full_chip_us"]) * 4 / 40,
                   float(hw["head_base_us"]) + float(hw["cube_kernel_floor_us"])
                   + float(hw["head_full_chip_us"]) * 2 / 20)
        body = (1800 + 3600) / clock if prologue else 3600 / clock  # 1 + 2 us, or the max
        want = head + body + float(hw["sync_cycles"]) / clock + float(hw["mix_extra_us"])
        assert ev.latency_us[0] == pytest.approx(want, rel=1e-12), prologue


def test_a_prologue_is_only_for_mix_kernels_and_one_side() -> None:
    text = load_spec("add").source_text.replace("\n    cores: blockDim\n",
                                                "\n    prologue: true\n    cores: blockDim\n", 1)
    with pytest.raises(SpecError, match="prologue runs before the other side: only in a 'mix'"):
        load_spec_text(text, "add.yaml")
    both = _quant(True).source_text.replace("\n  cube:\n", "\n  cube:\n    prologue: true\n", 1)
    with pytest.raises(SpecError, match="only one side can be the prologue"):
        load_spec_text(both, "quant.yaml")


def test_prologue_bits_agree_across_engine_reference_and_row_kernel() -> None:
    hw = load_profile("ascend910b1")
    overlap, first = ShapeModel(_quant(False), hw, SHAPE), ShapeModel(_quant(True), hw, SHAPE)
    genomes = np.random.default_rng(4).integers(0, first.sizes, size=(3000, first.sizes.size))
    want = first.evaluate(first.values(genomes)).latency_us
    assert _same(_Reference(first).objective(genomes), want)
    assert first._row_latency is not None
    assert first._row_objective(genomes).tobytes() == want.tobytes()
    valid = np.isfinite(want)
    assert valid.sum() > 100
    # Running the epilogue side after the cube side instead of alongside it costs more.
    assert (want[valid] > overlap.evaluate(overlap.values(genomes)).latency_us[valid]).all()


def _rows(spec: OperatorSpec, n: int) -> list[tuple[list[int], list[int]]]:
    hw = load_profile("ascend910b1")
    rows = []
    for shape in (SHAPE, {"M": 8192, "K": 1024, "G": 8, "N": 8192}):
        model = ShapeModel(spec, hw, shape)
        genomes = np.random.default_rng(6).integers(0, model.sizes, size=(4000, model.sizes.size))
        ev = model.evaluate(model.values(genomes))
        for row in model.values(genomes)[ev.valid][:n]:
            rows.append(([shape[v] for v in spec.shape_vars], [int(x) for x in row]))
    return rows


def test_the_dispatch_model_takes_the_prologue_as_the_engine_does() -> None:
    spec, hw = _quant(True), load_profile("ascend910b1")
    model = dispatch_model(spec, hw)
    for shape_values, config in _rows(spec, 50):
        engine = ShapeModel(spec, hw, dict(zip(spec.shape_vars, shape_values, strict=True)))
        want = engine.evaluate(np.array([config])).latency_us[0]
        assert model.latency_us(shape_values, config, 24, 48) == want


@needs_gxx
def test_the_compiled_dispatch_model_takes_the_prologue(tmp_path: Path) -> None:
    spec, hw = _quant(True), load_profile("ascend910b1")
    model = dispatch_model(spec, hw)
    rows = _rows(spec, 30)
    source = (CPP_RUNTIME + CPP_DISPATCH_RUNTIME + "using namespace ascend_tune_rt;\n"
              + render_function(model.source, "PredictUs", model.curves) + _PREDICT_MAIN)
    cpp, exe = tmp_path / "prologue.cpp", tmp_path / "prologue"
    cpp.write_text(source)
    proc = subprocess.run(["g++", "-std=c++11", "-O2", "-Wall", "-Wextra", "-Werror", str(cpp),
                           "-o", str(exe)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:3000]
    stdin = f"{len(spec.shape_vars)} {len(spec.params)}\n" + "".join(
        " ".join(map(str, [*s, *c, 24, 48])) + "\n" for s, c in rows)
    out = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True,
                         check=True).stdout.split()
    assert [float.fromhex(x) for x in out] == [model.latency_us(s, c, 24, 48) for s, c in rows]
