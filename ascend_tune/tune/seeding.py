"""Starts from the tuning database: the configurations of the nearest recorded shapes moved
onto a new shape's domains and constraints (issue 47, part 3).

A recorded winner of a neighbouring shape is rarely valid as it is on the new one: a base tile
of 128 rows does not fit a core block of 64, 32 batch cores have nothing to do on a batch of 8.
Re-sampling every gene a broken check reads (``construct.repair``) throws away most of what
the seed knew (on Matmul 512x4096x1024 the winner of 1024x4096x1024 with mDim 8 came back as
baseM 16, nDim 20: 0.05 of the optimum). Instead a seed is moved with the fewest changes:

* its values mapped to the new shape's domains (nearest value of each gene);
* valid: kept as it is;
* else every valid configuration one gene away (the core split recomputed for the new
  extent, the tile clamped to the new core block), nearest value first: on that shape the
  winner of 1024x4096x1024 becomes 0.97 of the optimum (baseM 128 -> 64 is the optimum);
* else the fewest-changes repair of ``construct.settle``, else the old re-sampling repair.

Only constraint checks run here (no latency is scored): the search pays for every start it
scores, as for any configuration it looks at.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ascend_tune.model.engine import ShapeModel
from ascend_tune.search import construct
from ascend_tune.search.strategies import Problem
from ascend_tune.spec.shapes import shape_key

# One-gene moves kept per invalid seed (the nearest valid values of each gene, nearest first).
FIXES_PER_SEED = 6


@dataclass(frozen=True)
class Seeds:
    """Configurations of the nearest recorded shapes (the tuning database) to start from,
    best first."""

    configs: tuple[tuple[tuple[str, int], ...], ...] = ()
    shapes: tuple[str, ...] = ()  # the recorded shapes they come from


def one_gene_fixes(problem: Problem, genome: np.ndarray, limit: int) -> np.ndarray:
    """Valid configurations that differ from ``genome`` (invalid) in one gene, the smallest
    index change first (then the lowest gene, then the lower value): at most ``limit``."""
    sizes = problem.sizes
    genes = np.repeat(np.arange(sizes.size), sizes)
    value = np.concatenate([np.arange(int(s)) for s in sizes])
    cand = np.repeat(genome[None, :], genes.size, axis=0)
    cand[np.arange(genes.size), genes] = value
    good = ~construct.violated(problem.feasible, cand).any(axis=1)
    good &= value != genome[genes]
    rows = np.flatnonzero(good)
    distance = np.abs(value[rows] - genome[genes[rows]])
    order = np.lexsort((value[rows], genes[rows], distance))
    return cand[rows[order[:limit]]]


def transfer(model: ShapeModel, problem: Problem, configs: Sequence[Mapping[str, int]],
             seed: int) -> np.ndarray:
    """``configs`` (best first) as valid index genomes of this shape, moved with the fewest
    changes (module doc); duplicates dropped, the order kept."""
    if not configs:
        return np.zeros((0, problem.n_genes), dtype=np.int64)
    base = model.baseline_values()
    genomes = np.array([model.nearest_indices({**base, **dict(c)}) for c in configs],
                       dtype=np.int64)
    bad = np.asarray(construct.violated(problem.feasible, genomes).any(axis=1)).tolist()
    out: list[np.ndarray] = []
    rng = np.random.default_rng([seed, zlib.crc32(shape_key(model.shape).encode()), 1])
    for genome, broken in zip(genomes, bad, strict=True):
        if not broken:
            out.append(genome[None, :])
            continue
        fixes = one_gene_fixes(problem, genome, FIXES_PER_SEED)
        if len(fixes):
            out.append(fixes)
            continue
        rows, ok = construct.settle(problem.feasible, problem.sizes, genome[None, :],
                                    np.zeros((1, problem.n_genes), dtype=bool))
        if not ok[0]:
            rows, ok = construct.repair(problem.feasible, problem.sizes, genome[None, :], rng)
        if ok[0]:
            out.append(rows[:1])
    if not out:
        return np.zeros((0, problem.n_genes), dtype=np.int64)
    kept = np.concatenate(out).astype(np.int64)
    return np.asarray(kept[~construct.duplicated(kept)], dtype=np.int64)
