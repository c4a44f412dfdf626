"""Local moves inside the valid set, one genome at a time, and a steepest-descent polish.

The moves follow the structure of tiling spaces (the descent of :mod:`.descent`, which both
``ga`` and ``ils`` use, walks them in tiers):

* :func:`local_moves`: mirrored genes swapped (baseM/baseN, mDim/nDim: the mirror image of a
  good tiling is often the better one), then each gene to one of its nearest values the other
  genes allow;
* :func:`coupled_moves`: two genes one check reads together moved a step or two each (a base
  size against its step);
* :func:`ratio_moves`: two genes one check reads together traded so their product stays (a core
  split moved from nDim to bDim);
* :func:`shift_moves`: a gene moved where the others forbid it, the others repaired with the
  fewest changes (:func:`~ascend_tune.search.construct.shift`: baseK doubled while baseN
  halves to keep L0B);
* :func:`trade_moves`: ratio moves between two genes any check reads together, the whole
  buffer budgets included, the others repaired (baseN up a step while B's L1 panel depth
  stepKb halves, L0C's double buffer dropped and nDim following);
* :func:`tie_moves`: two one-gene moves that each leave the latency exactly as it is, made
  together (L0A's double buffer pays only with L0B's: the slower stage hides either alone).

Every generator returns candidate genomes that pass every check.
"""

from __future__ import annotations

import functools

import numpy as np

from ascend_tune.search import construct
from ascend_tune.search.construct import duplicated
from ascend_tune.search.problem import Problem


def polish(problem: Problem, rng: np.random.Generator, pairs: bool = True) -> None:
    """Steepest descent from the best genome over local moves until none improves or the
    budget ends: cheap, and it closes the last few percent. When no one-gene or mirror move
    improves, two-gene moves on genes a check reads together (a core split traded between
    mDim and bDim, a base size against its step) get one try."""
    while problem.left > 0 and problem.best_genome is not None:
        moves = local_moves(problem, problem.best_genome, rng)
        moves = moves[~problem.seen(moves)]
        before = problem.best_latency
        if len(moves):
            problem.evaluate(moves)
        if problem.best_latency < before:
            continue
        if not pairs:
            return
        improved = False
        for tier in (coupled_moves, ratio_moves, shift_moves):
            moves = tier(problem, problem.best_genome)
            moves = moves[~problem.seen(moves)]
            if len(moves):
                problem.evaluate(moves)
            if problem.best_latency < before:
                improved = True
                break
        if not improved:
            return


def check_pairs(feasible: construct.Feasible, max_reads: int = 4) -> list[tuple[int, int]]:
    """Ordered pairs of genes some check reads together, from the checks that read at most
    ``max_reads`` genes (the couplings, not the whole-buffer budgets), sorted. Found once per
    check set: a descent asks at every step."""
    reads = np.asarray(feasible.reads, dtype=bool)
    return _check_pairs(reads.tobytes(), reads.shape, max_reads)


@functools.lru_cache(maxsize=64)
def _check_pairs(reads_bytes: bytes, shape: tuple[int, ...],
                 max_reads: int) -> list[tuple[int, int]]:
    pairs: set[tuple[int, int]] = set()
    for row in np.frombuffer(reads_bytes, dtype=bool).reshape(shape):
        genes = np.flatnonzero(row)
        if 2 <= genes.size <= max_reads:
            pairs.update((int(a), int(b)) for a in genes for b in genes if a != b)
    return sorted(pairs)


_STEPS = (-2, -1, 1, 2)


def coupled_moves(problem: Problem, genome: np.ndarray, max_reads: int = 4) -> np.ndarray:
    """Both genes of every pair some check reads together (checks reading at most
    ``max_reads`` genes) moved one or two domain steps each, kept where every check passes."""
    feasible, sizes = problem.feasible, problem.sizes
    g, size = genome.tolist(), sizes.tolist()
    changes = [(a, g[a] + da, b, g[b] + db)
               for a, b in check_pairs(feasible, max_reads) if a < b
               for da in _STEPS if 0 <= g[a] + da < size[a]
               for db in _STEPS if 0 <= g[b] + db < size[b]]
    return _kept(feasible, genome, changes)


def ratio_moves(problem: Problem, genome: np.ndarray, reach: int = 3,
                max_reads: int = 4) -> np.ndarray:
    """Trades between two genes some check reads together that keep their product: a core
    split moved from nDim to bDim (nDim 4 -> 2, bDim 8 -> 16), a base tile traded against its
    K depth. Each gene moves up to ``reach`` domain steps; its partner takes the domain value
    nearest (in ratio) to the product over it, kept where every check passes."""
    if problem.grids is None:
        return np.zeros((0, problem.sizes.size), dtype=np.int64)
    return _kept(problem.feasible, genome, _ratio_changes(problem, genome, reach, max_reads))


def _ratio_changes(problem: Problem, genome: np.ndarray, reach: int,
                   max_reads: int) -> list[tuple[int, int, int, int]]:
    """(gene a, new value index, gene b, new value index) of every product-keeping trade
    between two genes a check reading at most ``max_reads`` genes reads together."""
    grids = problem.grids
    assert grids is not None
    g = genome.tolist()
    changes = []
    for a, b in check_pairs(problem.feasible, max_reads):
        key = ("ratio", a, b, g[a], g[b], reach)
        trades = problem.scratch.get(key)
        if trades is None:
            trades = problem.scratch[key] = _trades(grids[a], grids[b], g[a], g[b], reach)
        changes += [(a, na, b, nb) for na, nb in trades]
    return changes


def _trades(ga: np.ndarray, gb: np.ndarray, ia: int, ib: int,
            reach: int) -> list[tuple[int, int]]:
    """(new a, new b) index pairs whose values keep ``ga[ia] * gb[ib]`` nearest, b moved."""
    if ga.size < 2 or gb.size < 2 or ga.min() <= 0 or gb.min() <= 0:
        return []
    product = float(ga[ia]) * float(gb[ib])
    new_a = np.arange(max(ia - reach, 0), min(ia + reach + 1, ga.size))
    new_a = new_a[new_a != ia]
    want = np.log(product / ga[new_a].astype(np.float64))
    new_b = np.argmin(np.abs(np.log(gb.astype(np.float64))[None, :] - want[:, None]), axis=1)
    return [(na, nb) for na, nb in zip(new_a.tolist(), new_b.tolist(), strict=True)
            if nb != ib]


def _kept(feasible: construct.Feasible, genome: np.ndarray,
          changes: list[tuple[int, int, int, int]]) -> np.ndarray:
    """``genome`` with each change (gene a to value index, gene b to value index) applied, in
    order, duplicates and rows failing a check dropped."""
    if not changes:
        return np.zeros((0, genome.size), dtype=np.int64)
    out = _applied(genome, changes)[0]
    out = out[~duplicated(out)]
    return np.asarray(out[~construct.violated(feasible, out).any(axis=1)], dtype=np.int64)


def _applied(genome: np.ndarray, changes: list[tuple[int, int, int, int]]
             ) -> tuple[np.ndarray, np.ndarray]:
    """One row per change: ``genome`` with it applied; and which genes each row changed."""
    a, va, b, vb = np.array(changes, dtype=np.int64).T
    rows = np.repeat(genome[None, :], len(changes), axis=0)
    index = np.arange(len(changes))
    rows[index, a] = va
    rows[index, b] = vb
    moved = np.zeros(rows.shape, dtype=bool)
    moved[index, a] = True
    moved[index, b] = True
    return rows, moved


def trade_moves(problem: Problem, genome: np.ndarray, reach: int = 2) -> np.ndarray:
    """Two genes any check reads together (the buffer budgets too, which read many) traded so
    their product stays, both pinned, the other genes repaired with the fewest changes
    (:func:`construct.settle`). The move out of a local optimum where a tight budget blocks
    each gene alone and a shift's repair takes the cheapest way back: on Matmul
    1024x576x6144 baseN 128 -> 192 alone is repaired by halving baseM (0.68 of the optimum),
    while baseN 128 -> 192 against stepKb 8 -> 4 (B's L1 panel kept) is repaired by dropping
    L0C's double buffer and nDim 5 -> 3: the optimum, from a local optimum at 0.969 that
    attracts a third of all descents."""
    sizes = problem.sizes
    if problem.grids is None:
        return np.zeros((0, sizes.size), dtype=np.int64)
    changes = _ratio_changes(problem, genome, reach, sizes.size)
    if not changes:
        return np.zeros((0, sizes.size), dtype=np.int64)
    rows, pinned = _applied(genome, changes)
    first = ~duplicated(rows)
    rows, ok = construct.settle(problem.feasible, sizes, rows[first], pinned[first])
    out = rows[ok]
    out = out[(out != genome[None, :]).any(axis=1)]
    return np.asarray(out[~duplicated(out)], dtype=np.int64)


def shift_moves(problem: Problem, genome: np.ndarray, reach: int = 2) -> np.ndarray:
    """Every gene moved up to ``reach`` domain steps each way, the other genes repaired with
    the fewest changes where the move breaks a check (:func:`construct.shift`)."""
    sizes = problem.sizes
    genes = np.repeat(np.arange(sizes.size), 2 * reach)
    steps = np.tile(np.r_[-reach:0, 1:reach + 1], sizes.size)
    values = genome[genes] + steps
    inside = (values >= 0) & (values < sizes[genes])
    genes, values = genes[inside], values[inside]
    rows, ok = construct.shift(problem.feasible, sizes, np.repeat(genome[None, :], genes.size,
                                                                  axis=0), genes, values)
    out = rows[ok]
    return np.asarray(out[~duplicated(out)], dtype=np.int64)


def local_moves(problem: Problem, genome: np.ndarray, rng: np.random.Generator,
                reach: int = 2) -> np.ndarray:
    """Mirror swaps (:func:`mirror_moves`), then one-gene moves (:func:`one_gene_moves`)."""
    out = np.concatenate([mirror_moves(problem, genome), one_gene_moves(problem, genome, reach)])
    return np.asarray(out[~duplicated(out)], dtype=np.int64)


def one_gene_moves(problem: Problem, genome: np.ndarray, reach: int = 2) -> np.ndarray:
    """For each gene, the ``reach`` nearest values on each side that are feasible given the
    other genes."""
    out = construct.neighbours(problem.feasible, problem.sizes, genome, reach)
    return np.asarray(out[(out != genome[None, :]).any(axis=1)], dtype=np.int64)


def tie_moves(problem: Problem, genome: np.ndarray,
              ones: np.ndarray | None = None) -> np.ndarray:
    """Pairs of one-gene moves (``ones``: :func:`one_gene_moves` of ``genome``) that each
    leave the latency exactly as it is, made together, kept where every check passes. Where
    the latency is the slowest of several stages, a gene that speeds up one stage alone
    changes nothing, and the descent, which takes only improvements, never makes it: on
    int8 Matmul 512x8192x2048 a sixth of all descents ended at 0.806 of the optimum, where
    L0A's double buffer alone and L0B's alone each tie and both together give 0.988 (a step
    from the optimum). The one-gene moves are scored first (the descent reaching this tier
    has scored them: from the cache, free)."""
    empty = np.zeros((0, genome.size), dtype=np.int64)
    if ones is None:
        ones = one_gene_moves(problem, genome)
    if len(ones) < 2:
        return empty
    lat = problem.evaluate(np.concatenate([genome[None, :], ones]))
    here = lat[0]
    if not np.isfinite(here):
        return empty
    tied = ones[np.abs(lat[1:] - here) <= 1e-12 * here]
    if len(tied) < 2:
        return empty
    gene = np.argmax(tied != genome[None, :], axis=1)
    i, j = np.triu_indices(len(tied), 1)
    apart = gene[i] != gene[j]
    i, j = i[apart], j[apart]
    rows = tied[i]
    rows[np.arange(i.size), gene[j]] = tied[j, gene[j]]
    rows = rows[~duplicated(rows)]
    return np.asarray(rows[~construct.violated(problem.feasible, rows).any(axis=1)],
                      dtype=np.int64)


def mirror_moves(problem: Problem, genome: np.ndarray) -> np.ndarray:
    """Mirror swaps (each pair alone, and all pairs together), the other genes repaired with
    the fewest changes where a swap breaks a check. The whole mirror image also comes with
    each unpaired two-valued gene flipped: a walk order (iterateOrder: M inner or N inner)
    is the mirror of itself only when flipped, and its name says nothing of M or N."""
    feasible, sizes = problem.feasible, problem.sizes
    plan = problem.scratch.get("mirror")
    if plan is None:
        plan = problem.scratch["mirror"] = _mirror_plan(list(feasible.pairs), sizes)
    source, pinned, flip_rows, flip_genes = plan
    if not len(source):
        return np.zeros((0, sizes.size), dtype=np.int64)
    mirrored = genome[source]
    mirrored[flip_rows, flip_genes] = 1 - genome[flip_genes]
    mirrored, ok = construct.settle(feasible, sizes, mirrored, pinned)
    out = mirrored[ok]
    return np.asarray(out[~duplicated(out) & (out != genome[None, :]).any(axis=1)],
                      dtype=np.int64)


def _mirror_plan(pairs: list[tuple[int, int]], sizes: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The mirror swaps of any genome: row i takes gene ``source[i, g]`` as its gene g, then
    flips the two-valued genes ``flip_genes`` at ``flip_rows``; ``pinned`` marks the genes a
    swap or flip set (settle keeps them). Each pair alone, all pairs together, and all pairs
    with each unpaired two-valued gene flipped."""
    swaps: list[tuple[list[tuple[int, int]], int | None]] = [([p], None) for p in pairs]
    if len(pairs) > 1:
        swaps.append((pairs, None))
    if pairs:
        paired = {g for p in pairs for g in p}
        swaps += [(pairs, int(g)) for g in np.flatnonzero(sizes == 2) if int(g) not in paired]
    source = np.repeat(np.arange(sizes.size)[None, :], len(swaps), axis=0)
    pinned = np.zeros(source.shape, dtype=bool)
    flip_rows, flip_genes = [], []
    for i, (group, flip) in enumerate(swaps):
        for a, b in group:
            source[i, a], source[i, b] = b, a
            pinned[i, [a, b]] = True
        if flip is not None:
            flip_rows.append(i)
            flip_genes.append(flip)
            pinned[i, flip] = True
    return (source, pinned, np.array(flip_rows, dtype=np.int64),
            np.array(flip_genes, dtype=np.int64))
