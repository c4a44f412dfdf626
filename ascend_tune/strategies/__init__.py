"""Search strategies behind one interface, in an explicit registry.

A strategy sees only a :class:`~ascend_tune.strategies.base.Problem`: the size of each gene's
domain, the baseline genome, and the vectorised objective (index genomes in, latencies out,
``inf`` where a constraint rules the candidate out).
"""

from __future__ import annotations

from ascend_tune.strategies.base import Problem, SearchResult, Strategy
from ascend_tune.strategies.exhaustive import Exhaustive
from ascend_tune.strategies.genetic import Genetic
from ascend_tune.strategies.random_search import RandomSearch

STRATEGIES: dict[str, type[Strategy]] = {
    "ga": Genetic,
    "exhaustive": Exhaustive,
    "random": RandomSearch,
}

# Below this many configurations exhaustive search is exact and fast; above, the GA.
EXHAUSTIVE_DEFAULT_LIMIT = 200_000


def default_strategy(space_size: int) -> str:
    return "exhaustive" if space_size <= EXHAUSTIVE_DEFAULT_LIMIT else "ga"


__all__ = ["STRATEGIES", "Problem", "SearchResult", "Strategy", "default_strategy"]
