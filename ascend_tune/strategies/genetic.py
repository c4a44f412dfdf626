"""Genetic algorithm over index genomes (one gene per parameter, an index into its domain).

Index encoding keeps locality: mutating a gene by +-1 moves to the neighbouring domain value
(x2 or /2 for power-of-two domains). Settings follow what worked in the tuner literature
(autotuner_landscape.md §5.1): wide, shallow populations; tournament selection; uniform
crossover; elitism; constraint-aware repair; a visited set so no genome is scored twice.
"""

from __future__ import annotations

import numpy as np

from ascend_tune.strategies.base import Problem


class Genetic:
    name = "ga"

    def __init__(self, population: int = 0, elite_fraction: float = 0.1, tournament: int = 4,
                 crossover_rate: float = 0.9, mutation_rate: float = 0.0,
                 stagnation: int = 30, repair_rounds: int = 8,
                 max_proposals_factor: int = 200) -> None:
        self.population = int(population)
        self.elite_fraction = float(elite_fraction)
        self.tournament = int(tournament)
        self.crossover_rate = float(crossover_rate)
        self.mutation_rate = float(mutation_rate)
        self.stagnation = int(stagnation)
        self.repair_rounds = int(repair_rounds)
        self.max_proposals_factor = int(max_proposals_factor)

    def search(self, problem: Problem, budget: int, rng: np.random.Generator) -> None:
        # Evolve until the budget or stagnation, then polish the best with local moves.
        self._evolve(problem, budget, rng)
        self._polish(problem, budget)

    def _pop_size(self, budget: int) -> int:
        return self.population or int(np.clip(budget // 10, 16, 256))

    def _evolve(self, problem: Problem, budget: int, rng: np.random.Generator) -> None:
        pop_size = self._pop_size(budget)
        mut_rate = self.mutation_rate or max(1.0 / problem.n_genes, 0.05)
        cap = budget * self.max_proposals_factor
        self._proposals = 0

        pop, fit = self._initial(problem, pop_size, budget, rng, cap)
        if len(pop) == 0:
            return
        best = float(fit.min())
        stale = 0
        n_elite = max(1, round(self.elite_fraction * pop_size))
        while problem.evaluations < budget and self._proposals < cap:
            if problem.exhausted:
                return
            order = np.argsort(fit, kind="stable")
            elite, elite_fit = pop[order[:n_elite]], fit[order[:n_elite]]
            n_children = pop_size - n_elite
            parents_a = pop[self._tournament(fit, n_children, rng)]
            parents_b = pop[self._tournament(fit, n_children, rng)]
            cross = rng.random(n_children) < self.crossover_rate
            mask = rng.random(parents_a.shape) < 0.5
            children = np.where(cross[:, None] & mask, parents_b, parents_a)
            children = self._mutate(children, problem.sizes, mut_rate, rng)
            children, child_fit = self._repair(problem, children, budget, rng, cap)
            pop = np.concatenate([elite, children])
            fit = np.concatenate([elite_fit, child_fit])
            keep = np.isfinite(fit)
            pop, fit = pop[keep], fit[keep]
            now = float(fit.min())
            if now < best:
                best, stale = now, 0
            else:
                stale += 1
                if stale >= self.stagnation:
                    return

    @staticmethod
    def _polish(problem: Problem, budget: int) -> None:
        """Spend what the evolution left on steepest descent over one-gene moves (+-1, +-2
        domain steps) from the best genome: cheap, and it closes the last few percent."""
        while problem.evaluations < budget and problem.best_genome is not None:
            best = problem.best_genome
            moves = []
            for j in range(problem.n_genes):
                for step in (-2, -1, 1, 2):
                    k = best[j] + step
                    if 0 <= k < problem.sizes[j]:
                        moved = best.copy()
                        moved[j] = k
                        moves.append(moved)
            if not moves:
                return
            candidates = np.array(moves)
            before = problem.best_latency
            problem.evaluate(candidates[~problem.seen(candidates)])
            if not problem.best_latency < before:
                return

    def _initial(self, problem: Problem, pop_size: int, budget: int,
                 rng: np.random.Generator, cap: int) -> tuple[np.ndarray, np.ndarray]:
        pop = [problem.baseline[None, :]] if problem.baseline is not None else []
        fit = [problem.evaluate(pop[0])] if pop else []
        have = int(np.isfinite(fit[0]).sum()) if fit else 0
        while have < pop_size and problem.evaluations < budget and self._proposals < cap:
            if problem.exhausted:
                break
            batch = problem.random_genomes(rng, max(4 * (pop_size - have), 64))
            fresh = batch[~problem.seen(batch)]
            self._proposals += len(batch)
            lat = problem.evaluate(fresh)
            ok = np.isfinite(lat)
            take = np.flatnonzero(ok)[: pop_size - have]
            pop.append(fresh[take])
            fit.append(lat[take])
            have += len(take)
        genomes = np.concatenate(pop) if pop else np.zeros((0, problem.n_genes), np.int64)
        values = np.concatenate(fit) if fit else np.zeros(0)
        keep = np.isfinite(values)
        return genomes[keep], values[keep]

    def _tournament(self, fit: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        k = min(self.tournament, len(fit))
        picks = rng.integers(0, len(fit), size=(n, k))
        return picks[np.arange(n), np.argmin(fit[picks], axis=1)]  # type: ignore[no-any-return]

    @staticmethod
    def _mutate(genomes: np.ndarray, sizes: np.ndarray, rate: float,
                rng: np.random.Generator) -> np.ndarray:
        """Move mutated genes to a neighbouring domain value (+-1 or +-2); rarely reset."""
        hit = rng.random(genomes.shape) < rate
        step = rng.choice(np.array([-2, -1, 1, 2]), size=genomes.shape)
        moved = np.clip(genomes + step, 0, sizes - 1)
        reset = rng.random(genomes.shape) < 0.1
        fresh = rng.integers(0, sizes, size=genomes.shape)
        return np.where(hit, np.where(reset, fresh, moved), genomes)  # type: ignore[no-any-return]

    def _repair(self, problem: Problem, children: np.ndarray, budget: int,
                rng: np.random.Generator, cap: int) -> tuple[np.ndarray, np.ndarray]:
        """Score children; an invalid or already-seen child is nudged to a neighbour (one gene,
        +-1) and rescored, up to ``repair_rounds`` times, so the search keeps moving."""
        fit = np.full(len(children), np.inf)
        todo = np.arange(len(children))
        for _ in range(self.repair_rounds + 1):
            if todo.size == 0 or problem.evaluations >= budget or self._proposals >= cap:
                break
            cand = children[todo]
            fresh = ~problem.seen(cand)
            self._proposals += len(cand)
            lat = np.full(len(cand), np.inf)
            if fresh.any():
                lat[fresh] = problem.evaluate(cand[fresh])
            fit[todo] = lat
            bad = ~(fresh & np.isfinite(lat))
            todo = todo[bad]
            if todo.size:
                gene = rng.integers(0, problem.n_genes, size=todo.size)
                step = rng.choice(np.array([-1, 1]), size=todo.size)
                rows = children[todo].copy()
                rows[np.arange(todo.size), gene] = np.clip(
                    rows[np.arange(todo.size), gene] + step, 0, problem.sizes[gene] - 1)
                children[todo] = rows
        return children, fit
