"""Iterated local search: several walkers descend inside the valid set, kicked out of local
optima, restarted from fresh samples when kicks stop paying.

Why: on the model's tiling spaces the optimum sits in a narrow basin that needs several genes
to change together (baseK doubled with A's K panel resident in L1, baseN halved for L0B, the L1
double buffer dropped). A plain GA's population converges on the first good basin it finds;
descents from many starts, with moves that follow the constraints
(:mod:`ascend_tune.search.moves`), reach it far more often for the same budget
(``benchmarks/search_vs_peers.py``). The memetic ``ga`` is built on the same descent and kick
(:mod:`ascend_tune.search.descent`); ``ils`` stays as the simpler strategy.

Each descent:

1. starts from the best of ``pool`` configurations sampled inside the valid set (the first
   walker from the baseline when there is one);
2. descends by randomised first improvement through tiers of moves
   (:func:`~ascend_tune.search.descent.descend`, which the memetic ``ga`` shares) to a local
   optimum;
3. at a local optimum it is kicked (``kick_genes`` genes shifted a step or two, the rest
   repaired) and descends again; the kick is kept only if it led somewhere better;
4. after ``kicks`` kicks in a row that did not pay, it restarts from a fresh sample.

Everything is drawn from the search's generator: the same seed gives the same result.
"""

from __future__ import annotations

import numpy as np

from ascend_tune.search.descent import TierMoves, descend, kick
from ascend_tune.search.problem import Problem


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
        if first:  # the baseline and the seeds (problem.first_pool) the first time
            fresh = problem.first_pool(fresh)
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
        return kick(problem, anchor, rng, self.kick_genes)
