"""Iterated local search: several walkers descend inside the valid set, kicked out of local
optima, restarted from fresh samples when kicks stop paying.

Why this and not only the GA: on the model's tiling spaces the optimum sits in a narrow basin
that needs several genes to change together (baseK doubled with A's K panel resident in L1,
baseN halved for L0B, the L1 double buffer dropped). A population converges on the first good
basin it finds; descents from many starts, with moves that follow the constraints
(:mod:`ascend_tune.search.moves`), reach it far more often for the same budget
(``benchmarks/search_vs_peers.py``).

Each descent:

1. starts from the best of ``pool`` configurations sampled inside the valid set (the first
   walker from the baseline when there is one);
2. descends by randomised first improvement: the moves of the cheapest tier (one-gene and
   mirror moves), shuffled, are scored ``chunk`` at a time and the descent takes the best of
   a chunk as soon as it improves; when a tier has nothing better the next tier is tried
   (coupled moves, ratio moves, then shifted moves with repair); with nothing better in any
   tier it is at a local optimum;
3. at a local optimum it is kicked (``kick_genes`` genes shifted a step or two, the rest
   repaired) and descends again; the kick is kept only if it led somewhere better;
4. after ``kicks`` kicks in a row that did not pay, it restarts from a fresh sample.

Everything is drawn from the search's generator: the same seed gives the same result.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ascend_tune.search import construct
from ascend_tune.search.moves import coupled_moves, local_moves, ratio_moves, shift_moves
from ascend_tune.search.problem import Problem

Tier = Callable[[Problem, np.ndarray, np.random.Generator], np.ndarray]

TIERS: tuple[Tier, ...] = (
    local_moves,
    lambda p, g, rng: coupled_moves(p, g),
    lambda p, g, rng: ratio_moves(p, g),
    lambda p, g, rng: shift_moves(p, g),
)


class IteratedLocalSearch:
    name = "ils"
    uses_budget = True  # held to the budget
    builds_valid = True  # proposals built inside the valid set: give it the constraints

    def __init__(self, chunk: int = 8, pool: int = 8, kicks: int = 4,
                 kick_genes: int = 2) -> None:
        self.chunk = int(chunk)
        self.pool = int(pool)
        self.kicks = int(kicks)
        self.kick_genes = int(kick_genes)

    def search(self, problem: Problem, budget: int, rng: np.random.Generator) -> None:
        del budget  # problem.left says what remains
        self._moves = TierMoves(problem)
        first = True
        while problem.left > 0 and not problem.exhausted:
            before = problem.spent
            start = self._start(problem, rng, first)
            first = False
            if start is not None:
                self._kicked_descents(problem, *start, rng)
            if problem.spent == before:
                return  # nothing new left to look at

    def _start(self, problem: Problem, rng: np.random.Generator,
               first: bool) -> tuple[np.ndarray, float] | None:
        """The best of a fresh sample pool (with the baseline, the first time)."""
        fresh = problem.sample(self.pool, rng)
        if first and problem.baseline is not None:
            fresh = np.concatenate([problem.baseline[None, :].astype(np.int64), fresh])
        if len(fresh) == 0:
            return None
        fit = problem.evaluate(fresh)
        if not np.isfinite(fit).any():
            return None
        j = int(np.argmin(fit))
        return fresh[j], float(fit[j])

    def _kicked_descents(self, problem: Problem, start: np.ndarray, latency: float,
                         rng: np.random.Generator) -> None:
        """Descend, then kick and descend again until ``kicks`` kicks in a row do not pay."""
        anchor, anchor_lat = descend(problem, start, latency, rng, self.chunk, self._moves)
        fails = 0
        while fails < self.kicks and problem.left > 0:
            kicked = self._kick(problem, anchor, rng)
            fit = problem.evaluate(kicked[None, :])[0] if kicked is not None else np.inf
            if kicked is None or not np.isfinite(fit):
                fails += 1
                continue
            genome, lat = descend(problem, kicked, float(fit), rng, self.chunk,
                                   self._moves)
            if lat < anchor_lat:
                anchor, anchor_lat, fails = genome, lat, 0
            else:
                fails += 1

    def _kick(self, problem: Problem, anchor: np.ndarray,
              rng: np.random.Generator) -> np.ndarray | None:
        """``kick_genes`` random genes shifted a step or two, the rest repaired (None when a
        repair fails)."""
        row = anchor[None, :].copy()
        for _ in range(self.kick_genes):
            gene = rng.integers(0, problem.n_genes, 1)
            value = np.clip(row[0, gene] + rng.choice(np.array([-2, -1, 1, 2])), 0,
                            problem.sizes[gene] - 1)
            row, ok = construct.shift(problem.feasible, problem.sizes, row, gene, value)
            if not ok[0]:
                return None
        return np.asarray(row[0], dtype=np.int64)


class TierMoves:
    """Each tier's moves from a genome, built once: kicked descents keep coming back to the
    same local optima (on Matmul 1x4096x4096, 436 tier builds were of 207 genomes). The
    tiers are deterministic functions of the genome, so a repeat gets the same array."""

    def __init__(self, problem: Problem, capacity: int = 4096) -> None:
        self.problem = problem
        self.capacity = capacity
        self._built: dict[tuple[int, bytes], np.ndarray] = {}

    def __call__(self, tier: int, genome: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        key = (tier, genome.tobytes())
        moves = self._built.get(key)
        if moves is None:
            if len(self._built) >= self.capacity:
                self._built.clear()
            moves = self._built[key] = TIERS[tier](self.problem, genome, rng)
        return moves


def descend(problem: Problem, start: np.ndarray, latency: float, rng: np.random.Generator,
            chunk: int, moves_of: TierMoves | None = None) -> tuple[np.ndarray, float]:
    """Randomised first-improvement descent from ``start`` through the move tiers; returns
    the local optimum reached (or where the budget ran out) and its latency."""
    moves_of = moves_of or TierMoves(problem)
    cur, cur_lat = start.copy(), latency
    while problem.left > 0:
        moved = False
        for tier in range(len(TIERS)):
            moves = moves_of(tier, cur, rng)
            if len(moves) == 0:
                continue
            moves = moves[rng.permutation(len(moves))]
            for s in range(0, len(moves), chunk):
                part = moves[s:s + chunk]
                fit = problem.evaluate(part)  # seen moves come from the cache, free
                j = int(np.argmin(fit))
                if fit[j] < cur_lat:
                    cur, cur_lat, moved = part[j].copy(), float(fit[j]), True
                    break
                if problem.left <= 0:
                    return cur, cur_lat
            if moved:
                break
        if not moved:
            break
    return cur, cur_lat
