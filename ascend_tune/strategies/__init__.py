"""Search strategies behind one interface, in an explicit registry.

A strategy sees only a :class:`~ascend_tune.strategies.base.Problem`: the size of each gene's
domain, the baseline genome, and the vectorised objective (index genomes in, latencies out,
``inf`` where a constraint rules the candidate out).
"""

from __future__ import annotations

from ascend_tune.strategies.base import Problem, SearchResult, Strategy
from ascend_tune.strategies.exhaustive import Exhaustive
from ascend_tune.strategies.genetic import Genetic
from ascend_tune.strategies.local_search import IteratedLocalSearch
from ascend_tune.strategies.random_search import RandomSearch

STRATEGIES: dict[str, type[Strategy]] = {
    "ga": Genetic,
    "ils": IteratedLocalSearch,
    "exhaustive": Exhaustive,
    "random": RandomSearch,
}

# `auto` scores the whole valid set (exact) when it holds at most this many configurations
# (about 0.05 s of model time), else runs iterated local search (`ils`, which reaches the optimum
# far more often than the GA for the same budget: benchmarks/search_vs_peers.py). The raw
# product size does not matter: a
# space of 10^8 configurations can have a few hundred valid ones.
EXHAUSTIVE_VALID_LIMIT = 20_000
# The valid set is counted by the pruned enumeration, given up past this many prefixes at one
# step (then the set is certainly larger than the limit): a few milliseconds either way.
COUNT_PREFIX_CAP = 100_000


def default_strategy(valid_count: int | None) -> str:
    """The strategy ``auto`` runs, from the size of the valid set (None: known to be large)."""
    if valid_count is not None and valid_count <= EXHAUSTIVE_VALID_LIMIT:
        return "exhaustive"
    return "ils"


__all__ = ["COUNT_PREFIX_CAP", "EXHAUSTIVE_VALID_LIMIT", "STRATEGIES", "Problem", "SearchResult",
           "Strategy", "default_strategy"]
