"""Each check tabled over the few genes it reads: a search's feasibility questions become one
gather.

A tiling check reads a handful of parameters: matmul's ``l0a_fits`` reads baseM, baseK and
dbL0A (70 combinations), its largest, ``l1_fits``, eight parameters (31 360 combinations),
while the whole space has ~10^8 configurations. So each check's outcome is computed once per
shape for every combination of the genes it reads (one vectorised evaluation over that small
product of domains), and a row's outcome is read off the table at the row's combination: the
index of the combination is a dot product of the row with the check's strides, every check's
table lives in one flat array, and any number of rows and checks costs one ``genomes @
strides`` and one gather. The search's move generators ask about ~70 rows at a time, tens of
thousands of times a shape (:mod:`ascend_tune.search.construct`).

Exact: the table holds the very booleans the vectorised check gives on those values (the same
expression, evaluated elementwise by the same numpy calls), and a check's outcome depends on
nothing but the genes it reads (the shape and profile numbers are fixed per shape). Built only
where every expression is proven free of int64 overflow over the domains (the unchecked path,
as the row kernel), and only for checks whose table has at most ``max_entries`` entries; the
caller computes the other checks another way (:class:`ascend_tune.search.space.CheckSet`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ascend_tune import expr as expr_mod
from ascend_tune.spec import OperatorSpec, launch, needed_derived

# Largest table built for one check: 2^18 combinations is a few milliseconds of numpy once per
# shape; a check reading more goes through the row kernel instead.
MAX_TABLE_ENTRIES = 1 << 18


class CheckTables:
    """Tables of the checks (``checks[i]`` reads the genes ``reads[i]``) that fit
    ``max_entries``; ``covers(i)`` says which did."""

    def __init__(self, spec: OperatorSpec, base_env: Mapping[str, Any],
                 grids: Sequence[np.ndarray], checks: Sequence[launch.Check],
                 reads: np.ndarray, max_entries: int = MAX_TABLE_ENTRIES) -> None:
        n_genes = len(grids)
        sizes = [int(g.size) for g in grids]
        self._column: dict[int, int] = {}  # check -> its column of strides and offsets
        strides: list[np.ndarray] = []
        offsets: list[int] = []
        parts: list[np.ndarray] = []
        total = 0
        for i, check in enumerate(checks):
            genes = [int(j) for j in np.flatnonzero(reads[i])]
            entries = 1
            for j in genes:
                entries *= sizes[j]
            if entries > max_entries:
                continue
            stride = np.zeros(n_genes, dtype=np.int64)
            step = 1
            for j in reversed(genes):  # the last gene read varies fastest
                stride[j] = step
                step *= sizes[j]
            parts.append(_table(spec, base_env, grids, check, genes, stride, entries))
            self._column[i] = len(strides)
            strides.append(stride)
            offsets.append(total)
            total += entries
        self._strides = (np.stack(strides, axis=1) if strides
                         else np.zeros((n_genes, 0), dtype=np.int64))
        self._offsets = np.asarray(offsets, dtype=np.int64)
        self._flat = np.concatenate(parts) if parts else np.zeros(0, dtype=bool)

    def covers(self, check: int) -> bool:
        return check in self._column

    def passes(self, genomes: np.ndarray, which: Sequence[int]) -> np.ndarray:
        """(rows, len(which)) booleans for covered checks ``which`` on index genomes (each
        gene inside its domain, as every genome a strategy builds is)."""
        cols = [self._column[i] for i in which]
        if len(cols) == self._strides.shape[1] and cols == sorted(cols):
            strides, offsets = self._strides, self._offsets
        else:
            strides, offsets = self._strides[:, cols], self._offsets[cols]
        out: np.ndarray = self._flat[genomes @ strides + offsets]
        return out


def _table(spec: OperatorSpec, base_env: Mapping[str, Any], grids: Sequence[np.ndarray],
           check: launch.Check, genes: Sequence[int], stride: np.ndarray,
           entries: int) -> np.ndarray:
    """``check`` on every combination of ``genes``' values, in stride order."""
    flat = np.arange(entries, dtype=np.int64)
    env: dict[str, Any] = dict(base_env)
    for j in genes:
        g = grids[j]
        env[spec.params[j]] = g[(flat // stride[j]) % g.size]
    with expr_mod.unchecked():
        for name, e in needed_derived(spec, [check.expr]):
            env[name] = e.evaluate(env)
        return np.array(np.broadcast_to(check.passes(env), (entries,)), dtype=bool)
