"""Shapes ``probe --shapes N`` adds when the file's own shapes cannot determine a coefficient
(issue 45 part 4).

Every configuration of a results file's shapes may move two coefficients together, or leave
one unseen: a file of large matmuls never shows the launch head's per-core part (a microsecond
beside a long kernel), and a file of aligned shapes never shows ``nd2nz_pitch``. No choice of
configurations helps there; another shape does. The candidates, derived from the file's
shapes and kept inside the spec's shape domain:

* **smaller**: each shape with every variable divided by 4, 16 and 64 -- short kernels on
  fewer tiles, so fewer cores, where the launch head and per-core fixed costs are a large
  share of the time;
* **misaligned**: each shape with one variable one element longer -- rows whose pitch is off
  the 512 B alignment (the ND2NZ pitch grades, the unaligned GM rate).

Each candidate's pool is built as for the file's shapes (its baseline with one parameter moved,
random valid configurations; :func:`ascend_tune.hil.probe._pool`) and the candidates are taken
greedily, the one whose best ``PROBES_PER_SHAPE`` rows most raise the smallest eigenvalue of
the information matrix on top of the rows already planned, until ``N`` shapes are taken or no
candidate adds anything. ``probe`` then tunes each taken shape with the file's search settings
(a real entry: its winner and top-k, as ``search`` would add it) and adds the chosen rows as
its probes; what each shape is for is the coefficients it newly determines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ascend_tune.calibrate.identifiability import MIN_SENSITIVITY, identify
from ascend_tune.model.engine import ShapeModel
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec.shapes import shape_key

# Probe rows a new shape contributes to the design (its own winner and top-k come on top).
PROBES_PER_SHAPE = 4
# Divisors of the smaller candidates.
SHRINK = (4, 16, 64)
# Ridge on the normalised information matrix (as the probe design's).
RIDGE = 1e-3


@dataclass
class NewShape:
    """A shape ``probe`` adds: why it is a candidate, the probe rows chosen on it (and their
    elasticities) and the coefficients it newly determines."""

    shape: dict[str, int]
    why: str
    configs: list[dict[str, int]] = field(default_factory=list)
    jacobian: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    determines: list[str] = field(default_factory=list)  # newly determined with it
    sharpens: str = ""  # the coefficient its rows show most (normalised)

    @property
    def key(self) -> str:
        return shape_key(self.shape)


def candidate_shapes(spec: OperatorSpec, shapes: Sequence[Mapping[str, int]]
                     ) -> list[tuple[dict[str, int], str]]:
    """(shape, why) candidates derived from ``shapes``, inside the spec's shape domain, none
    already in ``shapes``, in a fixed order."""
    have = {shape_key(s) for s in shapes}
    out: list[tuple[dict[str, int], str]] = []

    def within(v: str, x: int) -> int:
        return max(spec.shape_min.get(v, 1), min(x, spec.shape_max.get(v, x)))

    def add(shape: dict[str, int], why: str) -> None:
        key = shape_key(shape)
        if key not in have:
            have.add(key)
            out.append((shape, why))

    for s in shapes:
        for d in SHRINK:
            add({v: within(v, int(x) // d) for v, x in s.items()},
                f"smaller (/{d}): a short kernel on fewer cores, launch-bound")
    for s in shapes:
        for v in s:
            add({**s, v: within(v, int(s[v]) + 1)},
                f"misaligned ({v} + 1): rows a pitch off the 512 B alignment")
    return out


@dataclass
class _Candidate:
    shape: dict[str, int]
    why: str
    pool: np.ndarray  # (rows, params)
    jacobian: np.ndarray  # (rows, names)


def choose(spec: OperatorSpec, candidates: Sequence[_Candidate], planned: np.ndarray,
           names: Sequence[str], count: int,
           greedy: Callable[[np.ndarray, np.ndarray, int], list[int]]) -> list[NewShape]:
    """Up to ``count`` of ``candidates`` taken greedily on top of the ``planned`` rows (the
    file's candidates and probes: elasticities over ``names``), each with its probe rows
    (the probe design's greedy choice on its pool). Each step takes the candidate that newly
    determines the most coefficients (``calibrate.identifiability``), ties to the larger rise
    of ``log det`` of the normalised information matrix; it stops when none determines one."""
    candidates = [c for c in candidates if len(c.pool)]
    if count <= 0 or not candidates:
        return []
    every = np.concatenate([planned, *(c.jacobian for c in candidates)])
    scale = np.sqrt(np.mean(every**2, axis=0))
    seen = scale >= MIN_SENSITIVITY
    norm = np.where(seen, scale, 1.0)
    ridge = RIDGE * np.eye(int(seen.sum()))

    def normed(rows: np.ndarray) -> np.ndarray:
        out: np.ndarray = (rows / norm)[:, seen]
        return out

    def log_det(rows: np.ndarray) -> float:
        return float(np.linalg.slogdet(rows.T @ rows + ridge)[1])

    so_far, rows = planned, normed(planned)
    taken: list[NewShape] = []
    left = list(range(len(candidates)))
    for _ in range(count):
        before = identify(so_far, list(names)).kept
        base = log_det(rows)
        best: tuple[int, float, int, list[int], list[str]] | None = None
        for i in left:
            part = normed(candidates[i].jacobian)
            picks = greedy(rows, part, PROBES_PER_SHAPE)
            if not picks:
                continue
            after = identify(np.concatenate([so_far, candidates[i].jacobian[picks]]),
                             list(names)).kept
            new = [n for n in after if n not in before]
            gain = log_det(np.concatenate([rows, part[picks]])) - base
            if best is None or (len(new), gain) > (best[0], best[1]):
                best = (len(new), gain, i, picks, new)
        if best is None or best[0] == 0:
            break
        _n, _gain, i, picks, determined = best
        c = candidates[i]
        shape = NewShape(c.shape, c.why, [
            {p: int(v) for p, v in zip(spec.params, c.pool[r].tolist(), strict=True)}
            for r in picks], c.jacobian[picks], determined)
        shown = np.sum(normed(shape.jacobian) ** 2, axis=0)
        shape.sharpens = [n for n, s in zip(names, seen, strict=True) if s][int(np.argmax(shown))]
        taken.append(shape)
        so_far = np.concatenate([so_far, shape.jacobian])
        rows = np.concatenate([rows, normed(shape.jacobian)])
        left.remove(i)
    return taken


def build_candidates(spec: OperatorSpec, shapes: Sequence[Mapping[str, int]],
                     model_of: Callable[[dict[str, int]], ShapeModel],
                     pool_of: Callable[[ShapeModel, np.ndarray], np.ndarray],
                     jacobian_of: Callable[[ShapeModel, np.ndarray], np.ndarray],
                     valid_on_file: Callable[[dict[str, int], np.ndarray], np.ndarray]
                     ) -> list[_Candidate]:
    """Each candidate shape's pool (around its baseline, valid on the file's profile too) and
    its elasticities; a shape whose baseline is not valid is left out."""
    out = []
    for shape, why in candidate_shapes(spec, shapes):
        model = model_of(shape)
        base = model.baseline_values()
        start = np.array([[base[p] for p in spec.params]], dtype=np.int64)
        if not model.evaluate(start).valid[0]:
            continue
        pool = pool_of(model, start)
        if len(pool):
            pool = pool[valid_on_file(shape, pool)]
        out.append(_Candidate(shape, why, pool, jacobian_of(model, pool)))
    return out
