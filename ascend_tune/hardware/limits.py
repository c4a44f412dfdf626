"""What every profile number may be, and the check that a profile's numbers are.

Owns :class:`Limit` and the bounds of each leaf (:data:`LIMITS` for the scalars,
:data:`TABLE_LIMITS` for the per-dtype and per-class tables, the bandwidth-curve rules) and
:func:`validate_profile_data`: structure against the schema, then every value, one message per
bad leaf naming the file, line and key path. The bounds are sanity limits that keep the model's
int64 and float arithmetic far from overflow, not hardware facts.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ascend_tune.base import schema
from ascend_tune.base.errors import did_you_mean
from ascend_tune.base.vocabulary import DTYPES, TRANSFER_PATHS, VECTOR_CLASSES
from ascend_tune.base.yamlio import KeyPath
from ascend_tune.hardware.leaves import SCALARS, leaf_value, profile_schema


@dataclass(frozen=True)
class Limit:
    """What a profile number may be. Bounds are sanity limits that keep the model's int64 and
    float arithmetic far from overflow, not hardware facts."""

    lo: float
    hi: float
    lo_open: bool  # value > lo (a rate, size or clock) instead of value >= lo (a latency)
    integral: bool  # a count: cores, bytes, k0, ...

    def problem(self, value: Any) -> str | None:
        """None if ``value`` is acceptable, else what it must be."""
        kind = "an integer" if self.integral else "a finite number"
        op = ">" if self.lo_open else ">="
        want = f"must be {kind} {op} {_num(self.lo)} and <= {_num(self.hi)}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return want
        if isinstance(value, float) and not math.isfinite(value):
            return want
        if self.integral and isinstance(value, float) and not value.is_integer():
            return want
        below = value <= self.lo if self.lo_open else value < self.lo
        return want if below or value > self.hi else None


def _num(x: float) -> str:
    if x == int(x):
        n = int(x)
        return f"2**{n.bit_length() - 1}" if n >= 2**32 and n & (n - 1) == 0 else str(n)
    return repr(x)


MAX_CORES = 4096
MAX_BYTES = 2**48
COUNT = Limit(0, MAX_CORES, True, True)  # cores, fractal sizes
SIZE = Limit(0, MAX_BYTES, True, True)  # buffer sizes, alignments, block sizes
OPTIONAL_SIZE = Limit(0, MAX_BYTES, False, True)  # a buffer a chip may lack (BiasTable, FB)
CLOCK = Limit(0, 10_000, True, False)  # MHz
BANDWIDTH = Limit(0, 1e6, True, False)  # GB/s (1 PB/s)
FRACTION = Limit(0, 1, True, False)
FACTOR = Limit(0, 1e3, True, False)
CYCLES = Limit(0, 1e9, False, False)  # latencies and overheads: 0 allowed
RATE_CYCLES = Limit(0, 1e9, True, False)  # cycles per unit of work: > 0
MICROSECONDS = Limit(0, 1e6, False, False)
BYTES_PER_CYCLE = Limit(0, 2**20, True, False)
CURVE_BYTES = Limit(0, MAX_BYTES, True, False)
MAX_CURVE_POINTS = 1000

# Every scalar leaf's limit (the keys of SCALARS).
LIMITS: dict[str, Limit] = {
    "arch": Limit(0, 2**31 - 1, False, True),
    "clock_mhz": CLOCK,
    "cube_cores": COUNT,
    "vector_cores": COUNT,
    "l1_bytes": SIZE, "l0a_bytes": SIZE, "l0b_bytes": SIZE, "l0c_bytes": SIZE, "ub_bytes": SIZE,
    "bt_bytes": OPTIONAL_SIZE, "fb_bytes": OPTIONAL_SIZE, "l2_bytes": SIZE,
    "hbm_bytes": OPTIONAL_SIZE,  # 0: not known (not used to tell chips apart)
    "hbm_bandwidth_gbps": BANDWIDTH,
    "l2_bandwidth_gbps": BANDWIDTH,
    "gm_align_bytes": SIZE,
    "gm_unaligned_efficiency": FRACTION,
    "gm_contention_exponent": Limit(0, 64, True, False),
    "aic_gm_port_bytes_per_cycle": BYTES_PER_CYCLE,
    "aiv_gm_port_bytes_per_cycle": BYTES_PER_CYCLE,
    "nd2nz_row_cycles": CYCLES,
    "copy_issue_cycles": CYCLES,
    "nd2nz_max_pitch_elements": SIZE,
    "nd2nz_pitch_256b_efficiency": FRACTION,
    "nd2nz_pitch_128b_efficiency": FRACTION,
    "nd2nz_pitch_32b_efficiency": FRACTION,
    "ub_block_bytes": SIZE,
    "fractal_mn": COUNT,
    "mmad_overhead_cycles": CYCLES,
    "repeat_bytes": SIZE,
    "max_repeat": Limit(0, 2**20, True, True),
    "issue_cycles": CYCLES,
    "bank_conflict_factor": FACTOR,
    "loop_iteration_cycles": CYCLES,
    "sync_cycles": CYCLES,
    "head_base_us": MICROSECONDS,
    "head_full_chip_us": MICROSECONDS,
    "mix_extra_us": MICROSECONDS,
    "cube_kernel_floor_us": MICROSECONDS,
}
TABLE_LIMITS = {"k0": COUNT, "cycles_per_fractal": RATE_CYCLES, "cycles_per_repeat": RATE_CYCLES}


def shorten(text: str) -> str:
    """``text`` cut to 120 characters for an error message."""
    return text if len(text) <= 120 else text[:117] + "..."


def validate_profile_data(data: Any, origin: str, lines: Mapping[KeyPath, int],
                          partial: bool) -> list[str]:
    """Structure, then values. A partial profile (a file with a ``base``) checks the leaves it
    has, so an error names the file that holds the bad number."""
    errors = schema.validate(data, profile_schema(partial), origin, lines)
    if errors:
        return errors
    return _check_values(data, origin, lines)


def _check_values(data: Mapping[str, Any], origin: str,
                  lines: Mapping[KeyPath, int] | None = None) -> list[str]:
    """Every number finite and within :data:`LIMITS`; one message per bad leaf, naming the
    file (and line) and the leaf's key path."""
    lines = lines or {}
    errors: list[str] = []

    def bad(path: tuple[str, ...], message: str) -> None:
        line = lines.get((*path, "value")) or lines.get(path)
        head = f"{origin}:{line}" if line else origin
        errors.append(f"{head}: {'.'.join(path)}: {message}")

    def shown(value: Any) -> str:
        text = repr(value) if not isinstance(value, (dict, list)) else (
            "a mapping" if isinstance(value, dict) else "a list")
        return shorten(text)

    for section, keys in SCALARS.items():
        for key in keys:
            present, value = leaf_value(data, section, key)
            if present:
                problem = LIMITS[key].problem(value)
                if problem:
                    bad((section, key), f"{problem}, got {shown(value)}")
    for path in TRANSFER_PATHS:
        present, value = leaf_value(data, "transfers", path, "latency_cycles")
        if present:
            problem = CYCLES.problem(value)
            if problem:
                bad(("transfers", path, "latency_cycles"), f"{problem}, got {shown(value)}")
        present, curve = leaf_value(data, "transfers", path, "bandwidth_curve")
        if present:
            message = _curve_problem(curve)
            if message:
                bad(("transfers", path, "bandwidth_curve"), message)
    for table, keyset in (("k0", DTYPES), ("cycles_per_fractal", DTYPES)):
        present, value = leaf_value(data, "cube", table)
        if not present:
            continue
        if not isinstance(value, dict):
            bad(("cube", table), "expected a mapping dtype -> number")
            continue
        for key, num in value.items():
            if key not in keyset:
                bad(("cube", table, key), f"unknown dtype{did_you_mean(key, keyset)}; "
                                          f"allowed: {', '.join(keyset)}")
                continue
            problem = TABLE_LIMITS[table].problem(num)
            if problem:
                bad(("cube", table, key), f"{problem}, got {shown(num)}")
    present, cpr = leaf_value(data, "vector", "cycles_per_repeat")
    if present and not isinstance(cpr, dict):
        bad(("vector", "cycles_per_repeat"), "expected class -> {element bytes: cycles}")
    elif present:
        for cls, per in cpr.items():
            here = ("vector", "cycles_per_repeat", str(cls))
            if cls not in VECTOR_CLASSES:
                bad(here, f"unknown class{did_you_mean(str(cls), VECTOR_CLASSES)}")
            elif not isinstance(per, dict) or not per:
                bad(here, "expected {element bytes (1, 2, 4, 8): cycles per repeat}")
            else:
                for k, v in per.items():
                    if str(k) not in ("1", "2", "4", "8"):
                        bad((*here, str(k)), "element bytes must be 1, 2, 4 or 8")
                        continue
                    problem = TABLE_LIMITS["cycles_per_repeat"].problem(v)
                    if problem:
                        bad((*here, str(k)), f"{problem}, got {shown(v)}")
    return errors


def _curve_problem(curve: Any) -> str | None:
    shape = ("expected a non-empty list of [bytes, bytes_per_cycle] pairs "
             f"(at most {MAX_CURVE_POINTS})")
    if not isinstance(curve, list) or not curve or len(curve) > MAX_CURVE_POINTS or not all(
            isinstance(p, list) and len(p) == 2 for p in curve):
        return shape
    for i, (size, rate) in enumerate(curve):
        problem = CURVE_BYTES.problem(size)
        if problem:
            return f"point {i}: bytes {problem}, got {shorten(repr(size))}"
        problem = BYTES_PER_CYCLE.problem(rate)
        if problem:
            return f"point {i}: bytes_per_cycle {problem}, got {shorten(repr(rate))}"
    if any(a[0] >= b[0] for a, b in itertools.pairwise(curve)):
        return "sizes must increase"
    return None


# ---- physical limits ------------------------------------------------------------------------
# Unlike LIMITS (sanity bounds for the arithmetic), these relate numbers of one chip that
# physics ties together; a calibration that breaks one has fitted a number the chip cannot
# have (docs/npu.md "Calibration and validation").
# Not a limit: a transfer's bandwidth curve above its core's GM port (the model takes the
# smaller of the two, so a curve above the port never binds; the closed loop recovers ports
# below the msKPP single-core curves, benchmarks/closed_loop.py).


@dataclass(frozen=True)
class PhysicalProblem:
    leaf: str  # key path of the number that breaks the limit
    value: float
    limit: float
    why: str  # the limit and where it comes from, short

    def __str__(self) -> str:
        return f"{self.leaf} = {self.value:.6g} exceeds {self.limit:.6g} ({self.why})"


def _number(data: Mapping[str, Any], *path: str) -> float | None:
    _present, value = leaf_value(data, *path)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def physical_problems(data: Mapping[str, Any]) -> list[PhysicalProblem]:
    """The physical limits a merged profile's numbers break: the aggregate HBM rate above the
    L2 rate every GM access passes through. A limit whose numbers the profile lacks is not
    checked."""
    out: list[PhysicalProblem] = []
    hbm = _number(data, "memory", "hbm_bandwidth_gbps")
    l2 = _number(data, "memory", "l2_bandwidth_gbps")
    if hbm is not None and l2 is not None and hbm > l2:
        out.append(PhysicalProblem("memory.hbm_bandwidth_gbps", hbm, l2,
                                   "memory.l2_bandwidth_gbps: GM traffic passes through L2"))
    return out
