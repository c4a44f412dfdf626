"""The model's fast paths give the bits of its slow paths.

The batch evaluation skips work the general formulas do (zero guards on nonzero divisors,
temporaries it can write in place, shortcuts for uniform batches, chip shares shared between
stages). Each shortcut is held here against the plain formula it replaces:

* expressions: the fast evaluation against the checked evaluation (which keeps every zero
  guard and never writes in place), over operators, functions, operand kinds, scalars and
  arrays, owned and borrowed operands, zero divisors included;
* the transfer cost against a transcription of its formulas without in-place arithmetic or
  caching;
* whole models: every built-in spec on example shapes, ``objective`` against a reference
  evaluation that uses the checked expressions and the transcribed loop, stage and transfer
  formulas.

"Same" is bit-for-bit: dtype, shape and bytes (so inf, nan and the sign of zero count).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ascend_tune import expr as expr_mod
from ascend_tune.base.errors import ExprError
from ascend_tune.base.vocabulary import (
    DTYPE_BYTES,
    GM_PATHS,
    PIPE_COLUMN,
    PIPE_COLUMNS,
    TRANSFER_PATHS,
)
from ascend_tune.expr import Expr, Kind, parse
from ascend_tune.hardware import HardwareProfile, load_profile
from ascend_tune.model import costs, engine, pipeline
from ascend_tune.model.engine import ShapeModel
from ascend_tune.spec import Loop, Stage, end_pipes, launch, load_spec
from ascend_tune.spec.shapes import load_shape_file
from tests.model_reference import ref_head, ref_mmad, ref_runs, ref_vector

ROOT = Path(__file__).resolve().parents[1]
SPECS = sorted(p.stem for p in (ROOT / "operator_specs").glob("*.yaml"))


def _same(fast: Any, slow: Any) -> bool:
    """Bit-identical: both arrays or both scalars, same dtype, shape and bytes."""
    if isinstance(fast, np.ndarray) != isinstance(slow, np.ndarray):
        return False
    a, b = np.asarray(fast), np.asarray(slow)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# ---- expressions: fast evaluation against the checked one ---------------------------------

SYMBOLS = {"x": Kind.INT, "y": Kind.INT, "f": Kind.FLOAT, "g": Kind.FLOAT, "p": Kind.BOOL,
           "q": Kind.BOOL}
N_ROWS = 301


def _operands(name: str) -> list[str]:
    """The name itself (an input the evaluation must not write to) and an expression of equal
    value whose array the evaluation owns (so it may be overwritten in place)."""
    owned = {"x": "(x * 1)", "y": "(y + 0)", "f": "(f * 1.0)", "g": "(g * 1.0)",
             "p": "(p and p)", "q": "(q or q)"}
    return [name, owned[name]]


def _sources() -> list[str]:
    out = []
    for op in ("+", "-", "*", "/", "//", "%"):
        for left, right in itertools.product("xfp", "ygq"):
            out += [f"{a} {op} {b}" for a in _operands(left) for b in _operands(right)]
            out.append(f"({_operands(left)[1]} {op} {right}) {op} {_operands(right)[1]}")
    for fn in ("ceil_div", "align_up", "align_down"):
        for left, right in itertools.product("xp", "yq"):
            out += [f"{fn}({a}, {b})" for a in _operands(left) for b in _operands(right)]
        out.append(f"{fn}(x * 3, y) * {fn}(y, x + 1)")
    for fn in ("min", "max"):
        for left, right in itertools.product("xfp", "ygq"):
            out += [f"{fn}({a}, {b})" for a in _operands(left) for b in _operands(right)]
        out += [f"{fn}(x * 2, y, f)", f"{fn}(x, y * 2, x + y)", f"{fn}(1, x, 2.5, g * 1.0)"]
    return out


def _envs() -> list[dict[str, Any]]:
    """Arrays with zeros, negatives, -0.0, inf and nan; Python, numpy and 0-d scalars,
    zero divisors among them. Integers stay far from int64's limits (the checked path's
    business is overflow; here both paths must agree on values)."""
    rng = np.random.default_rng(7)
    ints = rng.integers(-1000, 1000, N_ROWS)
    ints[::5] = 0
    ints_nonzero = np.where(ints == 0, 7, ints)
    floats = rng.normal(0.0, 100.0, N_ROWS)
    floats[::7] = 0.0
    floats[1::11] = -0.0
    floats[2::13] = np.inf
    floats[3::17] = np.nan
    floats_nonzero = np.where(floats == 0, 3.5, floats)
    bools = rng.random(N_ROWS) < 0.5
    return [
        {"x": ints, "y": ints_nonzero, "f": floats, "g": floats_nonzero, "p": bools,
         "q": ~bools},
        {"x": ints_nonzero, "y": ints, "f": floats_nonzero, "g": floats, "p": bools,
         "q": np.ones(N_ROWS, dtype=bool)},
        {"x": ints, "y": 16, "f": floats, "g": 2.5, "p": bools, "q": True},
        {"x": ints, "y": 0, "f": floats, "g": 0.0, "p": bools, "q": False},
        {"x": ints, "y": -3, "f": floats, "g": -0.0, "p": True, "q": bools},
        {"x": 37, "y": ints_nonzero, "f": 2.5, "g": floats_nonzero, "p": False, "q": bools},
        {"x": 37, "y": ints, "f": -1.5, "g": floats, "p": True, "q": bools},
        {"x": ints, "y": np.int64(9), "f": floats, "g": np.float64(0.5), "p": bools,
         "q": np.bool_(True)},
        {"x": ints, "y": np.array(-4), "f": floats, "g": np.array(0.0), "p": bools,
         "q": np.array(True)},
        # Booleans where integers are declared (the divisor guard keeps int64 results).
        {"x": bools, "y": np.ones(N_ROWS, dtype=bool), "f": floats, "g": bools, "p": bools,
         "q": bools},
        {"x": 5, "y": 0, "f": 0.0, "g": 0.0, "p": True, "q": False},
        {"x": -7, "y": 2, "f": -0.0, "g": np.inf, "p": False, "q": True},
    ]


@pytest.mark.parametrize("source", _sources())
def test_fast_expression_is_the_checked_one(source: str) -> None:
    e = parse(source, SYMBOLS)
    for env in _envs():
        before = {k: np.copy(v) for k, v in env.items()}
        with np.errstate(all="ignore"):
            try:
                slow, bad = e.root.checked(env)
            except TypeError:  # numpy refuses it (e.g. booleans subtracted): so must the fast path
                with pytest.raises(TypeError):
                    e.root.evaluate(env)
                continue
            fast = e.root.evaluate(env)
        assert bad is False or not np.any(bad), source
        assert _same(fast, slow), (source, {k: type(v).__name__ for k, v in env.items()})
        # The fast path writes only into arrays it made, never into its inputs.
        assert all(_same(np.asarray(env[k]), before[k]) for k in env), source


def test_public_evaluate_is_the_checked_one_and_still_reports_overflow() -> None:
    env = _envs()[0]
    for source in ("(x * 1) * y + x // y - ceil_div(x, y) % (y + 0)",
                   "max(0.0, 1.0 - f / max(g * 2.0, 1))", "align_up(x * 2, 16) // 4"):
        e = parse(source, SYMBOLS)
        with np.errstate(all="ignore"):
            slow = e.root.checked(env)[0]
        assert _same(e.evaluate(env), slow), source
        with expr_mod.unchecked():
            assert _same(e.evaluate(env), slow), source
    big = {"x": np.array([2**40, 3]), "y": np.array([2**40, 5])}
    for source in ("(x * 1) * y", "x * y + 1", "min(x * y, 3)", "align_up(x * y, 7)"):
        with pytest.raises(ExprError, match="integer overflow"):
            parse(source, SYMBOLS).evaluate(big)


# ---- the transfer cost against its formulas ----------------------------------------------

def _ref_chip_share(hw: HardwareProfile, chip: Any, active_cores: Any, port: str) -> Any:
    k = np.maximum(np.asarray(active_cores, dtype=np.float64), 1.0)
    p = float(hw["gm_contention_exponent"])
    offered = k * float(hw[f"{port}_gm_port_bytes_per_cycle"])
    chip = np.asarray(chip, dtype=np.float64)
    # Element by element in Python floats (libm's pow): the machine-independent answer, which
    # numpy's SIMD power (SVML, on AVX-512 CPUs) can miss by an ulp.
    offered, chip = np.broadcast_arrays(offered, chip)
    out = [(o ** -p + c ** -p) ** (-1.0 / p) if o > 0 and c > 0 else
           float(np.power(np.power(o, -p) + np.power(c, -p), -1.0 / p))
           for o, c in zip(offered.ravel().tolist(), chip.ravel().tolist(), strict=True)]
    return np.array(out, dtype=np.float64).reshape(offered.shape) / k


def _ref_transfer(hw: HardwareProfile, path: str, nbytes: Any, rows: Any, count: Any,
                  l2_hit: Any, cores: Any, aligned: Any, layout: str | None,
                  element_bytes: int, pitch: Any = None) -> dict[str, Any]:
    spec = hw.transfers[path]
    block = float(hw["ub_block_bytes"])
    rows = np.maximum(rows, 1.0)
    runs, row_bytes = ref_runs(hw, nbytes, rows, layout, element_bytes)
    moved = runs * np.ceil(row_bytes / block) * block
    bandwidth = spec.bandwidth(moved)
    gm_cycles = np.zeros_like(moved)
    capped = np.zeros(moved.shape, dtype=bool)
    if path in GM_PATHS:
        unaligned = float(hw["gm_unaligned_efficiency"])
        # The core's rate follows a declared alignment, else the run length; the chip's only a
        # declared one (1.0: aligned). A misaligned pitch lowers both to S10's rate, or for an
        # ND2NZ copy to the grade of the pitch's own alignment, never above what they were.
        core = np.where(np.mod(row_bytes, float(hw["gm_align_bytes"])) == 0 if aligned is None
                        else aligned, 1.0, unaligned)
        chip_factor = np.ones(np.shape(moved)) if aligned is None else np.where(aligned, 1.0,
                                                                                 unaligned)
        if pitch is not None:
            pitch_bytes = pitch * float(element_bytes)
            starts = np.mod(pitch_bytes, float(hw["gm_align_bytes"])) == 0
            off: Any = unaligned
            if path == "gm_to_l1" and layout in ("row_major", "column_major"):
                off = np.where(np.mod(pitch_bytes, 256.0) == 0,
                               float(hw["nd2nz_pitch_256b_efficiency"]),
                               np.where(np.mod(pitch_bytes, 128.0) == 0,
                                        float(hw["nd2nz_pitch_128b_efficiency"]),
                                        float(hw["nd2nz_pitch_32b_efficiency"])))
            core = np.where(starts, core, np.minimum(core, off))
            chip_factor = np.where(starts, chip_factor, np.minimum(chip_factor, off))
        bandwidth = bandwidth * core
        hit = np.clip(l2_hit, 0.0, 1.0)
        chip = 1.0 / ((1.0 - hit) / hw.hbm_bytes_per_cycle + hit / hw.l2_bytes_per_cycle)
        chip = chip * chip_factor
        port = "aic" if path in costs.AIC_GM_PATHS else "aiv"
        share = _ref_chip_share(hw, chip, cores, port)
        capped = share < bandwidth
        bandwidth = np.minimum(bandwidth, share)
        gm_cycles = count * moved / share
    streaming = moved / bandwidth
    latency = np.full(np.shape(streaming), spec.latency_cycles)
    split = np.zeros(np.shape(streaming), dtype=bool)
    if path == "gm_to_l1" and layout in ("row_major", "column_major"):
        streaming = np.maximum(streaming, runs * float(hw["nd2nz_row_cycles"]))
        if pitch is not None:  # one copy, and one latency, per run beyond the pitch field
            split = pitch > float(hw["nd2nz_max_pitch_elements"])
            latency = np.where(split, runs * spec.latency_cycles, latency)
    if path in ("gm_to_l1", "gm_to_ub", "ub_to_gm"):
        # A queued DataCopy: at least its issue cost on the pipe, its latency waited for once
        # per execution of the stage (on the share of trips a fractional count gives), on the
        # pipe per run where the copy splits.
        streaming = np.maximum(streaming, float(hw["copy_issue_cycles"]))
        per_transfer = np.where(split, latency + streaming, streaming)
        wait = np.minimum(count, 1.0) * spec.latency_cycles
        if split.any():
            wait = np.where(split, 0.0, wait)
    else:
        per_transfer = latency + streaming
        wait = np.asarray(0.0)
    return {"cycles": count * per_transfer, "gm_cycles": gm_cycles,
            "wait_cycles": np.asarray(wait),
            "bytes_per_transfer": moved, "bandwidth": bandwidth,
            "effective_bandwidth": moved / (per_transfer + wait), "share_capped": capped,
            "peak_bandwidth": np.full_like(moved, float(spec.curve_bytes_per_cycle.max()))}


@pytest.fixture(scope="module")
def hw() -> HardwareProfile:
    return load_profile("ascend910b3")


def test_transfer_is_its_formulas(hw: HardwareProfile) -> None:
    rng = np.random.default_rng(5)
    n = 2000
    for path, layout, declared, scalar_cores in itertools.product(
            TRANSFER_PATHS, (None, "row_major", "column_major", "nz"), (False, True),
            (False, True)):
        nbytes = rng.choice([0.0, -0.0, 32.0, 100.0, 512.0, -1024.0, 4096.0, 16384.0, 1e6,
                             np.inf, np.nan], n) * rng.integers(1, 5, n)
        rows = rng.choice([0.0, 1.0, 2.0, 3.0, 16.0, 256.0], n)
        count = rng.choice([0.0, 0.5, 1.0, 7.0], n)
        hit = rng.choice([-0.5, 0.0, 0.25, 1.0, 1.5], n)
        cores = (np.float64(rng.integers(0, 48)) if scalar_cores
                 else rng.choice([0.0, 1.0, 8.0, 40.0], n))
        aligned = (rng.random(n) < 0.5) if declared else None
        # Pitches (elements) aligned or not at every element size, and beyond the ND2NZ
        # pitch field (65 535); all aligned (the chip's share taken from the cache).
        pitches = (None, rng.choice([1.0, 4096.0, 4000.0, 4032.0, 4064.0, 12287.0, 65535.0,
                                     65536.0, 80000.0, 131072.0, -4000.0, np.nan, np.inf],
                                    n), np.full(n, 8192.0))
        for element, pitch in itertools.product((1, 2, 4), pitches):
            cache: costs.ShareCache = {}
            with np.errstate(all="ignore"):
                ref = _ref_transfer(hw, path, nbytes, rows, count, hit, cores, aligned, layout,
                                    element, pitch)
                # A share of another hit array on the same cores must not be taken for this
                # one; the second call reuses the first one's share.
                costs.transfer(hw, path, nbytes, rows, count, np.zeros(n), cores, aligned,
                               layout, element, cache, pitch)
                for _ in range(2):
                    got = costs.transfer(hw, path, nbytes, rows, count, hit, cores, aligned,
                                         layout, element, cache, pitch)
                    for name, want in ref.items():
                        assert _same(np.asarray(getattr(got, name)), want), (path, layout, name)


def test_transfer_of_scalars_and_mixed_shapes_is_its_formulas(hw: HardwareProfile) -> None:
    n = 5
    nbytes, rows = np.array([100.0, 512.0, 4096.0, 3000.0, 0.0]), np.array([1.0, 2, 3, 16, 0])
    for path, layout, declared in itertools.product(
            ("gm_to_l1", "gm_to_ub", "l1_to_l0a"), (None, "column_major", "nz"),
            (False, True)):
        aligned = np.array([True, False, True, False, True]) if declared else None
        for args in ((nbytes, 4.0, 1.0, 0.5, 8.0), (4096.0, rows, np.ones(n), 0.0, 20.0),
                     (4096.0, 3.0, 2.0, 0.25, np.full(n, 8.0)), (2048.0, 2.0, 1.0, 0.0, 4.0),
                     (nbytes.astype(np.int64), rows.astype(np.int64), np.ones(n, np.int64),
                      np.array([0, 1, 0, 1, 1]), np.full(n, 8)),
                     (nbytes.astype(np.float32), rows.astype(np.float32),
                      np.full(n, 3.0, np.float32), np.float32(0.5), 8.0),
                     (np.array([4096.0]), 2.0, 1.0, 0.5, np.full(n, 8.0))):
            with np.errstate(all="ignore"):
                ref = _ref_transfer(hw, path, *args, aligned, layout, 2)
                got = costs.transfer(hw, path, *args, aligned, layout, 2)
            for name, want in ref.items():
                value = getattr(got, name)  # the wait may be a scalar where the rest are not
                value = np.asarray(value) if name == "wait_cycles" else value
                assert _same(value, want), (path, layout, name, args)


def test_chip_share_is_its_formula(hw: HardwareProfile) -> None:
    for cores, chip, port in itertools.product(
            (np.float64(3.0), np.array(3.0), np.array([1.0, 0.0, 40.0]), 5),
            (900.0, np.array(900.0), np.array([900.0, 3000.0, 1200.0])), ("aic", "aiv")):
        assert _same(np.asarray(costs.chip_share_bytes_per_cycle(hw, chip, cores, port)),
                     np.asarray(_ref_chip_share(hw, chip, cores, port)))
    # Batches index tables of distinct core counts and rates: whole, fractional, zero, nan and
    # out-of-table counts, against rates that vary by row.
    rng = np.random.default_rng(4)
    n = 4099
    chip = rng.uniform(300.0, 3000.0, n)
    for cores in (rng.integers(0, 41, n).astype(np.float64), rng.integers(1, 2000, n) * 1.0,
                  np.where(np.arange(n) == 5, 2.5, 8.0), np.where(np.arange(n) == 9, np.nan, 4.0),
                  rng.integers(1, 64, n)):
        for port in ("aic", "aiv"):
            assert _same(costs.chip_share_bytes_per_cycle(hw, chip, cores, port),
                         _ref_chip_share(hw, chip, cores, port)), (cores[:3], port)


# ---- engine and pipeline helpers against the numpy calls they replace --------------------

def test_column_extremes_are_min_and_max_over_rows() -> None:
    rng = np.random.default_rng(3)
    for rows, cols in ((1, 3), (63, 2), (64, 15), (65, 15), (4096 + 37, 15), (1000, 1)):
        values = rng.integers(-(2**62), 2**62, size=(rows, cols))
        for arr in (values, np.asfortranarray(values), values[::-1]):
            assert _same(engine._fold(arr, np.minimum), arr.min(axis=0))
            assert _same(engine._fold(arr, np.maximum), arr.max(axis=0))


def test_bound_is_argmax_of_the_stacked_columns() -> None:
    rng = np.random.default_rng(4)
    n = 500
    for trial in range(60):
        # Continuous values, then few distinct ones (ties, signed zeros, inf), then with nan.
        specials = [0.0, -0.0, 1.0, 2.0, np.inf] + ([np.nan] if trial % 3 == 2 else [])
        cols = [rng.choice(specials, n) if trial % 3 else rng.random(n)
                for _ in range(len(PIPE_COLUMNS) + 2)]
        pipes = dict(zip(PIPE_COLUMNS, cols, strict=False))
        want = np.argmax(np.stack(cols, axis=1), axis=1)
        got = pipeline.bound(pipes, cols[-2], cols[-1])
        assert np.array_equal(got, want) and got.dtype == np.int64


def test_loop_helpers_are_the_wheres_they_replace() -> None:
    trips = np.array([0.0, -0.0, 0.5, 1.0, 1.5, 7.0, np.inf, np.nan])
    value = np.array([3.0, -2.0, np.inf, np.nan, -0.0, 0.0, 1.0, 5.0])
    assert _same(pipeline._unless_no_trips(trips, value.copy()),
                 np.where(trips <= 0, 0.0, value))
    assert _same(pipeline._unless_no_trips(trips[2:], value[2:]),
                 np.where(trips[2:] <= 0, 0.0, value[2:]))
    for cycles in (0.0, 12.0, -3.0, np.inf, np.nan):
        assert _same(pipeline._where_more_than_one(trips, cycles),
                     np.where(trips > 1.0, cycles, 0.0))


def test_only_new_conversions_count_as_owned() -> None:
    floats, ints = np.arange(4.0), np.arange(4)
    assert pipeline._owned_arr(floats, 4) == (floats, False)  # the input itself
    converted, owned = pipeline._owned_arr(ints, 4)
    assert owned and _same(converted, ints.astype(np.float64))
    assert not pipeline._owned_arr(7, 4)[1]  # a broadcast scalar
    assert not pipeline._owned_arr(floats[::2], 2)[1]  # a view of another array


# ---- whole models: objective against a reference evaluation ------------------------------

def _ref_value(e: Expr, env: Mapping[str, Any]) -> Any:
    with np.errstate(all="ignore"):
        return e.root.checked(env)[0]


def _ref_arr(value: Any, n: int) -> np.ndarray:
    out = np.asarray(value, dtype=np.float64)
    return out if out.shape == (n,) else np.broadcast_to(out, (n,))


def _ref_passes(check: launch.Check, env: Mapping[str, Any]) -> Any:
    value = _ref_value(check.expr, env)
    if check.boolean:
        return np.asarray(value, dtype=bool)
    with np.errstate(invalid="ignore", over="ignore"):
        v = np.asarray(value, dtype=np.float64)
        return np.isfinite(v) & (v >= check.lo) & (v <= check.hi)


class _Reference:
    """docs/model.md's formulas plainly: no in-place steps or shortcuts, no costs helper."""

    def __init__(self, model: ShapeModel) -> None:
        self.model, self.spec, self.hw = model, model.spec, model.hw

    def objective(self, genomes: np.ndarray) -> np.ndarray:
        spec, hw = self.spec, self.hw
        values = np.asarray(self.model.values(genomes), dtype=np.int64)
        n = values.shape[0]
        env: dict[str, Any] = dict(self.model.base_env)
        for j, p in enumerate(spec.params):
            env[p] = values[:, j]
        for name, e in spec.derive:
            env[name] = _ref_value(e, env)
        checks = [_ref_value(e, env) for _, e in spec.constraints]
        cores = {"cube": hw["cube_cores"], "vector": hw["vector_cores"]}
        checks += [_ref_passes(c, env) for c in launch.checks(spec, cores)]
        valid = np.ones(n, dtype=bool)
        for ok in checks:
            valid &= np.broadcast_to(np.asarray(ok, dtype=bool), (n,))
        latency = np.full(n, np.inf)
        rows = np.flatnonzero(valid)
        if rows.size:
            sub = {k: (v[rows] if isinstance(v, np.ndarray) and v.shape == (n,) else v)
                   for k, v in env.items()}
            latency[rows] = self.cost(sub, rows.size)
        return latency

    def cost(self, env: Mapping[str, Any], n: int) -> np.ndarray:
        hw, clock_mhz = self.hw, float(self.hw["clock_mhz"])
        pipes = {c: np.zeros(n) for c in PIPE_COLUMNS}
        side_us, head_us = [], np.zeros(n)
        for side in self.spec.sides:
            cores = _ref_arr(_ref_value(side.cores, env), n)
            items = (_ref_arr(_ref_value(side.items, env), n) if side.items is not None
                     else cores)
            per_core = np.ceil(items / np.maximum(cores, 1.0))
            lat, busy, _gm, _rec = self.loop(side.body, per_core, np.ones(n), env, cores, n)
            side_us.append(lat / clock_mhz)
            for pipe, cycles in busy.items():
                pipes[PIPE_COLUMN[(side.core, pipe)]] += cycles / clock_mhz
            head_us = np.maximum(head_us, ref_head(hw, cores, side.core))
        body_us = side_us[0]
        if len(side_us) > 1:
            handoffs = (_ref_arr(_ref_value(self.spec.handoffs, env), n)
                        if self.spec.handoffs is not None else np.zeros(n))
            both = (side_us[0] + side_us[1] if any(s.prologue for s in self.spec.sides)
                    else np.maximum(side_us[0], side_us[1]))  # a prologue runs first
            body_us = (both + handoffs * float(hw["sync_cycles"]) / clock_mhz
                       + float(hw["mix_extra_us"]))
        out: np.ndarray = head_us + body_us
        return out

    def loop(self, body: Sequence[Stage | Loop], trips: np.ndarray, buffers: np.ndarray,
             env: Mapping[str, Any], cores: np.ndarray, n: int
             ) -> tuple[np.ndarray, dict[str, Any], np.ndarray, np.ndarray]:
        hw = self.hw
        trips = np.maximum(trips, 0.0)
        loop_cycles = np.where(trips > 1.0, float(hw["loop_iteration_cycles"]), 0.0)
        seq = loop_cycles.copy()
        busy: dict[str, Any] = {"scalar": loop_cycles.copy()}
        gm, recurrence = np.zeros(n), np.zeros(n)
        handoffs, prev = 0, None
        # Queued copies' GM latency: the longest waited for at the loop's end, every one held
        # by the flags of a handoff to another pipe (on the pipe and the chain).
        pending: Any = None
        flagged: Any = None
        for item in body:
            wait: Any = None
            if isinstance(item, Loop):
                t = _ref_arr(_ref_value(item.trips, env), n)
                b = (_ref_arr(_ref_value(item.buffers, env), n) if item.buffers is not None
                     else np.ones(n))
                lat, sub_busy, sub_gm, sub_rec = self.loop(item.body, t, b, env, cores, n)
                seq = seq + lat
                for pipe, cycles in sub_busy.items():
                    busy[pipe] = busy.get(pipe, 0.0) + cycles
                gm = gm + sub_gm
                recurrence = np.maximum(recurrence, sub_rec)
                first, last = end_pipes(item.body)
            else:
                cycles, stage_gm, wait = self.stage(item, env, cores, n)
                seq = seq + cycles
                busy[item.pipe] = busy.get(item.pipe, 0.0) + cycles
                gm = gm + stage_gm
                first = last = item.pipe
            if prev is not None and first is not None and first != prev:
                handoffs += 1
                if pending is not None:
                    busy[prev] = busy[prev] + flagged
                    seq = seq + flagged
                    pending = None
            if isinstance(item, Loop):
                pending = None
            elif wait is not None:
                pending, flagged = ((wait, wait) if pending is None
                                    else (np.maximum(pending, wait), flagged + wait))
            prev = last if last is not None else prev
        if pending is not None:
            seq = seq + pending
        sync = handoffs * float(hw["sync_cycles"])
        seq = seq + sync
        busy["scalar"] = busy["scalar"] + sync
        steady = np.maximum(np.maximum.reduce([*busy.values(), gm]), recurrence)
        pipelined = seq + np.maximum(trips - 1.0, 0.0) * steady
        double = buffers >= 2
        latency = np.where(trips <= 0, 0.0, np.where(double, pipelined, trips * seq))
        exported = np.where(trips <= 0, 0.0,
                            np.where(double, trips * recurrence,
                                     np.maximum(trips - 1.0, 0.0) * seq + steady))
        return latency, {p: c * trips for p, c in busy.items()}, gm * trips, exported

    def stage(self, stage: Stage, env: Mapping[str, Any], cores: np.ndarray, n: int
              ) -> tuple[np.ndarray, np.ndarray, Any]:
        spec, hw = self.spec, self.hw

        def arr(e: Expr | None, default: float) -> np.ndarray:
            return _ref_arr(_ref_value(e, env), n) if e is not None else np.full(n, default)

        count = arr(stage.count, 1.0)
        if stage.kind == "transfer":
            assert stage.path is not None
            aligned = (np.broadcast_to(np.asarray(_ref_value(stage.gm_aligned, env), bool),
                                       (n,)) if stage.gm_aligned is not None else None)
            element = (DTYPE_BYTES[spec.stage_dtype(spec.dtypes[stage.operand])]
                       if stage.operand is not None else 1)
            pitch = arr(stage.pitch, 0.0) if stage.pitch is not None else None
            t = _ref_transfer(hw, stage.path, arr(stage.bytes, 0.0), arr(stage.rows, 1.0),
                              count, arr(stage.l2_hit, 0.0), cores, aligned, stage.layout,
                              element, pitch)
            wait = (t["wait_cycles"] if stage.path in ("gm_to_l1", "gm_to_ub", "ub_to_gm")
                    else None)
            return t["cycles"], t["gm_cycles"], wait
        if stage.kind == "cube":
            dtype = spec.stage_dtype(stage.dtype or "")
            cycles = count * ref_mmad(hw, dtype, arr(stage.m, 0.0), arr(stage.n, 0.0),
                                      arr(stage.k, 0.0))
        elif stage.kind == "vector":
            assert stage.op is not None
            size = DTYPE_BYTES[spec.stage_dtype(stage.dtype or "")]
            cycles = count * ref_vector(hw, stage.op, size, arr(stage.elements, 0.0))
        else:
            cycles = arr(stage.cycles, 0.0) * count
        return cycles, np.zeros(n), None


# Shapes whose operand pitches are misaligned and beyond the ND2NZ pitch field (65 535
# elements), for the specs that give their operands' matrices (gm_rows / gm_cols).
PITCH_SHAPES = {"matmul": {"M": 512, "N": 100000, "K": 4000},
                "batch_matmul": {"B": 2, "M": 256, "N": 1000, "K": 70001},
                "grouped_matmul": {"M": 1024, "K": 80000, "G": 4, "N": 1000},
                "quant_matmul": {"M": 256, "K": 70000, "G": 1, "N": 3000}}


def _example_shapes(name: str) -> list[dict[str, int]]:
    folder = ROOT / "examples" / name
    path = next(p for p in (folder / "shapes.yaml", folder / "shapes.csv") if p.exists())
    shapes = load_shape_file(path, load_spec(name))
    return [shapes[0], shapes[len(shapes) // 2], shapes[-1]] + (
        [PITCH_SHAPES[name]] if name in PITCH_SHAPES else [])


@pytest.mark.parametrize("name", SPECS)
def test_objective_is_the_reference_evaluation(name: str, hw: HardwareProfile) -> None:
    spec = load_spec(name)
    for i, shape in enumerate(_example_shapes(name)):
        model = ShapeModel(spec, hw, shape)
        reference = _Reference(model)
        genomes = np.random.default_rng(100 + i).integers(0, model.sizes,
                                                          size=(3000, model.sizes.size))
        want = reference.objective(genomes)
        assert _same(model.objective(genomes), want), (name, shape)
        # The all-valid batch (no scatter), and batches of one row, where every loop's buffer
        # count is uniform (one side of the pipelined / serial choice is skipped).
        valid = genomes[np.isfinite(want)]
        assert _same(model.objective(valid), want[np.isfinite(want)]), (name, shape)
        for row in valid[:40]:
            assert _same(model.objective(row[None]), reference.objective(row[None])), name
        # Evaluating again gives the same bits: nothing shared between batches was written.
        assert _same(model.objective(genomes), want), (name, shape)
