"""Uniform random sampling: the baseline every smarter strategy must beat."""

from __future__ import annotations

import numpy as np

from ascend_tune.strategies.base import Problem


class RandomSearch:
    name = "random"

    def __init__(self, batch: int = 256, max_proposals_factor: int = 200) -> None:
        self.batch = int(batch)
        self.max_proposals_factor = int(max_proposals_factor)

    def search(self, problem: Problem, budget: int, rng: np.random.Generator) -> None:
        proposals = 0
        cap = budget * self.max_proposals_factor
        while problem.evaluations < budget and proposals < cap:
            if problem.exhausted:
                return
            want = min(self.batch, budget - problem.evaluations)
            genomes = problem.random_genomes(rng, max(want, 1))
            proposals += len(genomes)
            problem.evaluate(genomes)
