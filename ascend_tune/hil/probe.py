"""Probe configurations: a few extra candidates per results file, chosen so that one device run
determines the profile's coefficients (``ascend-tune probe``, issue 26).

The top-k of a search are alike: one shape's runners-up differ in buffer depths and loop
order, bound by the same pipe on the same cores, so their measured times cannot tell the
coefficients apart (the HBM rate from the AIC's port rate, the head from the cube floor).
Calibration needs rows whose times move differently with each coefficient.

The design, per results file:

1. a pool per shape: the winner with one parameter moved over its domain (other core counts,
   tile sizes, buffer depths: configurations a developer would try) and random valid
   configurations, each predicted within ``MAX_SLOWDOWN`` times the shape's best;
2. each pool row's elasticities, ``d log(time) / d log(coefficient)`` by central differences
   on the profile (the same screen ``calibrate`` runs), for every coefficient the fit may move;
3. greedy E-optimal selection: starting from the rows the file already holds (its
   candidates), add the pool row that most raises the smallest eigenvalue of ``J^T J`` of the
   column-normalised elasticities (the weakest direction: what the identifiability screen
   judges), ties to the larger rise of ``log det``, ``count`` times;
4. the identifiability screen (``calibrate.identifiability``) on the candidates alone and with
   the probes says which coefficients the run will determine.

Probes join the entry's ``candidates`` after the search's, marked ``"probe": true``: ``measure``
measures them like any candidate (a probe that measures fastest wins: it is the fastest known),
``calibrate --from-results`` reads them as rows, and ``emit`` leaves them out of the dispatch
table unless one won.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.calibrate.coefficients import scaled_profile
from ascend_tune.calibrate.fit import FitOptions
from ascend_tune.calibrate.fit import candidates as fit_candidates
from ascend_tune.calibrate.identifiability import MIN_SENSITIVITY, Identified, identify
from ascend_tune.calibrate.uncertainty import planned_percent
from ascend_tune.hardware import HardwareProfile
from ascend_tune.hil import candidates as cands
from ascend_tune.hil import probe_shapes
from ascend_tune.hil.probe_shapes import NewShape
from ascend_tune.model.engine import ShapeModel
from ascend_tune.results import format as results
from ascend_tune.results.store import ResultsStore
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec.shapes import shape_key
from ascend_tune.tune.shape import CANDIDATE_KEYS, TuneSettings, describe, tune_shape

# A probe is predicted at most this many times slower than the shape's best: a probe on a
# few cores is what shows the per-core GM port, and even 50x a tuned kernel is milliseconds
# of device time (the command's own start-up costs more).
MAX_SLOWDOWN = 50.0
# Random configurations drawn per shape for the pool (before validity), and values per
# parameter when the winner's parameters are moved one at a time.
RANDOM_DRAWS = 4096
VALUES_PER_PARAM = 12
# Pool rows kept per shape (a seeded subset), and shapes the design draws probes from (evenly
# spaced over the file): a few shapes with several probes each determine the profile, and the
# design's cost stays flat on a results file of thousands of shapes.
POOL_PER_SHAPE = 256
MAX_SHAPES = 16
# Pool rows whose eigenvalues are taken at once (each a coefficients x coefficients matrix).
CHUNK = 1024
# Log step of the elasticity screen (as calibrate's).
STEP = 0.05
# Ridge on the normalised information matrix: keeps log det finite before every coefficient
# is seen.
RIDGE = 1e-3
# The run-to-run noise the planned precision is stated at: log-normal, per measured row (a
# row of `measure --repeat N` is a median, about this or better on a quiet device).
PLANNED_NOISE = 0.01


@dataclass
class ProbeDesign:
    """What ``probe`` chose: per shape the added configurations, and which coefficients the
    candidates alone and with the probes determine."""

    added: dict[str, list[dict[str, int]]] = field(default_factory=dict)
    coefficients: list[str] = field(default_factory=list)  # what the fit may move
    before: Identified | None = None  # the candidates alone
    after: Identified | None = None  # candidates and probes
    # determined coefficient -> 95 % half-width in percent its fit would have from the
    # candidates and probes' times at PLANNED_NOISE (infinite: not separable in practice)
    precision: dict[str, float] = field(default_factory=dict)
    noise: float = PLANNED_NOISE
    # Shapes added (probe --shapes) where the file's own cannot determine a coefficient.
    new_shapes: list[NewShape] = field(default_factory=list)

    @property
    def determined(self) -> list[str]:
        return list(self.after.kept) if self.after is not None else []

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.added.values()) + sum(
            len(s.configs) for s in self.new_shapes)

    def document(self) -> dict[str, Any]:
        def part(found: Identified | None) -> dict[str, Any] | None:
            if found is None:
                return None
            return {"determined": list(found.kept), "unseen": list(found.unseen),
                    "together": {k: list(v) for k, v in found.together.items()}}

        return {"added": self.count, "probes": {k: list(v) for k, v in self.added.items()},
                "coefficients": list(self.coefficients), "candidates_alone": part(self.before),
                "with_probes": part(self.after),
                "planned_precision": {"noise": self.noise, "percent95": {
                    k: (round(v, 3) if math.isfinite(v) else None)
                    for k, v in self.precision.items()}},
                "new_shapes": [{"shape": dict(s.shape), "why": s.why, "probes": s.configs,
                                "determines": s.determines, "sharpens": s.sharpens}
                               for s in self.new_shapes]}


@dataclass
class _Shape:
    key: str
    model: ShapeModel
    existing: np.ndarray  # (rows, params) the entry's candidates
    pool: np.ndarray  # (rows, params) probe candidates


def _pool(model: ShapeModel, existing: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Valid configurations near the winner (one parameter moved) and drawn at random,
    predicted within MAX_SLOWDOWN of the best known, none already a candidate."""
    best = existing[0]
    rows = []
    for j, grid in enumerate(model.grids):
        values = np.asarray(grid)
        if values.size > VALUES_PER_PARAM:
            values = values[np.unique(np.linspace(0, values.size - 1, VALUES_PER_PARAM)
                                      .round().astype(np.int64))]
        moved = np.repeat(best[None, :], values.size, axis=0)
        moved[:, j] = values
        rows.append(moved)
    genomes = rng.integers(0, model.sizes, size=(RANDOM_DRAWS, model.sizes.size))
    rows.append(model.values(genomes))
    pool = np.unique(np.concatenate(rows), axis=0)
    ev = model.evaluate(pool)
    limit = float(model.evaluate(existing).latency_us.min()) * MAX_SLOWDOWN
    keep = ev.valid & (ev.latency_us <= limit)
    pool = pool[keep]
    if existing.size:
        known = {tuple(r) for r in existing.tolist()}
        pool = pool[[tuple(r) not in known for r in pool.tolist()]] if len(pool) else pool
    if len(pool) > POOL_PER_SHAPE:
        pool = pool[np.sort(rng.choice(len(pool), POOL_PER_SHAPE, replace=False))]
    return pool.reshape(-1, existing.shape[1])


def _elasticities(model: ShapeModel, hw: HardwareProfile, values: np.ndarray,
                  names: Sequence[str]) -> np.ndarray:
    """(rows, names): d log(latency) / d log(scale) of each coefficient, central differences."""
    out = np.zeros((len(values), len(names)))
    if not len(values):
        return out
    for j, name in enumerate(names):
        sides = [model.with_profile(scaled_profile(hw, {name: float(np.exp(s * STEP))}))
                 .evaluate(values).latency_us for s in (1.0, -1.0)]
        out[:, j] = (np.log(sides[0]) - np.log(sides[1])) / (2.0 * STEP)
    return out


def _greedy(existing: np.ndarray, pool: np.ndarray, count: int) -> list[int]:
    """Indices of ``count`` pool rows added greedily on top of ``existing`` (both
    column-normalised elasticities), each the row that most raises the smallest eigenvalue of
    the information matrix ``J^T J`` (the weakest direction is what the identifiability screen
    judges), ties broken by the rise of ``log det`` (D-optimality)."""
    k = pool.shape[1]
    info = existing.T @ existing + RIDGE * np.eye(k)
    chosen: list[int] = []
    for _ in range(min(count, len(pool))):
        inv = np.linalg.inv(info)
        d_gain = np.log1p(np.einsum("ij,jk,ik->i", pool, inv, pool))
        # Smallest eigenvalue after adding each row: information plus its outer product.
        e_gain = np.concatenate([
            np.linalg.eigvalsh(info[None, :, :] + part[:, :, None] * part[:, None, :])[:, 0]
            for part in (pool[i:i + CHUNK] for i in range(0, len(pool), CHUNK))])
        score = e_gain + 1e-6 * d_gain
        score[chosen] = -np.inf
        best = int(np.argmax(score))
        if not np.isfinite(score[best]) or d_gain[best] <= 1e-9:
            break
        chosen.append(best)
        info += np.outer(pool[best], pool[best])
    return chosen


def design(spec: OperatorSpec, hw: HardwareProfile, entries: Sequence[Mapping[str, Any]],
           count: int, options: FitOptions | None = None, seed: int = 0,
           file_hw: HardwareProfile | None = None, new_shapes: int = 0) -> ProbeDesign:
    """Choose ``count`` probe configurations over ``entries`` (results entries of ``spec``),
    designed at ``hw``; each is also valid on ``file_hw`` (the results file's own profile,
    which `measure` checks candidates against; default ``hw``). With ``new_shapes`` > 0 and a
    coefficient the file's shapes leave undetermined, also up to that many new shapes, each
    with its probes (:mod:`ascend_tune.hil.probe_shapes`). Nothing is written."""
    if count < 0:
        raise AscendTuneError(f"--count {count}: give a number of probes >= 0")
    if new_shapes < 0:
        raise AscendTuneError(f"--shapes {new_shapes}: give a number of shapes >= 0")
    names, _why = fit_candidates(hw, options or FitOptions())
    rng = np.random.default_rng(seed)
    shapes = []
    if len(entries) > MAX_SHAPES:
        picks = np.unique(np.linspace(0, len(entries) - 1, MAX_SHAPES).round().astype(np.int64))
        entries = [entries[int(i)] for i in picks]
    for entry in entries:
        model = ShapeModel(spec, hw, dict(entry["shape"]))
        existing = np.array([[c["config"][p] for p in spec.params]
                             for c in cands.candidates(entry)], dtype=np.int64)
        # Designed at another profile (--hw), a candidate may not fit that chip: it is not a
        # row there, and a shape with none gives no probes.
        existing = existing[model.evaluate(existing).valid]
        if not len(existing):
            continue
        pool = _pool(model, existing, rng)
        if file_hw is not None and file_hw is not hw and len(pool):
            pool = pool[ShapeModel(spec, file_hw, dict(entry["shape"])).evaluate(pool).valid]
        shapes.append(_Shape(shape_key(entry["shape"]), model, existing, pool))
    jac_existing = np.concatenate([_elasticities(s.model, hw, s.existing, names)
                                   for s in shapes]) if shapes else np.zeros((0, len(names)))
    jac_pool = [_elasticities(s.model, hw, s.pool, names) for s in shapes]
    pool_all = np.concatenate(jac_pool) if jac_pool else np.zeros((0, len(names)))
    owner = np.concatenate([np.full(len(j), i) for i, j in enumerate(jac_pool)]) \
        if jac_pool else np.zeros(0, dtype=np.int64)
    # Column scale: what the whole pool can show of each coefficient; one no row moves stays
    # out of the design (no probe of these shapes can determine it).
    every = np.concatenate([jac_existing, pool_all])
    scale = np.sqrt(np.mean(every**2, axis=0)) if len(every) else np.zeros(len(names))
    seen = scale >= MIN_SENSITIVITY
    norm = np.where(seen, scale, 1.0)
    picked = _greedy((jac_existing / norm)[:, seen], (pool_all / norm)[:, seen], count)
    out = ProbeDesign(coefficients=list(names))
    rows = np.concatenate([s.pool for s in shapes]) if shapes else np.zeros((0, 0))
    for i in sorted(picked, key=lambda i: (int(owner[i]), i)):
        out.added.setdefault(shapes[int(owner[i])].key, []).append(
            {p: int(v) for p, v in zip(spec.params, rows[i].tolist(), strict=True)})
    planned = np.concatenate([jac_existing, pool_all[picked]]) if picked else jac_existing
    out.before = identify(jac_existing, names)
    out.after = identify(planned, names)
    if new_shapes and len(out.after.kept) < len(names):
        check = file_hw if file_hw is not None and file_hw is not hw else None
        found = probe_shapes.build_candidates(
            spec, [dict(e["shape"]) for e in entries],
            lambda shape: ShapeModel(spec, hw, shape),
            lambda model, start: _pool(model, start, rng),
            lambda model, rows: _elasticities(model, hw, rows, names),
            lambda shape, rows: (ShapeModel(spec, check, shape).evaluate(rows).valid
                                 if check is not None else np.ones(len(rows), dtype=bool)))
        out.new_shapes = probe_shapes.choose(spec, found, planned, names, new_shapes, _greedy)
        if out.new_shapes:
            planned = np.concatenate([planned, *(s.jacobian for s in out.new_shapes)])
            out.after = identify(planned, names)
    kept = [names.index(n) for n in out.after.kept]
    out.precision = planned_percent(planned[:, kept], out.after.kept, PLANNED_NOISE)
    return out


def with_probes(entry: Mapping[str, Any], model: ShapeModel,
                configs: Sequence[Mapping[str, int]]) -> dict[str, Any]:
    """The entry with ``configs`` appended to its candidates as probes (described as the
    search describes a candidate)."""
    out = cands.with_candidates(entry)
    for config in configs:
        described = describe(model, dict(config))
        probe = {k: described[k] for k in CANDIDATE_KEYS if k in described}
        probe["probe"] = True
        out["candidates"].append(probe)
    return out


def add_probes(path: Path, spec: OperatorSpec, hw: HardwareProfile, count: int,
               options: FitOptions | None = None, seed: int = 0,
               design_hw: HardwareProfile | None = None, shapes: int = 0) -> ProbeDesign:
    """Design probes for the results file ``path`` (already checked against ``spec`` and its
    profile ``hw``), at ``design_hw`` (default ``hw``), and save them as candidates. Probes
    added by an earlier run are kept and count as candidates the new ones build on. A new
    shape (``shapes``) is tuned with the file's search settings and joins the file as
    ``search`` would add it, its probes after its candidates."""
    head = results.read_head(path)
    with ResultsStore(path, head, fresh=False) as store:
        entries = list(store.entries())
        if not entries:
            raise AscendTuneError(f"{path}: no tuned shapes to probe")
        found = design(spec, design_hw or hw, entries, count, options, seed, file_hw=hw,
                       new_shapes=shapes)
        by_key = {shape_key(e["shape"]): e for e in entries}
        for key, configs in found.added.items():
            entry = by_key[key]
            store.replace(with_probes(entry, ShapeModel(spec, hw, dict(entry["shape"])),
                                      configs))
        search = head["search"]
        settings = TuneSettings(search["strategy"], int(search["budget"]), int(search["seed"]),
                                int(search.get("top_k", 1)))
        for new in found.new_shapes:
            entry = tune_shape(spec, hw, new.shape, settings)
            known = {tuple(c["config"][p] for p in spec.params)
                     for c in cands.candidates(entry)}
            new.configs = [c for c in new.configs
                           if tuple(c[p] for p in spec.params) not in known]
            store.add(with_probes(entry, ShapeModel(spec, hw, new.shape), new.configs))
    return found
