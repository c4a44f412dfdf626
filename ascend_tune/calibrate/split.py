"""Which measured rows a calibration may fit and which it is judged on, fixed before fitting.

Rows are grouped by source file and shape: a tiling sweep (one shape, several measured
configurations) is one group, so a held-out row is never a near copy of a fitted one. With
enough groups whole groups are held out; otherwise single rows are, in a seeded order. Both
are deterministic for a seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.calibrate.measurements import Measurement
from ascend_tune.spec.shapes import shape_key

# Fewer rows than this and nothing is held out by default: a held-out error on one or two rows
# says little, and taking them away from the fit costs more than it tells.
MIN_ROWS_TO_HOLD_OUT = 8
# Whole groups are held out only when there are at least this many of them per test set.
MIN_GROUPS_PER_SET = 2


@dataclass(frozen=True, eq=False)
class Split:
    fit: np.ndarray  # row indices, increasing
    held_out: np.ndarray  # row indices, increasing (may be empty)
    method: str  # how the rows were split, for reports

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Split) and self.method == other.method
                and np.array_equal(self.fit, other.fit)
                and np.array_equal(self.held_out, other.held_out))

    __hash__ = None  # type: ignore[assignment]

    def as_dict(self) -> dict[str, object]:
        return {"method": self.method, "fit_rows": len(self.fit),
                "held_out_rows": len(self.held_out)}


def group_keys(rows: Sequence[Measurement]) -> list[str]:
    """The group of each row: its source file and its shape (one tiling sweep)."""
    return [f"{m.origin.rsplit(':', 1)[0]}|{shape_key(m.shape)}" for m in rows]


def _groups(rows: Sequence[Measurement]) -> list[np.ndarray]:
    members: dict[str, list[int]] = {}
    for i, key in enumerate(group_keys(rows)):
        members.setdefault(key, []).append(i)
    return [np.array(v, dtype=np.int64) for v in members.values()]


def holdout(rows: Sequence[Measurement], share: float, seed: int) -> Split:
    """Hold out about ``share`` of the rows (0: none). Too few rows: none, and the method says
    so."""
    n = len(rows)
    if share < 0 or share >= 1:
        raise AscendTuneError(f"--holdout must be at least 0 and below 1, got {share}")
    every = np.arange(n, dtype=np.int64)
    if share == 0:
        return Split(every, every[:0], "none (--holdout 0)")
    if n < MIN_ROWS_TO_HOLD_OUT:
        return Split(every, every[:0],
                     f"none (only {n} row(s); at least {MIN_ROWS_TO_HOLD_OUT} to hold any out)")
    rng = np.random.default_rng(seed)
    target = max(1, round(share * n))
    groups = _groups(rows)
    if len(groups) >= 2 * MIN_GROUPS_PER_SET:
        held: list[int] = []
        taken = 0
        for g in rng.permutation(len(groups)):
            if len(held) >= target or taken == len(groups) - 1:
                break
            held += groups[int(g)].tolist()
            taken += 1
        if taken >= 1 and len(held) < n:
            out = np.array(sorted(held), dtype=np.int64)
            return Split(np.setdiff1d(every, out), out,
                         f"by source and shape: {taken} of {len(groups)} group(s), seed {seed}")
    out = np.sort(rng.permutation(n)[:target])
    return Split(np.setdiff1d(every, out), out, f"by row: {target} of {n}, seed {seed}")


def kfold(rows: Sequence[Measurement], k: int, seed: int) -> tuple[str, list[np.ndarray]]:
    """``k`` disjoint test sets covering every row: whole groups when there are at least
    ``MIN_GROUPS_PER_SET`` per fold, else single rows, in a seeded order."""
    n = len(rows)
    if not 2 <= k <= n:
        raise AscendTuneError(f"--kfold must be between 2 and the {n} rows")
    rng = np.random.default_rng(seed)
    groups = _groups(rows)
    if len(groups) >= k * MIN_GROUPS_PER_SET:
        # Deal groups largest-first (ties in seeded order) to the smallest fold, so folds stay
        # close in size.
        dealt = sorted(rng.permutation(len(groups)).tolist(), key=lambda g: -len(groups[g]))
        tests: list[list[int]] = [[] for _ in range(k)]
        for g in dealt:
            smallest = min(range(k), key=lambda f: len(tests[f]))
            tests[smallest] += groups[g].tolist()
        return (f"by source and shape: {len(groups)} group(s) in {k} folds, seed {seed}",
                [np.array(sorted(t), dtype=np.int64) for t in tests])
    order = rng.permutation(n)
    return (f"by row: {n} rows in {k} folds, seed {seed}",
            [np.sort(t) for t in np.array_split(order, k)])
