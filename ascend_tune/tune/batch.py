"""Many shapes of one spec tuned together: one model call for a batch of shapes whose search
spaces are the same, each shape's entry the bytes :func:`~ascend_tune.tune.shape.tune_shape`
writes for it.

Where it applies (:func:`batchable`): ``auto`` search at ``--top-k 1`` on a spec whose
parameter domains read no shape variable (every shape has the same configurations, e.g. a 1-D
elementwise op) and whose space is small enough that ``auto`` scores its whole valid set
(exhaustive: no random stream, so nothing depends on being batched). What the per-shape
search does, done for a batch of shapes at once:

* the checks of every configuration of every shape, broadcast (shapes down, configurations
  across): the valid set of each shape in configuration-number order, as the pruned
  enumeration sorts it (``search.space.Enumerator.indices``);
* the cost of every valid row of the batch in one ``pipeline.batch_cost`` call, the shape
  variables per-row arrays (every step is elementwise: row for row the bits of the per-shape
  call, as ``model.engine.evaluate_valid_rows`` does for calibration);
* the baselines, the winners and their descriptions (tiling fields, pipes, bound) evaluated
  for the batch in one call each.

A shape it cannot answer exactly so (no valid configuration, a latency that is not finite) is
left to the per-shape search (``None`` in :func:`tune_batch`'s answer); a batch whose
expressions are not proven free of int64 overflow is left whole.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ascend_tune import expr as expr_mod
from ascend_tune.base.vocabulary import BOUND_NAMES, PIPE_COLUMNS
from ascend_tune.model import roofline
from ascend_tune.model.engine import ShapeModel
from ascend_tune.model.pipeline import batch_cost, bound
from ascend_tune.search.problem import decode_flat
from ascend_tune.search.strategies import exact_limit
from ascend_tune.spec import OperatorSpec, launch
from ascend_tune.tune.shape import TuneSettings

Entry = dict[str, Any]

# Shapes tuned in one batch: the checks are a (shapes x configurations) array, so a batch
# holds at most BATCH_CELLS of them (256 kB per boolean array: larger arrays cost page faults
# on every batch, measured with benchmarks/many_shapes.py).
BATCH_CELLS = 1 << 18
# Spaces up to this many configurations are batched (every configuration of every shape is
# checked; past it the per-shape pruned enumeration is the cheaper way to the valid set).
MAX_BATCH_SPACE = 1 << 14
# Exhaustive search scores the valid set in chunks of this many (search.strategies.exhaustive):
# each chunk may add a point to the history, so a batched space fits one chunk.
_EXHAUSTIVE_CHUNK = 65536


def _domain_names(spec: OperatorSpec) -> set[str]:
    names: set[str] = set()
    for d in spec.domains.values():
        for e in [*d.exprs, *(x for x in (d.step, d.multiple_of) if x is not None)]:
            names |= set(e.names)
    return names


def batchable(spec: OperatorSpec, settings: TuneSettings, model: ShapeModel) -> bool:
    """Whether shapes of ``spec`` with ``settings`` can be tuned in batches; ``model``: a
    shape model of one of them (its space is every shape's)."""
    if settings.strategy != "auto" or settings.top_k != 1:
        return False
    if set(spec.shape_vars) & _domain_names(spec) or not model.space_size:
        return False
    # auto counts the valid set and scores it whole when it is within exact_limit: a space
    # no larger than that is always searched exhaustively.
    return model.space_size <= min(exact_limit(settings.budget), MAX_BATCH_SPACE,
                                   _EXHAUSTIVE_CHUNK)


def batch_size(model: ShapeModel) -> int:
    """Shapes per batch for this space."""
    return max(1, BATCH_CELLS // max(model.space_size, 1))


def _num_list(value: Any, n: int) -> list[int | float]:
    """``tune.shape._num`` of each of ``n`` rows of an evaluation result."""
    arr = np.broadcast_to(np.asarray(value), (n,))
    if arr.dtype.kind in "biu":
        return [int(v) for v in arr.tolist()]
    return [round(v, 9) for v in arr.astype(np.float64).tolist()]


class _Batch:
    """The shapes of one batch and what every evaluation over them shares."""

    def __init__(self, model: ShapeModel, shapes: Sequence[Mapping[str, int]]) -> None:
        self.model = model
        self.spec = spec = model.spec
        self.hw = model.hw
        self.shapes = shapes
        self.s = len(shapes)
        self.shape_cols = {v: np.array([int(sh[v]) for sh in shapes], dtype=np.int64)
                           for v in spec.shape_vars}
        self.fixed = {k: v for k, v in model.base_env.items() if k not in self.shape_cols}
        # Every launch check (the per-shape model skips those it proves to pass: the same
        # outcome), after the spec's constraints, in constraint_names order.
        self.checks = [launch.Check(n, e, boolean=True) for n, e in spec.constraints]
        self.checks += list(model.launch_rules.checks)

    def env(self, rows: np.ndarray | None, values: np.ndarray) -> dict[str, Any]:
        """Parameters and derived values of rows (``values``, one per row) whose shapes are
        ``rows`` (indices into the batch; None: one row per shape)."""
        env: dict[str, Any] = dict(self.fixed)
        for v, col in self.shape_cols.items():
            env[v] = col if rows is None else col[rows]
        for j, p in enumerate(self.spec.params):
            env[p] = values[:, j]
        for name, e in self.spec.derive:
            env[name] = e.evaluate(env)
        return env

    def first_failed(self, env: Mapping[str, Any], n: int) -> np.ndarray:
        """Index into constraint_names of each row's first failing check, -1 where valid."""
        failed = np.full(n, -1, dtype=np.int64)
        valid = np.ones(n, dtype=bool)
        for i, check in enumerate(self.checks):
            ok = np.broadcast_to(check.passes(env), (n,))
            failed[valid & ~ok] = i
            valid &= ok
        return failed

    def proven(self, extra: np.ndarray) -> bool:
        """Every expression free of int64 overflow for the batch's shapes, on the space's
        configurations and on ``extra`` parameter rows (the baselines)."""
        m = self.model
        spans = {k: expr_mod.value_span(v) for k, v in self.fixed.items()}
        for v, col in self.shape_cols.items():
            spans[v] = expr_mod.outer_span(int(col.min()), int(col.max()))
        for j, (p, g) in enumerate(zip(self.spec.params, m.grids, strict=True)):
            lo, hi = int(g.min()), int(g.max())
            if len(extra):
                lo, hi = min(lo, int(extra[:, j].min())), max(hi, int(extra[:, j].max()))
            spans[p] = expr_mod.outer_span(lo, hi)
        return bool(expr_mod.prove(m._steps, spans))


def _baselines(batch: _Batch) -> np.ndarray | None:
    """The baseline configuration of every shape (rows), as ``spec.evaluate_baseline`` rounds
    it; None where one is not finite or leaves int64 (the per-shape path reports it)."""
    spec = batch.spec
    local: dict[str, Any] = dict(batch.fixed)
    local.update(batch.shape_cols)
    out = np.empty((batch.s, len(spec.params)), dtype=np.int64)
    with np.errstate(all="ignore"):
        for p, e in spec.baseline.items():
            x = np.floor(np.broadcast_to(np.asarray(e.evaluate(local), dtype=np.float64),
                                         (batch.s,)) + 0.5)
            if not (np.isfinite(x).all() and (x >= -(2.0**63)).all() and (x < 2.0**63).all()):
                return None
            local[p] = out[:, spec.params.index(p)] = x.astype(np.int64)
    return out


def _nearest(grids: Sequence[np.ndarray], values: np.ndarray) -> np.ndarray:
    """``ShapeModel.nearest_indices`` of each row of ``values``."""
    out = np.empty(values.shape, dtype=np.int64)
    for j, g in enumerate(grids):
        dist = np.abs(g.astype(np.float64)[None, :] - values[:, j].astype(np.float64)[:, None])
        out[:, j] = np.argmin(dist, axis=1)
    return out


def _rounded(values: np.ndarray, digits: int) -> list[float]:
    """``round(v, digits)`` of every element (Python's rounding, as ``tune.shape`` rounds),
    computed once per distinct value (by bits: -0.0 keeps its sign)."""
    flat = np.ascontiguousarray(values, dtype=np.float64)
    if flat.size <= 64:
        return [round(v, digits) for v in flat.tolist()]
    bits, inverse = np.unique(flat.view(np.int64), return_inverse=True)
    done = [round(v, digits) for v in bits.view(np.float64).tolist()]
    return [done[k] for k in inverse.tolist()]


class _Rows:
    """One configuration per shape (row i: shape i) evaluated as ``ShapeModel.evaluate``
    does: which check each breaks first, and the cost of the valid ones."""

    def __init__(self, batch: _Batch, values: np.ndarray) -> None:
        n = batch.s
        self.batch = batch
        self.env = batch.env(None, values)
        self.failed = batch.first_failed(self.env, n)
        self.rows = np.flatnonzero(self.failed < 0)  # the valid rows
        self.sub = {k: (v[self.rows] if isinstance(v, np.ndarray) and v.shape == (n,) else v)
                    for k, v in self.env.items()}
        self.latency, self.pipes, self.gm, self.head, _st = batch_cost(
            batch.spec, batch.hw, self.sub, self.rows.size, False)
        # Each shape's row among the valid ones, -1 where invalid.
        self.at = np.full(n, -1, dtype=np.int64)
        self.at[self.rows] = np.arange(self.rows.size)

    def describe(self, roof: list[float]) -> list[dict[str, Any]]:
        """``tune.shape.describe`` of each row."""
        batch, sub = self.batch, self.sub
        spec, n, k = batch.spec, batch.s, self.rows.size
        cols = {p: _num_list(self.env[p], n) for p in spec.params}
        derived = {name: _num_list(sub[name], k) for name, _ in spec.derive}
        tiling = {f.name: _num_list(f.value.evaluate(sub), k) for f in spec.tiling_fields}
        nested = {t.name: {f.name: _num_list(f.value.evaluate(sub), k) for f in t.fields}
                  for t in spec.tiling_nested}
        block = _num_list(spec.block_dim.evaluate(sub), k)
        key = (_num_list(spec.tiling_key.evaluate(sub), k) if spec.tiling_key is not None
               else None)
        lat = self.latency.tolist()
        lat6 = _rounded(self.latency, 6)
        pipes = {c: _rounded(self.pipes[c], 6) for c in PIPE_COLUMNS}
        gm, head = _rounded(self.gm, 6), _rounded(self.head, 6)
        bounds = bound(self.pipes, self.gm, self.head).tolist()
        names = batch.model.constraint_names
        at_l, failed = self.at.tolist(), self.failed.tolist()
        out: list[dict[str, Any]] = []
        for i in range(n):
            d: dict[str, Any] = {"config": {p: cols[p][i] for p in spec.params}}
            at = at_l[i]
            d["valid"] = at >= 0
            if at < 0:
                d["violates"] = names[failed[i]]
                out.append(d)
                continue
            d["derived"] = {name: col[at] for name, col in derived.items()}
            t = {name: col[at] for name, col in tiling.items()}
            for tname, fields in nested.items():
                t[tname] = {fname: col[at] for fname, col in fields.items()}
            d["tiling"] = t
            d["block_dim"] = block[at]
            if key is not None:
                d["tiling_key"] = key[at]
            d["predicted"] = {
                "latency_us": lat6[at],
                "pipes_us": {c: pipes[c][at] for c in PIPE_COLUMNS},
                "gm_bandwidth_us": gm[at],
                "head_overhead_us": head[at],
                "bound": BOUND_NAMES[bounds[at]],
                "roofline_us": round(roof[i], 6),
                "efficiency": round(roof[i] / lat[at], 6),
            }
            out.append(d)
        return out


def _rooflines(batch: _Batch) -> list[float]:
    """``model.roofline_us`` of every shape, elementwise as ``roofline.roofline_us``."""
    spec, hw, n = batch.spec, batch.hw, batch.s
    env: dict[str, Any] = {**batch.fixed, **batch.shape_cols}
    top = roofline.ceilings(spec, hw)

    def col(value: Any) -> np.ndarray:
        return np.broadcast_to(np.asarray(value, dtype=np.float64), (n,))

    terms = [term.tolist() for term in roofline.terms_us(spec, top, env, col)]
    out = terms[0]
    for term in terms[1:]:  # Python's max(terms), shape by shape: the first of equal ones
        out = [t if t > b else b for b, t in zip(out, term, strict=True)]
    return [float(v) for v in out]


def tune_batch(model: ShapeModel, shapes: Sequence[Mapping[str, int]], settings: TuneSettings
               ) -> list[Entry | None]:
    """The results entry of each shape (as ``tune_shape`` gives it), None for a shape the
    per-shape search must tune; ``model``: a shape model of one of them, with
    :func:`batchable`."""
    if not batchable(model.spec, settings, model):
        raise ValueError(f"{model.spec.name}: these settings are searched shape by shape")
    batch = _Batch(model, shapes)
    base = _baselines(batch)
    if base is None or not batch.proven(base):
        return [None] * batch.s
    with expr_mod.unchecked():
        return _tune(batch, base)


def _tune(batch: _Batch, base: np.ndarray) -> list[Entry | None]:
    model = batch.model
    grid = model.values(decode_flat(np.arange(model.space_size, dtype=np.int64), model.sizes))
    valid, config, latency = _valid_rows(batch, grid)
    found = _Found(batch, base, valid, config, latency)
    # The described baseline (its own values, perhaps outside the domains) replaces the
    # search's winner where it is faster to the 6 digits the results file keeps.
    baselines = _Rows(batch, base)
    base_us = np.full(batch.s, math.inf)
    base_us[baselines.rows] = baselines.latency
    b6 = _rounded(base_us, 6)
    w6 = _rounded(found.best, 6)
    faster = np.array([b < w for b, w in zip(b6, w6, strict=True)], dtype=bool)
    final = np.where(faster[:, None], base, grid[found.winner])
    described = _Rows(batch, final).describe(_rooflines(batch))
    return _entries(batch, found, described, baselines, b6)


def _valid_rows(batch: _Batch, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every configuration (``grid``, in configuration-number order) of every shape checked,
    broadcast (shapes down as column arrays, configurations across as row arrays): the
    (shapes x configurations) valid mask, and the configuration number and latency of each
    valid cell, shape-major (a shape's valid set as the pruned enumeration sorts it)."""
    spec, s, space = batch.spec, batch.s, len(grid)
    env: dict[str, Any] = dict(batch.fixed)
    for v, col in batch.shape_cols.items():
        env[v] = col[:, None]
    for j, p in enumerate(spec.params):
        env[p] = np.ascontiguousarray(grid[:, j])[None, :]
    for name, e in spec.derive:
        env[name] = e.evaluate(env)
    valid = np.ones((s, space), dtype=bool)
    for check in batch.checks:
        valid &= np.broadcast_to(check.passes(env), (s, space))
    shape_of, config = np.nonzero(valid)
    latency = np.empty(0)
    if shape_of.size:
        # The valid cells' values gathered from the broadcast ones (the same integers, no
        # second evaluation).
        cost_env: dict[str, Any] = dict(batch.fixed)
        for name in [*batch.shape_cols, *spec.params, *(n for n, _ in spec.derive)]:
            v = env[name]
            cost_env[name] = (np.broadcast_to(v, (s, space))[valid]
                              if isinstance(v, np.ndarray) and v.ndim else v)
        latency = batch_cost(spec, batch.hw, cost_env, shape_of.size, False)[0]
    return valid, config, latency


class _Found:
    """What the exhaustive search of each shape finds, as ``search.problem`` counts it: the
    baseline genome scored first (the history's first point where it is valid), then the
    valid set; the winner is the first fastest in configuration order (np.argmin's), the
    baseline genome where nothing beats it."""

    def __init__(self, batch: _Batch, base: np.ndarray, valid: np.ndarray, config: np.ndarray,
                 latency: np.ndarray) -> None:
        s, model = batch.s, batch.model
        counts = valid.sum(axis=1)
        starts = np.concatenate([[0], np.cumsum(counts)])
        filled = np.flatnonzero(counts)
        best = np.full(s, math.inf)
        first = np.zeros(s, dtype=np.int64)
        finite = np.zeros(s, dtype=bool)
        if filled.size:
            lo = starts[filled]
            best[filled] = np.minimum.reduceat(latency, lo)
            finite[filled] = np.logical_and.reduceat(np.isfinite(latency), lo)
            hits = np.flatnonzero(latency == np.repeat(best[filled], counts[filled]))
            first[filled] = hits[np.minimum(np.searchsorted(hits, lo), hits.size - 1)]
        number = _numbers(_nearest(model.grids, base), model.sizes)
        self.base_valid = valid[np.arange(s), number]
        at = starts[:-1] + np.cumsum(valid, axis=1)[np.arange(s), number] - 1
        last = max(latency.size - 1, 0)
        self.base_latency = np.where(self.base_valid, latency[np.clip(at, 0, last)]
                                     if latency.size else math.inf, math.inf)
        self.keeps_base = self.base_valid & (self.base_latency <= best)
        self.winner = np.where(self.keeps_base, number,
                               config[np.clip(first, 0, last)] if config.size else 0)
        self.best = best
        self.counts = counts
        # Shapes the batch answers: some valid configuration, every latency finite.
        self.usable = (counts > 0) & finite


def _entries(batch: _Batch, found: _Found, described: list[dict[str, Any]], baselines: _Rows,
             b6: list[float]) -> list[Entry | None]:
    """The results entries, as ``tune_shape`` assembles them (None: left to it)."""
    space = batch.model.space_size
    names = batch.model.constraint_names
    base_configs = _configs(baselines)
    out: list[Entry | None] = []
    rows = zip(found.counts.tolist(), found.usable.tolist(), found.base_valid.tolist(),
               found.keeps_base.tolist(), found.base_latency.tolist(), found.best.tolist(),
               baselines.at.tolist(), baselines.failed.tolist(), strict=True)
    for i, (count, ok, bvalid, kept, blat, best, bat, bfail) in enumerate(rows):
        entry = described[i]
        if not ok or not entry["valid"]:  # (an invalid winner cannot happen: same checks)
            out.append(None)
            continue
        history = [(1, blat)] if bvalid else []
        if not kept:
            history.append((count, best))
        if bat >= 0:
            base_summary: dict[str, Any] = {"config": base_configs[i],
                                            "valid": True, "latency_us": b6[i]}
            entry["speedup"] = round(b6[i] / entry["predicted"]["latency_us"], 6)
        else:
            base_summary = {"config": base_configs[i], "valid": False,
                            "violates": names[bfail]}
            entry["speedup"] = None
        entry.pop("valid")
        out.append({
            "shape": dict(batch.shapes[i]),
            "strategy": "exhaustive",
            "best": entry.pop("config"),
            **entry,
            "baseline": base_summary,
            "evaluations": count,
            "rejected": space - count,
            "space_size": space,
            "history": [[n, round(lat, 6)] for n, lat in history],
        })
    return out


def _configs(rows: _Rows) -> list[dict[str, int | float]]:
    """Each row's configuration as the results file writes it."""
    params = rows.batch.spec.params
    cols = [_num_list(rows.env[p], rows.batch.s) for p in params]
    return [dict(zip(params, values, strict=True)) for values in zip(*cols, strict=True)]


def _numbers(genomes: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Configuration numbers of index genomes (last gene fastest), as ``decode_flat`` reads
    them."""
    out = np.zeros(len(genomes), dtype=np.int64)
    for j in range(sizes.size):
        out = out * int(sizes[j]) + genomes[:, j]
    return out
