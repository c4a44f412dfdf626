"""The launch checks at their boundaries, and the places that must apply them: the model, the
results validation before emit, and the run-time selection rule (Python and C++).

The expectations are written from the chip and the documented rules, not from the code: a
910B3 has 20 AIC and 40 AIV, a block dim counts the cores the kernel mode launches, and among
equally fast candidates the earlier one wins (docs/architecture.md, emit/selection.py).
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.emit import render as emit
from ascend_tune.emit.selection import BASELINE, MODEL, first_failure, runtime_env
from ascend_tune.expr import Kind, parse
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.spec import OperatorSpec, evaluate_baseline, launch, load_spec, load_spec_text
from tests.conftest import ROOT, STUB, needs_gxx

CHIP = {"cube": 20, "vector": 40}  # ascend910b3


def _add_doc() -> dict[str, Any]:
    return json.loads((ROOT / "examples/add/results.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize(("block_dim", "passes"), [(0, False), (1, True), (40, True),
                                                    (41, False), (-1, False)])
def test_block_dim_within_the_aiv_count(add_spec: OperatorSpec, block_dim: int,
                                        passes: bool) -> None:
    checks = {c.name: c for c in launch.checks(add_spec, CHIP)}
    # AddCustom runs AIV only: its block dim counts AIV cores, 1..40 on a 910B3.
    check = checks["block_dim_within_chip"]
    assert (check.lo, check.hi) == (1, 40)
    assert bool(check.passes({"blockDim": block_dim})) is passes
    assert bool(checks["vector_cores_within_chip"].passes({"blockDim": block_dim})) is passes


def test_mix_block_dim_counts_aic(matmul_spec: OperatorSpec) -> None:
    # A MIX kernel's block is one AIC with its two AIVs: the block dim is bounded by 20.
    check = {c.name: c for c in launch.checks(matmul_spec, CHIP)}["block_dim_within_chip"]
    assert (check.lo, check.hi) == (1, 20)


def test_the_model_refuses_one_core_too_many(add_spec: OperatorSpec,
                                             hw: HardwareProfile) -> None:
    model = ShapeModel(add_spec, hw, {"totalLength": 1 << 24})
    e = model.evaluate(np.array([[40, 4096, 2], [41, 4096, 2]]))
    assert e.valid.tolist() == [True, False]
    # The side's core count is checked first (check_names order); for AIV-only AddCustom the
    # block dim is the same count and would fail next.
    assert model.constraint_names[int(e.failed[1])] == "vector_cores_within_chip"


def test_first_failure_names_the_launch_check(add_spec: OperatorSpec,
                                              hw: HardwareProfile) -> None:
    env = runtime_env(add_spec, hw, 20, 40)
    shape = {"totalLength": 1 << 24}
    assert first_failure(add_spec, env, shape, {"blockDim": 40, "tileLength": 4096,
                                                "bufferNum": 2})[1] is None
    assert first_failure(add_spec, env, shape, {"blockDim": 41, "tileLength": 4096,
                                                "bufferNum": 2})[1] == "vector_cores_within_chip"
    # The same configuration on a smaller partition (8 AIV) fails the same check.
    small = runtime_env(add_spec, hw, 4, 8)
    assert first_failure(add_spec, small, shape, {"blockDim": 9, "tileLength": 4096,
                                                  "bufferNum": 2})[1] == "vector_cores_within_chip"


def _largest_entry(doc: dict[str, Any]) -> dict[str, Any]:
    return max(doc["shapes"], key=lambda s: s["shape"]["totalLength"])  # type: ignore[no-any-return]


def test_results_validation_refuses_a_block_dim_past_the_chip() -> None:
    # A results file edited to launch 41 AIV cores on a 40-AIV chip: every spec constraint
    # still holds (the largest shape has work for 41 cores), only the launch check fails.
    doc = _add_doc()
    entry = _largest_entry(doc)
    entry["best"]["blockDim"] = 40
    emit.load_bundle(copy.deepcopy(doc), "r.json")  # 40: fine
    entry["best"]["blockDim"] = 41
    with pytest.raises(AscendTuneError, match=r"fails 'vector_cores_within_chip' on ascend910b3"):
        emit.load_bundle(doc, "r.json")


def test_results_validation_refuses_a_runner_up_past_the_chip() -> None:
    doc = _add_doc()
    entry = _largest_entry(doc)
    entry["candidates"] = [{"config": dict(entry["best"])},
                           {"config": {**entry["best"], "blockDim": 41}}]
    failed = r"candidates\[1\]: the configuration fails 'vector_cores_within_chip'"
    with pytest.raises(AscendTuneError, match=failed):
        emit.load_bundle(doc, "r.json")


# Two shapes with the same baseline: past 128 * 16384 elements the AddCustom baseline is 8
# cores, tiles of 16 384 (the UB cap: 196 608 // (3 * 2 * 2)), two buffers.
TUNED = {"totalLength": 1 << 22}
UNSEEN = {"totalLength": 1 << 23}


def _tie_bundle(add_spec: OperatorSpec, hw: HardwareProfile) -> emit.Bundle:
    """A results file whose only winner is the baseline configuration: on an unseen shape the
    winner and the baseline fallback tie exactly."""
    doc = _add_doc()
    base = evaluate_baseline(add_spec, {**runtime_env(add_spec, hw, 20, 40), **TUNED})
    assert base == {"blockDim": 8, "tileLength": 16384, "bufferNum": 2}
    entry = {**_largest_entry(doc), "shape": dict(TUNED), "best": dict(base)}
    entry.pop("candidates", None)
    doc["shapes"] = [entry]
    return emit.load_bundle(doc, "tie.json")


def test_a_tie_goes_to_the_earlier_candidate(add_spec: OperatorSpec,
                                             hw: HardwareProfile) -> None:
    bundle = _tie_bundle(add_spec, hw)
    sel = bundle.select(UNSEEN, refine_evals=0)  # the ranking's tie-break, not the descent
    # The candidate (index 0) comes before the baseline fallback: it wins the tie.
    assert (sel.source, sel.index) == (MODEL, 0)
    assert sel.config == {"blockDim": 8, "tileLength": 16384, "bufferNum": 2}
    assert BASELINE != MODEL


def test_the_emitted_ranking_keeps_the_first_of_equals(add_spec: OperatorSpec,
                                                       hw: HardwareProfile) -> None:
    # The C++ rule, read from the emitted source: strictly faster replaces the best so far,
    # so the first of equally fast candidates (table order, the baseline last) stays.
    files = emit.render(_tie_bundle(add_spec, hw), "macro", op_host=False)
    select_h = files["op_host/add_custom_tiling_select.h"]
    assert select_h.count("if (best == -2 || us < bestUs) {") == 1
    assert "us <= bestUs" not in select_h


TIE_DRIVER = r"""
#include <cstdio>
#include "add_custom_tiling_select.h"
using namespace optiling::add_custom_tiling;
int main() {
    Shape shape{};
    shape.totalLength = 8388608;
    Values values{};
    const Selection sel = Select(shape, 20, 40, values);
    std::printf("%d %d\n", static_cast<int>(sel.source), sel.index);
}
"""


@needs_gxx
def test_compiled_selection_breaks_a_tie_like_the_rule(tmp_path: Path, add_spec: OperatorSpec,
                                                       hw: HardwareProfile) -> None:
    emit.write(tmp_path, emit.render(_tie_bundle(add_spec, hw), "macro", op_host=False))
    host = tmp_path / "op_host"
    (host / "tie.cpp").write_text(TIE_DRIVER)
    exe = tmp_path / "tie"
    proc = subprocess.run(["g++", "-std=c++11", "-O1", "-DASCEND_TUNE_REFINE_EVALS=0",
                           f"-I{STUB}", f"-I{host}", str(host / "tie.cpp"), "-o", str(exe)],
                          capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr[:3000]
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(MODEL), "0"]  # kModel, candidate 0: not the baseline


# ---- which checks exist, and which the search may skip -------------------------------------

def test_range_checks_of_add(add_spec: OperatorSpec) -> None:
    # Eight uint32_t fields, all expressions of the configuration, then the tiling key
    # (bufferNum, a uint64_t); no user workspace.
    uint32 = (0, (1 << 32) - 1)
    names = ["totalLength", "blockLength", "tileNum", "tileLength", "lastTileLength",
             "lastBlockLength", "lastBlockTileNum", "lastBlockLastTileLength"]
    got = [(r.name, r.lo, r.hi) for r in launch.range_checks(add_spec)]
    assert got == [*((f"{n}_fits_uint32_t", *uint32) for n in names),
                   ("tiling_key_fits_uint64_t", 0, (1 << 64) - 1)]
    assert launch.check_names(add_spec) == ["vector_cores_within_chip", "block_dim_within_chip",
                                            *(n for n, _lo, _hi in got)]


def test_workspace_check_and_constant_fields() -> None:
    fa = load_spec("flash_attention")
    last = launch.range_checks(fa)[-1]
    assert (last.name, last.lo, last.hi) == ("workspace_bytes_fits_int64_t", 0, (1 << 63) - 1)
    # A field with a constant value is checked when the spec loads, not per configuration.
    text = (ROOT / "operator_specs/add.yaml").read_text().replace(
        "tileNum: {type: uint32_t, value: tileNum, meaning: own}",
        "tileNum: {type: uint32_t, value: 7}")
    names = [r.name for r in launch.range_checks(load_spec_text(text, "add.yaml"))]
    assert "tileNum_fits_uint32_t" not in names and "tileLength_fits_uint32_t" in names


def _check(source: str, lo: float, hi: float, boolean: bool = False) -> launch.Check:
    return launch.Check("c", parse(source, {"a": Kind.INT}), lo, hi, boolean)


@pytest.mark.parametrize(("span", "lo", "hi", "proven"), [
    ((0, 9), 1, 10, True),  # a + 1 in [1, 10]: exactly the range, both ends included
    ((0, 10), 1, 10, False),  # up to 11
    ((-1, 9), 1, 10, False),  # down to 0
    ((0, 9), 2, 10, False),
    ((0, 9), 1, 9, False),
])
def test_always_pass_needs_the_whole_span_inside(span: tuple[int, int], lo: float, hi: float,
                                                 proven: bool) -> None:
    assert launch.always_pass(_check("a + 1", lo, hi), {"a": span}) is proven


def test_always_pass_never_for_booleans_or_unknown_spans() -> None:
    assert launch.always_pass(_check("a > 0", 0, 1, boolean=True), {"a": (1, 5)}) is False
    assert launch.always_pass(_check("a + 1", 1, 10), {}) is False  # a has no span
    assert launch.always_pass(_check("a + 1", -np.inf, np.inf),
                              {"a": (-np.inf, np.inf)}) is False


def test_check_passes_within_its_range_and_finite() -> None:
    check = launch.Check("c", _check("a + 1", 0, 0).expr, 1, 10)
    got = check.passes({"a": np.array([-1, 0, 9, 10])})
    assert got.tolist() == [False, True, True, False]
    boolean = launch.Check("b", _check("a > 2", 0, 0, boolean=True).expr, boolean=True)
    assert boolean.passes({"a": np.array([2, 3])}).tolist() == [False, True]
