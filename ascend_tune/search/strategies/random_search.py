"""Uniform random sampling: the baseline every smarter strategy must beat.

It samples the raw product space (not the valid set), so on spaces where few configurations
are valid it spends most of its budget on rejected ones: that is the point of a baseline.
"""

from __future__ import annotations

import numpy as np

from ascend_tune.search.problem import Problem


class RandomSearch:
    name = "random"
    uses_budget = True  # held to the budget
    builds_valid = False  # samples the raw product space, constraints unseen

    def __init__(self, batch: int = 256) -> None:
        self.batch = int(batch)

    def search(self, problem: Problem, budget: int, rng: np.random.Generator) -> None:
        del budget  # problem.left says what remains; every proposal counts
        while problem.left > 0 and not problem.exhausted:
            problem.evaluate(problem.random_genomes(rng, min(self.batch, problem.left)))
