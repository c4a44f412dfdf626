"""A memetic genetic algorithm over index genomes (one gene per parameter, an index into its
domain): the population explores, the descent exploits.

Why memetic: on the model's tiling spaces the optimum sits in a narrow basin that needs
several genes to change together (baseK doubled with A's K panel resident in L1, baseN halved
for L0B, the L1 double buffer dropped). A plain GA converges on the first good basin it finds
(the GA this replaced: 0.965 of the optimum on average over the held-out peer suite, 63 % of
runs within 1.01x; 0.991 and 80 % on the hard suite); descents from many starts reach the
narrow basins (``ils``). Here the members of a small population are local
optima of the same budgeted descent ``ils`` uses (:func:`~ascend_tune.search.descent.descend`),
and offspring are new starting points made from the current parent:

* ``kick``: a couple of genes shifted a step or two, the rest repaired with the fewest changes
  (``ils``'s move out of a local optimum);
* ``cross``: crossed gene by gene with another member (a subset of the genes where they differ
  taken from it), repaired with the fewest changes: the core split of one basin with the base
  tile of another;
* ``group``: the genes one check reads re-sampled together (base sizes, steps and buffers under
  l1_fits);
* ``mirror``: a mirror image (baseM/baseN, mDim/nDim, ... swapped, the rest repaired): the
  descent from the mirror of a local optimum reaches basins a kick does not (BatchMatmul
  B=16 1024x128x1024 ends at 0.914 of the optimum without it).

Adapted per run from what they achieve (every rate kept above a floor, so none dies):

* which operator makes the next offspring: each operator's success (its offspring beat the
  parent; twice the credit for a new best), a running average, probability matching;
* which offspring are descended: the evaluations a descended offspring costs against what it
  earns, next to the same for offspring kept as they are (one evaluation each), so the share
  of the budget spent on descents follows what pays.

An offspring that beats the parent becomes the parent. Every offspring enters the population
by deterministic crowding: it replaces the member nearest to it (fewest genes differ) when it
is faster, never another one, so basins far from the best survive, and the best survives
everything but a faster offspring near it (elitism). When ``stall`` offspring in a row did not
beat the parent, the search has converged there. Those failures belong to the parent's
latency: when the search falls back into a former parent (a restart's descent or an
offspring's ends there), it goes on counting, so a wide basin that already failed is not
kicked another ``stall`` times on each return (on int8 512x8192x2048 the baseline's basin,
0.72 of the optimum, takes a quarter of all descents: 86 % of runs within 1.01x without,
95 % with, seeds 150-249). The latency, not the genome: the basin is a plateau of twins of
exactly the same latency (mDim 4 x nDim 10 and 2 x 20, iterateOrder either way), and a
descent that ends at another twin is the same failure (with the ties tier: int8 at 98 % of
seeds 200-399 keyed by genome, 100 % by latency).

Once per parent, at convergence, its whole trade neighbourhood is scored first
(:func:`~ascend_tune.search.moves.trade_moves`: two genes a check reads together, the buffer
budgets included, traded keeping their product, the rest repaired); the best trade, when
faster, is descended and becomes the parent. Where a tight budget blocks every gene alone, a
kick's repair takes the cheapest way back (halving the mirrored base size) and a restart's
descent falls into the same wide basin again: on Matmul 1024x576x6144 a third of all descents
end at 0.969 of the optimum and 28 % of runs did, one trade (baseN up a step against stepKb,
B's L1 panel kept) leads out. Too many moves (50-80)
for every local optimum of every descent (as a fifth descent tier: 96.8 % of 400 runs within
1.01x on 8 shapes where runs miss, int8 512x8192x2048 down from 88 % to 78 %), they pay once
per converged parent (98.3 %, against 92.3 % without; docs/benchmarks.md). Otherwise a fresh
immigrant (the best of ``pool`` configurations sampled inside the valid set, descended) becomes
the parent and enters the population, which keeps its members as mates for crossover.

Every proposal is built inside the valid set where the problem knows its constraints
(:mod:`ascend_tune.search.construct`), and every configuration looked at counts against the
budget (:class:`~ascend_tune.search.problem.Problem`). Everything is drawn from the search's
generator: the same seed gives the same result.
"""

from __future__ import annotations

import numpy as np

from ascend_tune.search import construct
from ascend_tune.search.descent import TRADE_TIER, TierMoves, descend, kick, tiers_named
from ascend_tune.search.moves import mirror_moves
from ascend_tune.search.problem import Problem

OPERATORS = ("kick", "cross", "group", "mirror")
# The descent's tiers (descent.TIERS): one-gene moves, then mirror moves, ratio moves, shifted
# moves with repair; not the coupled moves (two genes of a check a step or two each). A fresh
# descent spent 70-95 of its ~200 evaluations in the coupled tier, mostly proving a local
# optimum: without it a run makes more descents and more offspring and reaches the deceptive
# basins more often. Mirror moves (a repair each) come after the one-gene moves, so they are
# built at a one-gene local optimum only: the extra descents then cost no more CPU than the
# coupled tier did. On 7 shapes where runs miss, seeds 100-149, budget 2000: 97.4 % of runs
# within 1.01x against 87.4 % with ils's tiers (ils 88.0 %); docs/benchmarks.md. After the
# one-gene moves, pairs of one-gene moves that each tie made together (moves.tie_moves): on
# int8 512x8192x2048 a descent from a fresh immigrant then ends at the optimum in 36 % of
# tries instead of 21 % (a cost of 4 evaluations a descent), and a run in 99 % instead of 95 %
# (seeds 100-199), 97 % instead of 92 % (seeds 200-299).
DESCENT_TIERS = tiers_named("one_gene", "ties", "mirror", "ratio", "shifted")
# Steps in a row that looked at nothing new before a run ends (a space nearly exhausted).
_DRY_STEPS = 24
# Prior of the descent economics: this much reward over this many evaluations for both kinds
# of offspring, so neither is judged on its first few.
_PRIOR_REWARD, _PRIOR_EVALUATIONS = 1.0, 40.0
# Immigrants' worth of samples drawn at a time.
_STOCKED = 4


class Genetic:
    name = "ga"
    uses_budget = True  # held to the budget
    builds_valid = True  # proposals built inside the valid set: give it the constraints

    def __init__(self, population: int = 6, pool: int = 8, chunk: int = 8, kick_genes: int = 2,
                 stall: int = 8, rate_floor: float = 0.1, memory: float = 0.2,
                 descent_floor: float = 0.75, operators: tuple[str, ...] = OPERATORS,
                 tiers: tuple[int, ...] = DESCENT_TIERS, escape: bool = True,
                 keep_fails: bool = True, seed_descents: int = 6) -> None:
        self.population = int(population)  # members: the best distinct local optima found
        self.pool = int(pool)  # configurations sampled per immigrant, the best kept
        self.chunk = int(chunk)  # moves scored at a time by the descent
        self.kick_genes = int(kick_genes)
        self.stall = int(stall)  # offspring of one parent that do not pay before a restart
        self.rate_floor = float(rate_floor)  # least probability of each operator
        self.memory = float(memory)  # weight of the newest outcome in an operator's success
        self.descent_floor = float(descent_floor)  # least share of offspring descended
        self.operators = tuple(operators)
        self.tiers = tuple(int(t) for t in tiers)  # the descent's move tiers (descent.TIERS)
        self.escape = bool(escape)  # a converged parent's trade neighbourhood before a restart
        self.keep_fails = bool(keep_fails)  # a parent's failed offspring kept for its return
        # Descents from the first pool when the tuning database seeded the search (its best
        # start, then the best seeds): the population starts from their local optima.
        self.seed_descents = int(seed_descents)

    def search(self, problem: Problem, budget: int, rng: np.random.Generator) -> None:
        del budget  # problem.left says what remains
        _Run(self, problem, rng).evolve()


class _Run:
    """One run's population, its current parent and the adapted rates."""

    def __init__(self, ga: Genetic, problem: Problem, rng: np.random.Generator) -> None:
        self.ga = ga
        self.problem = problem
        self.rng = rng
        self.moves = TierMoves(problem)
        self.members = np.zeros((0, problem.n_genes), dtype=np.int64)
        self.latency = np.zeros(0)
        # The parent offspring are made from, and how many of its offspring in a row did not
        # beat it (a new parent comes in after ``stall``: the population has converged there).
        self.parent: tuple[np.ndarray, float] | None = None
        self.fails = 0
        self.success = dict.fromkeys(ga.operators, 0.5)
        # [reward, evaluations] of offspring kept as they are and of descended ones.
        self.pay = [[_PRIOR_REWARD, _PRIOR_EVALUATIONS], [_PRIOR_REWARD, _PRIOR_EVALUATIONS]]
        self.first = True  # the first immigrant includes the baseline
        self.stock = np.zeros((0, problem.n_genes), dtype=np.int64)  # samples not yet used
        # A parent is known by its latency: genomes of exactly the same latency are twins on
        # a plateau (iterateOrder flipped, mDim 4 x nDim 10 against 2 x 20 where neither
        # split is the bottleneck), whose offspring and trades fail alike.
        self.escaped: set[float] = set()  # parents whose trade neighbourhood was scored
        # Offspring in a row that did not beat each former parent, for when it comes back.
        self.tried: dict[float, int] = {}

    def evolve(self) -> None:
        problem = self.problem
        dry = 0
        while problem.left > 0 and not problem.exhausted and dry < _DRY_STEPS:
            before = problem.spent
            self._step()
            dry = dry + 1 if problem.spent == before else 0

    def _step(self) -> None:
        problem, rng = self.problem, self.rng
        if self.parent is None or self.fails >= self.ga.stall:
            if not self._escape():
                self._restart()
            return
        op = self._operator()
        child = self._offspring(op)
        lat = float(problem.evaluate(child[None, :])[0]) if child is not None else np.inf
        if child is None or not np.isfinite(lat):
            self._credit(op, 0.0)
            self.fails += 1
            return
        before = problem.spent - 1
        descended = bool(rng.random() < self._descent_share())
        if descended:
            child, lat = descend(problem, child, lat, rng, self.ga.chunk, self.moves,
                                 self.ga.tiers)
        best_before = float(self.latency.min())
        entered = self._insert(child, lat)
        reward = (1.0 if lat < self.parent[1] else 0.0) + (1.0 if lat < best_before else 0.0)
        self.pay[int(descended)][0] += reward + (0.5 if entered else 0.0)
        self.pay[int(descended)][1] += problem.spent - before
        self._credit(op, reward)
        if lat < self.parent[1]:
            self._adopt(child, lat)
        else:
            self.fails += 1

    def _escape(self) -> bool:
        """At a converged parent, once per latency (a plateau's twins once): its whole trade
        neighbourhood scored; the best trade, when faster, descended and made the parent.
        False when nothing paid."""
        if not self.ga.escape or self.parent is None:
            return False
        parent, lat = self.parent
        if lat in self.escaped:
            return False
        self.escaped.add(lat)
        moves = self.moves(TRADE_TIER, parent, self.rng)
        if len(moves) == 0:
            return False
        fit = self.problem.evaluate(moves)
        j = int(np.argmin(fit))
        # Only a faster trade: descending from the best 2 or 4 trades whatever their latency
        # (a guided kick) cost more than it found (docs/benchmarks.md).
        if not fit[j] < lat:
            return False
        child, clat = descend(self.problem, moves[j].copy(), float(fit[j]), self.rng,
                              self.ga.chunk, self.moves, self.ga.tiers)
        self._insert(child, clat)
        self._adopt(child, clat)
        return True

    def _adopt(self, child: np.ndarray, lat: float) -> None:
        """``child`` becomes the parent; its failed offspring so far count when it, or a twin of
        the same latency, was a parent before (a restart or an offspring's descent fell back
        into it)."""
        if self.parent is not None:
            self.tried[self.parent[1]] = self.fails
        self.parent = (child, lat)
        self.fails = self.tried.get(lat, 0) if self.ga.keep_fails else 0

    def _restart(self) -> None:
        """A new parent: a fresh immigrant (the best of ``pool`` samples) descended, entered
        into the population by crowding."""
        if self.first and len(self.problem.seeds):
            self._seeded_start()
            return
        child = self._immigrant()
        if child is None:
            self.fails = 0
            return
        lat = float(self.problem.evaluate(child[None, :])[0])
        child, lat = descend(self.problem, child, lat, self.rng, self.ga.chunk, self.moves,
                             self.ga.tiers)
        self._insert(child, lat)
        self._adopt(child, lat)

    def _seeded_start(self) -> None:
        """The first parent of a search the tuning database seeded: the first pool (the
        baseline, the seeds, ``pool`` fresh samples) scored, then descents from its best and
        from the best seeds after it (``seed_descents`` in all, each start not already
        reached by an earlier descent), every local optimum entered into the population; the
        fastest becomes the parent."""
        problem = self.problem
        fresh = problem.sample(self.ga.pool, self.rng)
        starts = problem.first_pool(fresh)
        self.first = False
        fit = problem.evaluate(starts)
        order = [int(i) for i in np.argsort(fit, kind="stable") if np.isfinite(fit[i])]
        n_known = len(starts) - len(fresh)
        first_known = 1 if problem.baseline is not None else 0
        chosen = order[:1] + [i for i in range(first_known, n_known)
                              if np.isfinite(fit[i]) and i != order[0]]
        descents = 0
        for i in chosen:
            if descents >= self.ga.seed_descents or problem.left <= 0:
                break
            if len(self.members) and (self.members == starts[i]).all(axis=1).any():
                continue
            child, lat = descend(problem, starts[i].copy(), float(fit[i]), self.rng,
                                 self.ga.chunk, self.moves, self.ga.tiers)
            descents += 1
            self._insert(child, lat)
            if self.parent is None or lat < self.parent[1]:
                self._adopt(child, lat)
        if self.parent is None:
            self.fails = 0

    def _credit(self, op: str, reward: float) -> None:
        self.success[op] += self.ga.memory * (reward - self.success[op])

    def _operator(self) -> str:
        """Probability matching on the operators' running success, each above the floor."""
        ops = self.ga.operators
        quality = np.array([self.success[op] for op in ops]) + 1e-3
        floor = self.ga.rate_floor
        prob = floor + (1.0 - floor * len(ops)) * quality / quality.sum()
        return ops[int(self.rng.choice(len(ops), p=prob / prob.sum()))]

    def _descent_share(self) -> float:
        """The share of offspring descended: reward per evaluation of descended offspring
        against that of offspring kept as they are, above the floor."""
        raw = self.pay[0][0] / self.pay[0][1]
        desc = self.pay[1][0] / self.pay[1][1]
        return max(self.ga.descent_floor, desc / (raw + desc))

    def _mate(self) -> np.ndarray:
        """A member other than the parent, by binary tournament (the parent when alone)."""
        assert self.parent is not None
        others = np.flatnonzero((self.members != self.parent[0]).any(axis=1))
        if others.size == 0:
            return self.parent[0]
        a, b = others[self.rng.integers(0, others.size, size=2)]
        return np.asarray(self.members[a if self.latency[a] <= self.latency[b] else b])

    def _offspring(self, op: str) -> np.ndarray | None:
        problem, rng = self.problem, self.rng
        assert self.parent is not None
        parent = self.parent[0]
        if op == "kick":
            return kick(problem, parent, rng, self.ga.kick_genes)
        if op == "cross":
            return self._cross(parent, self._mate())
        if op == "mirror":
            mirrored = mirror_moves(problem, parent)
            return (np.asarray(mirrored[int(rng.integers(0, len(mirrored)))], dtype=np.int64)
                    if len(mirrored) else None)
        return self._group(parent)

    def _immigrant(self) -> np.ndarray | None:
        """The best of ``pool`` fresh samples (with the baseline, the first time)."""
        problem, pool = self.problem, self.ga.pool
        if len(self.stock) < pool:
            # Samples for several immigrants at once: a walk batch costs little more for 32
            # rows than for 8 (2.3 ms against 3.7 ms on Matmul 1024x4096x4096).
            more = problem.sample(_STOCKED * pool, self.rng)
            self.stock = np.concatenate([self.stock, more])
        fresh, self.stock = self.stock[:pool], self.stock[pool:]
        if self.first:  # the baseline and the seeds (problem.first_pool) the first time
            fresh = problem.first_pool(fresh)
        self.first = False
        if len(fresh) == 0:
            return None
        fit = problem.evaluate(fresh)
        if not np.isfinite(fit).any():
            return None
        return np.asarray(fresh[int(np.argmin(fit))], dtype=np.int64)

    def _cross(self, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
        """A proper subset of the genes where ``a`` and ``b`` differ taken from ``b``, the
        rest of ``a`` repaired with the fewest changes (the genes taken pinned)."""
        problem, rng = self.problem, self.rng
        differ = np.flatnonzero(a != b)
        if differ.size < 2:
            return kick(problem, a, rng, self.ga.kick_genes)
        take = differ[rng.permutation(differ.size)[:int(rng.integers(1, differ.size))]]
        child = a.copy()
        child[take] = b[take]
        pinned = np.zeros((1, problem.n_genes), dtype=bool)
        pinned[0, take] = True
        rows, ok = construct.settle(problem.feasible, problem.sizes, child[None, :], pinned)
        if not ok[0]:
            rows, ok = construct.repair(problem.feasible, problem.sizes, child[None, :], rng)
        return np.asarray(rows[0], dtype=np.int64) if ok[0] else None

    def _group(self, parent: np.ndarray) -> np.ndarray | None:
        """The genes one check reads re-sampled together, the rest kept; one gene moved where
        the problem knows no check."""
        problem, rng = self.problem, self.rng
        reads = problem.feasible.reads
        coupled = np.flatnonzero(reads.sum(axis=1) >= 2) if reads.shape[0] else np.zeros(0, int)
        if coupled.size == 0:
            gene = rng.integers(0, problem.n_genes, size=1)
            rows, ok = construct.mutate(problem.feasible, problem.sizes, parent[None, :], gene,
                                        rng)
        else:
            free = reads[coupled[int(rng.integers(0, coupled.size))]][None, :]
            rows, ok = construct.complete(problem.feasible, problem.sizes, parent[None, :],
                                          free, rng)
        return np.asarray(rows[0], dtype=np.int64) if ok[0] else None

    def _insert(self, child: np.ndarray, lat: float) -> bool:
        """Deterministic crowding: fill an empty place, else replace the nearest member (the
        slowest of the nearest) when the child is faster. False when nothing changed."""
        if len(self.members) and (self.members == child).all(axis=1).any():
            return False
        if len(self.members) < self.ga.population:
            self.members = np.concatenate([self.members, child[None, :]])
            self.latency = np.append(self.latency, lat)
            return True
        distance = (self.members != child).sum(axis=1)
        nearest = np.flatnonzero(distance == distance.min())
        slot = int(nearest[np.argmax(self.latency[nearest])])
        if lat >= self.latency[slot]:
            return False
        self.members[slot] = child
        self.latency[slot] = lat
        return True
