"""Genetic algorithm over index genomes (one gene per parameter, an index into its domain).

Index encoding keeps locality: a nearby index is a neighbouring domain value (x2 or /2 for
power-of-two domains). Settings follow what worked in the tuner literature
(autotuner_landscape.md §5.1): tournament selection, uniform crossover, elitism, a visited
set so no genome is scored twice. Every proposal is built inside the valid set where the
problem knows its constraints (:mod:`ascend_tune.search.construct`): the initial
population is sampled along the feasibility order, a mutation moves one gene to a nearby value
feasible given the others (or, for a share of children, the genes one check reads are
re-sampled together), a crossover child is repaired by re-sampling the genes its violated
checks read. So the budget, which counts every configuration looked at, is spent on valid
configurations.

A run evolves until it stagnates, then polishes the best with local moves (one-gene moves to
the nearest feasible values; mirror swaps of paired genes such as baseM/baseN or mDim/nDim,
since the mirror image of a good tiling is often the better one; two-gene moves on genes a
check reads together, such as a core split traded between mDim and bDim), then restarts from
a fresh population seeded with the best found, until the budget is spent.
"""

from __future__ import annotations

import numpy as np

from ascend_tune.search import construct
from ascend_tune.search.construct import duplicated
from ascend_tune.search.moves import polish
from ascend_tune.search.problem import Problem


class Genetic:
    name = "ga"
    uses_budget = True  # held to the budget
    builds_valid = True  # proposals built inside the valid set: give it the constraints

    def __init__(self, population: int = 0, elite_fraction: float = 0.1, tournament: int = 3,
                 crossover_rate: float = 0.9, mutation_rate: float = 0.5,
                 stagnation: int = 6, duplicate_rounds: int = 3, keep_on_restart: int = 4,
                 near: float = 0.5, pop_divisor: int = 20, group: float = 0.2) -> None:
        self.group = float(group)  # share of mutations that re-sample one check's genes
        self.near = float(near)  # share of mutations that prefer nearby values
        self.pop_divisor = int(pop_divisor)
        self.population = int(population)
        self.elite_fraction = float(elite_fraction)
        self.tournament = int(tournament)
        self.crossover_rate = float(crossover_rate)
        self.mutation_rate = float(mutation_rate)  # chance a child gets one-gene mutation
        self.stagnation = int(stagnation)  # generations without improvement before a restart
        self.duplicate_rounds = int(duplicate_rounds)  # re-mutations of already seen children
        self.keep_on_restart = int(keep_on_restart)

    def search(self, problem: Problem, budget: int, rng: np.random.Generator) -> None:
        del budget  # problem.left says what remains
        seeds = np.zeros((0, problem.n_genes), dtype=np.int64)
        if problem.baseline is not None:
            seeds = problem.baseline[None, :].astype(np.int64)
        while problem.left > 0 and not problem.exhausted:
            before = problem.spent
            self._evolve(problem, seeds, rng)
            polish(problem, rng)
            if problem.spent == before:
                return  # nothing new left to look at
            # Restart: a fresh population around the best few found so far.
            seeds = np.array([g for g, _ in problem.top(self.keep_on_restart)],
                             dtype=np.int64).reshape(-1, problem.n_genes)

    def _pop_size(self, problem: Problem) -> int:
        budget = problem.budget if problem.budget is not None else 2000
        return self.population or int(np.clip(budget // self.pop_divisor, 16, 256))

    def _evolve(self, problem: Problem, seeds: np.ndarray, rng: np.random.Generator) -> None:
        pop_size = self._pop_size(problem)
        pop, fit = self._initial(problem, seeds, pop_size, rng)
        if len(pop) == 0:
            return
        best, stale = float(fit.min()), 0
        n_elite = max(1, round(self.elite_fraction * pop_size))
        while problem.left > 0 and not problem.exhausted and stale < self.stagnation:
            order = np.argsort(fit, kind="stable")
            elite, elite_fit = pop[order[:n_elite]], fit[order[:n_elite]]
            children = self._children(problem, pop, fit, pop_size - n_elite, rng)
            if len(children) == 0:
                return
            child_fit = problem.evaluate(children)
            pop = np.concatenate([elite, children])
            fit = np.concatenate([elite_fit, child_fit])
            keep = np.isfinite(fit)
            pop, fit = pop[keep], fit[keep]
            now = float(fit.min())
            best, stale = (now, 0) if now < best else (best, stale + 1)

    def _initial(self, problem: Problem, seeds: np.ndarray, pop_size: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        fresh = problem.sample(max(pop_size - len(seeds), 1), rng)
        genomes = np.concatenate([seeds, fresh])
        fit = problem.evaluate(genomes)
        keep = np.isfinite(fit)
        return genomes[keep], fit[keep]

    def _children(self, problem: Problem, pop: np.ndarray, fit: np.ndarray, n: int,
                  rng: np.random.Generator) -> np.ndarray:
        feasible, sizes = problem.feasible, problem.sizes
        parents_a = pop[self._tournament(fit, n, rng)]
        parents_b = pop[self._tournament(fit, n, rng)]
        cross = rng.random(n) < self.crossover_rate
        mask = rng.random(parents_a.shape) < 0.5
        children = np.where(cross[:, None] & mask, parents_b, parents_a)
        children, ok = construct.repair(feasible, sizes, children, rng)
        children[~ok] = parents_a[~ok]  # a dead-end repair falls back to a parent
        # Mutate some children, and every child equal to a configuration already seen (up to
        # a few times), so each generation brings new configurations.
        todo = rng.random(n) < self.mutation_rate
        for _ in range(self.duplicate_rounds + 1):
            rows = np.flatnonzero(todo)
            if rows.size == 0:
                break
            genes = rng.integers(0, problem.n_genes, size=rows.size)
            moved, ok = construct.mutate(feasible, sizes, children[rows], genes, rng,
                                         near=bool(rng.random() < self.near))
            children[rows[ok]] = moved[ok]
            todo = problem.seen(children) | duplicated(children)
        # Group moves: re-sample together the genes one check reads (coupled genes such as
        # base sizes, steps and buffers under l1_fits), the rest kept: a jump one-gene
        # mutations cannot make without leaving the valid set.
        reads = feasible.reads
        rows = np.flatnonzero(rng.random(n) < self.group) if reads.shape[0] else np.zeros(0, int)
        if rows.size:
            free = reads[rng.integers(0, reads.shape[0], size=rows.size)]
            moved, ok = construct.complete(feasible, sizes, children[rows], free, rng)
            children[rows[ok]] = moved[ok]
        fresh = ~(problem.seen(children) | duplicated(children))
        return np.asarray(children[fresh], dtype=np.int64)

    def _tournament(self, fit: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        k = min(self.tournament, len(fit))
        picks = rng.integers(0, len(fit), size=(n, k))
        return picks[np.arange(n), np.argmin(fit[picks], axis=1)]  # type: ignore[no-any-return]
