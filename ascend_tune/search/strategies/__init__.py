"""Search strategies behind one interface, in an explicit registry.

A strategy sees only a :class:`~ascend_tune.search.problem.Problem`: the size of each gene's
domain, the baseline genome, and the vectorised objective (index genomes in, latencies out,
``inf`` where a constraint rules the candidate out).
"""

from __future__ import annotations

from ascend_tune.search.problem import Problem, SearchResult, Strategy
from ascend_tune.search.strategies.exhaustive import Exhaustive
from ascend_tune.search.strategies.genetic import Genetic
from ascend_tune.search.strategies.local_search import IteratedLocalSearch
from ascend_tune.search.strategies.random_search import RandomSearch

STRATEGIES: dict[str, type[Strategy]] = {
    "ga": Genetic,
    "ils": IteratedLocalSearch,
    "exhaustive": Exhaustive,
    "random": RandomSearch,
}

# `auto` scores the whole valid set (exact) when it holds at most this many configurations,
# else runs iterated local search (`ils`, which reaches the optimum far more often than the GA
# for the same budget: benchmarks/search_vs_peers.py). At the limit the exact search takes
# about as long as `ils` at the default budget (0.2-0.3 s on a matmul shape with 200 k valid
# configurations against 0.3-0.7 s: benchmarks/search_speed.py --only auto). The raw product
# size does not matter: a space of 10^8 configurations can have a few hundred valid ones.
EXHAUSTIVE_VALID_LIMIT = 250_000
# The valid set is counted by the pruned enumeration only where random configurations
# suggest it may be within the limit (Enumerator.estimated_valid at most this factor times
# it: the estimate is rough, and 0 where valid configurations are rare), and the count gives
# up past this many candidate prefixes at one step (then the set is certainly larger than
# the limit): a few tens of milliseconds at worst, nothing where the estimate is large.
COUNT_ESTIMATE_FACTOR = 2
COUNT_PREFIX_CAP = 4 * EXHAUSTIVE_VALID_LIMIT


def default_strategy(valid_count: int | None) -> str:
    """The strategy ``auto`` runs, from the size of the valid set (None: known to be large)."""
    if valid_count is not None and valid_count <= EXHAUSTIVE_VALID_LIMIT:
        return "exhaustive"
    return "ils"


__all__ = ["COUNT_ESTIMATE_FACTOR", "COUNT_PREFIX_CAP", "EXHAUSTIVE_VALID_LIMIT", "STRATEGIES",
           "Problem", "SearchResult", "Strategy", "default_strategy"]
