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

# `auto` chooses by cost: it scores the whole valid set (exact) when that is estimated to
# take no longer than the heuristic at the budget asked, else runs the memetic GA (`ga`: on
# the suite, the held-out and the hard suite, seeds 5-14, budget 2000, ahead of `ils` in mean
# fraction of the optimum and in runs within 1.01x; at seeds 0-4 ahead on the first two and
# level on the hard one, every run within 1.01x, ils's mean 0.0004 higher: docs/benchmarks.md,
# benchmarks/search_quality.py). Measured
# (benchmarks/search_speed.py): the exact search costs about 1.2 us per valid configuration
# (below SCREEN_AFTER; past it the lower bounds screen most rows, ~0.5 us), the GA about
# 160 us per evaluation (0.3-0.4 s at the default budget of 2000), so the exact search wins
# up to ~125 valid configurations per unit of budget: 250 000 at the default budget, as
# before. The raw product size does not matter: a space of 10^8 configurations can have a
# few hundred valid ones.
EXACT_SECONDS_PER_VALID = 1.2e-6
HEURISTIC_SECONDS_PER_EVALUATION = 1.5e-4
# The valid set auto counts is held in memory (16 genes x 8 bytes a configuration): at most
# this many, whatever the budget.
EXHAUSTIVE_VALID_CAP = 1_000_000
EXHAUSTIVE_VALID_LIMIT = 250_000  # the limit at the default budget (DEFAULT_BUDGET 2000)
# The valid set is counted by the pruned enumeration only where random configurations
# suggest it may be within the limit (Enumerator.estimated_valid at most this factor times
# it: the estimate is rough, and 0 where valid configurations are rare), and the count gives
# up past this many candidate prefixes at one step (then the set is certainly larger than
# the limit): a few tens of milliseconds at worst, nothing where the estimate is large.
COUNT_ESTIMATE_FACTOR = 2
COUNT_PREFIX_FACTOR = 4


def exact_limit(budget: int) -> int:
    """The most valid configurations ``auto`` scores exactly at ``budget``: where the exact
    search is estimated to cost no more than the heuristic."""
    by_cost = int(budget * HEURISTIC_SECONDS_PER_EVALUATION / EXACT_SECONDS_PER_VALID)
    return min(by_cost, EXHAUSTIVE_VALID_CAP)


def default_strategy(valid_count: int | None, budget: int = 2000) -> str:
    """The strategy ``auto`` runs, from the size of the valid set (None: known to be large)
    and the budget."""
    if valid_count is not None and valid_count <= exact_limit(budget):
        return "exhaustive"
    return "ga"


__all__ = ["COUNT_ESTIMATE_FACTOR", "COUNT_PREFIX_FACTOR", "EXHAUSTIVE_VALID_LIMIT", "STRATEGIES",
           "Problem", "SearchResult", "Strategy", "default_strategy", "exact_limit"]
