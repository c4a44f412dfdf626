"""The budgeted descent both ``ils`` and the memetic ``ga`` improve configurations with.

Randomised first improvement through tiers of moves (:mod:`ascend_tune.search.moves`): the
moves of the cheapest tier (one-gene and mirror moves), shuffled, are scored ``chunk`` at a
time and the descent takes the best of a chunk as soon as it improves; when a tier has nothing
better the next tier is tried (coupled moves, ratio moves, then shifted moves with repair);
with nothing better in any tier it is at a local optimum. That is ``ils``'s descent
(:data:`DEFAULT_TIERS`); the memetic ``ga`` walks one-gene moves, then mirror moves, as tiers of
their own and leaves out the coupled moves (its ``DESCENT_TIERS``, measured there). Every move is
built inside the valid set, and every configuration it scores counts against the problem's
budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ascend_tune.search import construct
from ascend_tune.search.moves import (
    coupled_moves,
    local_moves,
    mirror_moves,
    one_gene_moves,
    ratio_moves,
    shift_moves,
    tie_moves,
    trade_moves,
)
from ascend_tune.search.problem import Problem

Tier = Callable[[Problem, np.ndarray, np.random.Generator], np.ndarray]

_NAMED_TIERS: dict[str, Tier] = {
    "local": local_moves,
    "coupled": lambda p, g, rng: coupled_moves(p, g),
    "ratio": lambda p, g, rng: ratio_moves(p, g),
    "shifted": lambda p, g, rng: shift_moves(p, g),
    # The two halves of local_moves as tiers of their own: one-gene moves, then mirror moves.
    "one_gene": lambda p, g, rng: one_gene_moves(p, g),
    "mirror": lambda p, g, rng: mirror_moves(p, g),
    # Trades between any two genes a check reads (the buffer budgets too), repaired: the
    # memetic ga scores them once at a converged parent, not as a tier of every descent.
    "trade": lambda p, g, rng: trade_moves(p, g),
    # Two one-gene moves that each tie, made together (TierMoves hands them the one-gene
    # moves it built): the memetic ga's tier after the one-gene moves.
    "ties": lambda p, g, rng: tie_moves(p, g),
}
TIER_NAMES = tuple(_NAMED_TIERS)
TIERS: tuple[Tier, ...] = tuple(_NAMED_TIERS.values())


def tiers_named(*names: str) -> tuple[int, ...]:
    """The indices into :data:`TIERS` of the tiers called ``names``, in that order."""
    return tuple(TIER_NAMES.index(name) for name in names)


(TRADE_TIER, _ONE_GENE, _TIES) = tiers_named("trade", "one_gene", "ties")
# The tiers a descent walks unless told otherwise (ils's).
DEFAULT_TIERS = tiers_named("local", "coupled", "ratio", "shifted")


class TierMoves:
    """Each tier's moves from a genome, built once: searches keep coming back to the same
    local optima (on Matmul 1x4096x4096, 436 tier builds of ``ils`` were of 207 genomes).
    The tiers are deterministic functions of the genome, so a repeat gets the same array."""

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
            moves = self._built[key] = (
                tie_moves(self.problem, genome, self(_ONE_GENE, genome, rng)) if tier == _TIES
                else TIERS[tier](self.problem, genome, rng))
        return moves


def descend(problem: Problem, start: np.ndarray, latency: float, rng: np.random.Generator,
            chunk: int, moves_of: TierMoves | None = None,
            tiers: Sequence[int] | None = None) -> tuple[np.ndarray, float]:
    """Randomised first-improvement descent from ``start`` through the move tiers (``tiers``:
    those of :data:`TIERS` to use, in order; :data:`DEFAULT_TIERS`, ils's, by default);
    returns the local optimum reached (or where the budget ran out) and its latency."""
    moves_of = moves_of or TierMoves(problem)
    cur, cur_lat = start.copy(), latency
    tiers = DEFAULT_TIERS if tiers is None else tiers
    while problem.left > 0:
        moved = False
        for tier in tiers:
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


def kick(problem: Problem, anchor: np.ndarray, rng: np.random.Generator,
         genes: int) -> np.ndarray | None:
    """``genes`` random genes shifted a step or two, the rest repaired with the fewest changes
    (:func:`~ascend_tune.search.construct.shift`); None when a repair fails. The jump out of a
    local optimum that one descent step cannot make."""
    row = anchor[None, :].copy()
    for _ in range(genes):
        gene = rng.integers(0, problem.n_genes, 1)
        value = np.clip(row[0, gene] + rng.choice(np.array([-2, -1, 1, 2])), 0,
                        problem.sizes[gene] - 1)
        row, ok = construct.shift(problem.feasible, problem.sizes, row, gene, value)
        if not ok[0]:
            return None
    return np.asarray(row[0], dtype=np.int64)
