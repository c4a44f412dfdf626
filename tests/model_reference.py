"""The cost formulas of docs/model.md written out for the tests' reference model
(tests/test_model_fastpaths.py), independently of ascend_tune.model.costs: a bug there must
not be invisible to the reference it is compared with. Same operations in the same order, so
the results are bit-identical where the code is right."""

from __future__ import annotations

from typing import Any

import numpy as np

from ascend_tune.hardware import HardwareProfile


def ref_runs(hw: HardwareProfile, nbytes: Any, rows: Any, layout: str | None,
              element_bytes: int) -> tuple[Any, Any]:
    """(runs, bytes per run), docs/model.md "Transfer cost": a row per run (row-major),
    a column (column-major), a 32 B wide fractal column (NZ); at least one run."""
    if layout == "column_major":
        run_bytes = rows * float(element_bytes)
        return np.maximum(nbytes / run_bytes, 1.0), run_bytes
    if layout == "nz":
        block = float(hw["ub_block_bytes"])
        return np.maximum(np.ceil(nbytes / rows / block), 1.0), rows * block
    return rows, nbytes / rows


def ref_mmad(hw: HardwareProfile, dtype: str, m: Any, n: Any, k: Any) -> Any:
    """ceil(m/16) * ceil(n/16) * ceil(k/k0) fractals at the dtype's rate, plus the
    per-instruction overhead (docs/model.md "Cube and vector cost")."""
    fractal = float(hw["fractal_mn"])
    fractals = np.ceil(m / fractal) * np.ceil(n / fractal) * np.ceil(k / hw.k0[dtype])
    return fractals * hw.cycles_per_fractal[dtype] + float(hw["mmad_overhead_cycles"])


def ref_vector(hw: HardwareProfile, op: str, element_bytes: int, elements: Any) -> Any:
    """ceil(elements * size / 256) repeats in instructions of at most 255, each instruction
    paying the issue cost; two-source classes pay the bank-conflict factor per repeat."""
    repeats = np.ceil(elements * element_bytes / float(hw["repeat_bytes"]))
    instructions = np.ceil(repeats / float(hw["max_repeat"]))
    per_repeat = hw.vector_cycles_per_repeat[op][element_bytes]
    if op in ("binary", "fma"):
        per_repeat *= float(hw["bank_conflict_factor"])
    return instructions * float(hw["issue_cycles"]) + repeats * per_repeat


def ref_head(hw: HardwareProfile, cores: Any, side: str) -> Any:
    """head_base_us (+ cube_kernel_floor_us on the cube side) + head_full_chip_us * cores /
    chip cores (docs/model.md "Head (launch) cost")."""
    floor = float(hw["cube_kernel_floor_us"]) if side == "cube" else 0.0
    return (float(hw["head_base_us"]) + floor
            + float(hw["head_full_chip_us"]) * np.asarray(cores) / float(hw[f"{side}_cores"]))
