"""What a reviewer of a tuning checks beyond the parameters, for the report. Pure: no drawing.

* per shape, the TilingData field values the kernel reads (with block dim and tiling key), as
  the emitted TilingFunc fills them for the tuned configuration (``emit.selection.derive``);
* per charted shape, the profile leaves the prediction leans on that are low-confidence or
  unsourced: each calibration coefficient (``calibrate.coefficients``) scaled by
  :data:`STEP`; one that moves the tuned latency by :data:`LEANS` or more is leaned on, and
  its leaves are listed when their confidence is low or their source is missing, an estimate,
  a fit or an assumption;
* for results whose shapes vary in one shape variable only (what ``search --shape-range``
  with one ranged variable writes), the latency of the configuration the emitted dispatch
  picks along that variable, and the values where the tuned candidate it starts from changes
  (its run-time descent adjusts the pick to each shape in between).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ascend_tune.calibrate.coefficients import COEFFICIENTS, leaf, scaled_profile
from ascend_tune.emit.bundle import Bundle
from ascend_tune.emit.selection import NONE, derive, field_value, runtime_env
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.spec import OperatorSpec

STEP = 0.1  # a coefficient scaled by 1 + STEP
LEANS = 0.02  # ... that moves the latency by 2 % or more (elasticity 0.2) is leaned on
RANGE_POINTS = 48  # log-spaced points along a one-variable range, tuned values added
_WEAK_SOURCES = ("estimate", "fitted", "assumed", "guess")


@dataclass(frozen=True)
class TilingRow:
    name: str  # TilingData field (nested.field in a nested struct), block_dim, tiling_key
    ctype: str  # "" for block dim and tiling key
    value: str


@dataclass(frozen=True)
class LeanedLeaf:
    coefficient: str
    doc: str
    path: str  # the leaf's key path in the profile, dotted
    why: str  # "low confidence", "no source", "estimate", ...
    source: str
    change: float  # latency change with the coefficient scaled by 1 + STEP (+0.05 = 5 %)


@dataclass(frozen=True)
class RangeCurve:
    variable: str
    fixed: dict[str, int]  # the other shape variables
    xs: tuple[int, ...]
    latency_us: tuple[float, ...]  # inf where the dispatch finds no configuration
    changes: tuple[int, ...]  # xs where the dispatched configuration differs from the last
    tuned: tuple[tuple[int, float], ...]  # (value, tuned latency) of every tuned shape


@dataclass(frozen=True)
class KernelView:
    tiling: dict[int, tuple[TilingRow, ...]]  # shape index -> fields
    leaves: dict[int, tuple[LeanedLeaf, ...]]  # charted shape index -> leaves
    range_curve: RangeCurve | None


def _number(value: int | float) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def tiling_rows(spec: OperatorSpec, hw: HardwareProfile, shape: Mapping[str, int],
                config: Mapping[str, int]) -> tuple[TilingRow, ...]:
    """The fields the emitted TilingFunc writes for ``config`` on ``shape`` (profile cores)."""
    env = derive(spec, runtime_env(spec, hw, int(hw["cube_cores"]), int(hw["vector_cores"])),
                 dict(shape), dict(config))
    if env is None:
        return ()
    rows = [TilingRow(f.name, f.ctype, _number(field_value(f.ctype, f.value.evaluate(env))))
            for f in spec.tiling_fields]
    rows += [TilingRow(f"{nested.name}.{f.name}", f.ctype,
                       _number(field_value(f.ctype, f.value.evaluate(env))))
             for nested in spec.tiling_nested for f in nested.fields]
    rows.append(TilingRow("block_dim", "", str(int(spec.block_dim.evaluate(env)))))
    if spec.tiling_key is not None:
        rows.append(TilingRow("tiling_key", "", str(int(spec.tiling_key.evaluate(env)))))
    return tuple(rows)


def _weakness(node: Mapping[str, object]) -> str | None:
    source = str(node.get("source") or "").strip()
    note = str(node.get("note") or "").lower()
    if not source:
        return "no source"
    if node.get("confidence") == "low":
        return "low confidence"
    lowered = source.lower()
    for word in _WEAK_SOURCES:
        if lowered.startswith(word) or note.startswith(word):
            return word
    return None


def leaned_leaves(spec: OperatorSpec, hw: HardwareProfile, shape: Mapping[str, int],
                  config: Mapping[str, int]) -> tuple[LeanedLeaf, ...]:
    """Low-confidence or unsourced leaves the tuned latency moves with, largest move first."""
    values = np.array([[config[p] for p in spec.params]], dtype=np.int64)
    base: float | None = None
    found: list[LeanedLeaf] = []
    for coef in COEFFICIENTS:
        weak = []
        for path in coef.leaves:
            try:
                node = leaf(hw.data, path)
            except (KeyError, TypeError):
                continue  # the profile has no such leaf (the model uses a default)
            why = _weakness(node) if isinstance(node, Mapping) else None
            if why is not None:
                weak.append((path, why, str(node.get("source") or "")[:160]))
        if not weak:
            continue  # only weak leaves are reported: the model runs for those alone
        if base is None:
            base = float(ShapeModel(spec, hw, dict(shape)).evaluate(values).latency_us[0])
        trial = scaled_profile(hw, {coef.name: 1.0 + STEP})
        latency = float(ShapeModel(spec, trial, dict(shape)).evaluate(values).latency_us[0])
        change = latency / base - 1.0
        if math.isfinite(change) and abs(change) >= LEANS:
            found += [LeanedLeaf(coef.name, coef.doc, ".".join(path), why, source, change)
                      for path, why, source in weak]
    return tuple(sorted(found, key=lambda x: (-abs(x.change), x.path)))


def range_curve(bundle: Bundle, tuned_us: Sequence[float],
                points: int = RANGE_POINTS) -> RangeCurve | None:
    """The dispatched latency along the one shape variable the tuned shapes vary in (None
    when they vary in none or in several, or take fewer than three values); ``tuned_us``:
    the tuned latency of each of the bundle's shapes. Tuned values join the grid while they
    are at most ``points`` many."""
    spec, hw = bundle.spec, bundle.hw
    tuned = [(dict(s), b) for s, b in bundle.shapes]
    varying = [v for v in spec.shape_vars if len({s[v] for s, _ in tuned}) > 1]
    if len(varying) != 1 or len({s[varying[0]] for s, _ in tuned}) < 3:
        return None
    var = varying[0]
    fixed = {v: tuned[0][0][v] for v in spec.shape_vars if v != var}
    lo, hi = min(s[var] for s, _ in tuned), max(s[var] for s, _ in tuned)
    grid = {round(float(x)) for x in np.geomspace(max(lo, 1), hi, points)}
    values = {s[var] for s, _ in tuned}
    xs = tuple(sorted(grid | values if len(values) <= points else grid | {lo, hi}))
    aic, aiv = int(hw["cube_cores"]), int(hw["vector_cores"])
    latency: list[float] = []
    changes: list[int] = []
    last: int | None = None
    for x in xs:
        sel = bundle.select({**fixed, var: x}, aic, aiv)
        if sel.source == NONE:
            latency.append(math.inf)
            continue
        if math.isfinite(sel.latency_us):
            latency.append(float(sel.latency_us))
        else:  # an exact hit: the pick's time is not computed by the selection
            row = np.array([[sel.config[p] for p in spec.params]], dtype=np.int64)
            ev = ShapeModel(spec, hw, {**fixed, var: x}).evaluate(row)
            latency.append(float(ev.latency_us[0]) if ev.valid[0] else math.inf)
        key = sel.index  # the tuned candidate the pick starts from (-1: baseline / walk)
        if last is not None and key != last:
            changes.append(x)
        last = key
    tuned_points = sorted((s[var], float(t)) for (s, _), t in zip(tuned, tuned_us, strict=True))
    return RangeCurve(var, fixed, xs, tuple(latency), tuple(changes), tuple(tuned_points))


def view(bundle: Bundle, configs: Sequence[tuple[Mapping[str, int], Mapping[str, int]]],
         tuned_us: Sequence[float], charted: Sequence[int]) -> KernelView:
    """Tiling rows of every shape, leaned-on leaves of the charted ones, the range curve
    (``configs``: each shape and its tuned configuration; ``tuned_us``: its latency)."""
    spec, hw = bundle.spec, bundle.hw
    tiling = {i: tiling_rows(spec, hw, shape, config)
              for i, (shape, config) in enumerate(configs)}
    leaves = {i: leaned_leaves(spec, hw, *configs[i]) for i in charted}
    return KernelView(tiling, leaves, range_curve(bundle, tuned_us))
