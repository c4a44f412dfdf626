"""Proposals built inside the valid set, from the structure of the constraints.

A :class:`Feasible` says which genes each check reads, an assignment order in which checks
decide early, and evaluates chosen checks on rows. :func:`complete` assigns the free genes of
each row one at a time in that order, choosing among the values that keep every check already
decidable (all the genes it reads assigned or pinned) satisfied: sampling (every gene free),
mutation (one gene free, the rest pinned) and crossover repair (the genes read by the checks a
child violates free) all produce configurations that pass every check, unless a walk reaches a
gene with no feasible value (a dead end, reported to the caller).

Cost: one walk evaluates each check on at most (rows x domain size) candidate rows per gene it
reads, a bounded constant per proposal; the model is never involved.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Protocol

import numpy as np


class Feasible(Protocol):
    reads: np.ndarray  # (checks, genes) bool: check i reads gene j (directly or derived)
    order: Sequence[int]  # gene indices, the assignment order
    pairs: Sequence[tuple[int, int]]  # genes with mirrored roles (baseM/baseN, mDim/nDim)

    def passes(self, genomes: np.ndarray, which: Sequence[int]) -> np.ndarray:
        """(rows, len(which)) booleans for the chosen checks on index genomes."""


class Unconstrained:
    """No known constraint structure: every value is feasible as far as the walk knows (the
    objective still rejects invalid configurations)."""

    def __init__(self, n_genes: int) -> None:
        self.reads = np.zeros((0, n_genes), dtype=bool)
        self.order: Sequence[int] = list(range(n_genes))
        self.pairs: Sequence[tuple[int, int]] = []

    def passes(self, genomes: np.ndarray, which: Sequence[int]) -> np.ndarray:
        return np.ones((genomes.shape[0], len(which)), dtype=bool)


def duplicated(rows: np.ndarray) -> np.ndarray:
    """True for every row equal to an earlier row (a set of tuples: the rows are few, and
    np.unique's sort costs more than the rows at this size)."""
    seen: set[tuple[int, ...]] = set()
    out = np.zeros(rows.shape[0], dtype=bool)
    for i, row in enumerate(map(tuple, rows.tolist())):
        if row in seen:
            out[i] = True
        seen.add(row)
    return out


def violated(feasible: Feasible, genomes: np.ndarray) -> np.ndarray:
    """(rows, checks) booleans: which checks each full row fails."""
    n_checks = feasible.reads.shape[0]
    if not n_checks or not genomes.shape[0]:
        return np.zeros((genomes.shape[0], n_checks), dtype=bool)
    return ~feasible.passes(genomes, list(range(n_checks)))


def complete(feasible: Feasible, sizes: np.ndarray, genomes: np.ndarray, free: np.ndarray,
             rng: np.random.Generator, near: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Assign the ``free`` genes of every row (in the feasibility order) among feasible values.

    ``near``: prefer values close (in domain index) to the row's current value and avoid
    keeping it (a local mutation); otherwise uniform among the feasible values. Returns the
    rows and a mask of rows that completed (False: a free gene had no feasible value)."""
    rows = np.array(genomes, dtype=np.int64, copy=True)
    known = ~free
    alive = np.ones(rows.shape[0], dtype=bool)
    reads = feasible.reads
    for j in feasible.order:
        r = np.flatnonzero(free[:, j] & alive)
        if r.size == 0:
            continue
        size = int(sizes[j])
        checks = np.flatnonzero(reads[:, j])
        ok = np.ones((r.size, size), dtype=bool)
        if checks.size:
            kn = known[r].copy()
            kn[:, j] = True
            # A check is decidable for a row once every gene it reads is known there. Rows
            # that know the same genes (every row, when sampling) decide the same checks.
            if (kn == kn[0]).all():
                decide = np.broadcast_to(~(reads[checks] & ~kn[0]).any(axis=1),
                                         (r.size, checks.size))
            else:
                decide = ~(reads[checks][None, :, :] & ~kn[:, None, :]).any(axis=2)
            use = np.flatnonzero(decide.any(axis=0))
            if use.size:
                busy = np.flatnonzero(decide[:, use].any(axis=1))
                cand = np.repeat(rows[r[busy]], size, axis=0)
                cand[:, j] = np.tile(np.arange(size), busy.size)
                res = feasible.passes(cand, checks[use].tolist()).reshape(busy.size, size,
                                                                         use.size)
                good = (res | ~decide[busy][:, None, :][:, :, use]).all(axis=2)
                ok[busy] = good
        choice, found = _choose(ok, rows[r, j], rng, near)
        rows[r, j] = np.where(found, choice, rows[r, j])
        known[r, j] = True
        alive[r[~found]] = False
    return rows, alive


def _choose(ok: np.ndarray, current: np.ndarray, rng: np.random.Generator,
            near: bool) -> tuple[np.ndarray, np.ndarray]:
    """One feasible column per row: uniform, or weighted towards ``current`` (not itself)."""
    n, size = ok.shape
    u = rng.random((n, size))
    if near:
        dist = np.abs(np.arange(size)[None, :] - current[:, None]).astype(np.float64)
        # Weights 1/d^2 for other values; the current value only when nothing else is feasible.
        weight = np.where(dist > 0, 1.0 / np.maximum(dist, 1.0) ** 2, 1e-9)
        key = np.log(np.maximum(u, 1e-300)) / weight  # largest key ~ weighted draw
    else:
        key = u
    key = np.where(ok, key, -np.inf)
    pick = np.argmax(key, axis=1)
    return pick, np.asarray(ok.any(axis=1), dtype=bool)


def sample(feasible: Feasible, sizes: np.ndarray, n: int, rng: np.random.Generator,
           max_walks: int) -> tuple[np.ndarray, int]:
    """Up to ``n`` distinct configurations built inside the valid set, and the walks it took.

    A walk can dead-end (a gene whose every value fails a check decided by it, because of
    earlier choices); dead ends are retried with fresh walks, ``max_walks`` in all."""
    found = np.zeros((0, sizes.size), dtype=np.int64)
    walks = 0
    while len(found) < n and walks < max_walks:
        batch = int(min(max(4 * (n - len(found)), 64), max_walks - walks))
        genomes = np.zeros((batch, sizes.size), dtype=np.int64)
        rows, ok = complete(feasible, sizes, genomes, np.ones_like(genomes, dtype=bool), rng)
        walks += batch
        found = np.concatenate([found, rows[ok]])
        found = found[~duplicated(found)]
    return found[:n], walks


def mutate(feasible: Feasible, sizes: np.ndarray, genomes: np.ndarray, genes: np.ndarray,
           rng: np.random.Generator, near: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Move gene ``genes[i]`` of row i to a nearby value feasible given the row's other genes
    (every value of the gene checked at once: one evaluation of the checks for the batch).
    ``ok`` is False where no other value is feasible."""
    genomes = np.asarray(genomes, dtype=np.int64)
    n = genomes.shape[0]
    if n == 0:
        return genomes.copy(), np.zeros(0, dtype=bool)
    width = int(sizes.max())
    counts = sizes[genes]
    owner = np.repeat(np.arange(n), counts)
    value = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    cand = genomes[owner].copy()
    cand[np.arange(owner.size), genes[owner]] = value
    good = ~violated(feasible, cand).any(axis=1)
    ok = np.zeros((n, width), dtype=bool)
    ok[owner, value] = good
    current = genomes[np.arange(n), genes]
    pick, found = _choose(ok, current, rng, near=near)
    out = genomes.copy()
    out[np.arange(n), genes] = np.where(found, pick, current)
    return out, found & (pick != current)


def repair(feasible: Feasible, sizes: np.ndarray, genomes: np.ndarray,
           rng: np.random.Generator, pinned: np.ndarray | None = None
           ) -> tuple[np.ndarray, np.ndarray]:
    """Re-sample, inside the valid set, the genes read by the checks each row violates
    (except ``pinned`` ones); rows that pass every check are returned unchanged."""
    bad = violated(feasible, genomes)
    free = (bad.astype(np.int64) @ feasible.reads.astype(np.int64)) > 0
    if pinned is not None:
        free &= ~pinned
    rows, ok = complete(feasible, sizes, genomes, free, rng)
    # A violated check whose genes are all pinned stays violated; so may one whose genes
    # were re-sampled if a later choice broke it: check the changed rows once more.
    again = np.flatnonzero(ok & free.any(axis=1))
    ok[again] &= ~violated(feasible, rows[again]).any(axis=1)
    ok &= ~(bad & ~((free.astype(np.int64) @ feasible.reads.T.astype(np.int64)) > 0)).any(axis=1)
    return rows, ok


def neighbours(feasible: Feasible, sizes: np.ndarray, genome: np.ndarray,
               reach: int) -> np.ndarray:
    """For each gene, the ``reach`` nearest values below and above its current one that are
    feasible with every other gene kept (one-gene moves that stay in the valid set)."""
    genes, value = _one_gene_layout(sizes)
    cand = np.repeat(genome[None, :], genes.size, axis=0)
    cand[np.arange(genes.size), genes] = value
    good: list[bool] = np.logical_not(violated(feasible, cand).any(axis=1)).tolist()
    keep: list[int] = []  # rows of cand, in order (a few dozen: plain Python is cheapest)
    start = 0
    for j, size in enumerate(sizes.tolist()):
        cur = int(genome[j])
        below = [start + v for v in range(cur) if good[start + v]]
        below = below[max(len(below) - reach, 0):]
        above = [start + v for v in range(cur + 1, size) if good[start + v]][:reach]
        keep += below + above
        start += size
    return np.asarray(cand[keep], dtype=np.int64)


def _one_gene_layout(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (gene, value) pair of the space, gene-major: the rows of a one-gene
    neighbourhood."""
    return _layout(tuple(int(s) for s in sizes))


@functools.lru_cache(maxsize=64)
def _layout(sizes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    genes = np.repeat(np.arange(len(sizes)), sizes)
    value = (np.concatenate([np.arange(s) for s in sizes]) if sizes
             else np.zeros(0, dtype=np.int64))
    return genes, value


def shift(feasible: Feasible, sizes: np.ndarray, genomes: np.ndarray, genes: np.ndarray,
          values: np.ndarray, rounds: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Set gene ``genes[i]`` of row i to ``values[i]`` even where the other genes forbid it,
    then repair the row with the smallest changes: each round changes one more gene (read by
    a check the row violates, never a gene already set), to the value that leaves the fewest
    checks violated, nearest to its current value on ties. ``ok`` marks rows valid after at
    most ``rounds`` repairs.

    This is the move one-gene mutations cannot make: baseK doubled where baseN must halve to
    keep L0B, or where L1 must drop its double buffer. Deterministic: no randomness needed."""
    rows = np.array(genomes, dtype=np.int64, copy=True)
    n = rows.shape[0]
    if n == 0:
        return rows, np.zeros(0, dtype=bool)
    rows[np.arange(n), genes] = values
    pinned = np.zeros(rows.shape, dtype=bool)
    pinned[np.arange(n), genes] = True
    return settle(feasible, sizes, rows, pinned, rounds)


_NEVER = np.iinfo(np.int64).max  # the score of a candidate that is no change


def settle(feasible: Feasible, sizes: np.ndarray, genomes: np.ndarray, pinned: np.ndarray,
           rounds: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Repair rows with the smallest changes, never touching ``pinned`` genes: each round
    changes one more gene of a row (read by a check it violates) to the value that leaves the
    fewest checks violated, nearest to its current value on ties. ``ok`` marks rows valid
    after at most ``rounds`` changes."""
    rows = np.array(genomes, dtype=np.int64, copy=True)
    pinned = np.array(pinned, dtype=bool, copy=True)
    n_genes = rows.shape[1]
    reads = feasible.reads.astype(np.int64)
    bad = violated(feasible, rows)
    for _ in range(rounds):
        todo = np.flatnonzero(bad.any(axis=1))
        if todo.size == 0:
            break
        movable = ((bad[todo].astype(np.int64) @ reads) > 0) & ~pinned[todo]
        owner_g = np.nonzero(movable)  # (row in todo, gene)
        if owner_g[0].size == 0:
            break  # the violated checks read only pinned genes
        counts = sizes[owner_g[1]]
        owner = np.repeat(owner_g[0], counts)
        gene = np.repeat(owner_g[1], counts)
        value = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        cand = rows[todo[owner]]
        current = cand[np.arange(owner.size), gene]
        cand[np.arange(owner.size), gene] = value
        cand_bad = violated(feasible, cand)
        left = cand_bad.sum(axis=1)
        # Best per row: fewest violations, then the nearest value, then the lowest gene.
        score = (left * 4 * int(sizes.max() + 1) + np.abs(value - current)) * n_genes + gene
        score[value == current] = _NEVER
        order = np.lexsort((score, owner))
        grouped = owner[order]
        starts = np.empty(order.size, dtype=bool)  # each row's first (best) candidate
        starts[0] = True
        np.not_equal(grouped[1:], grouped[:-1], out=starts[1:])
        first = order[starts]
        fixed = first[score[first] != _NEVER]
        target = todo[owner[fixed]]
        rows[target, gene[fixed]] = value[fixed]
        pinned[target, gene[fixed]] = True
        bad[target] = cand_bad[fixed]  # the chosen candidates' checks, already evaluated
    return rows, np.asarray(~bad.any(axis=1), dtype=bool)
