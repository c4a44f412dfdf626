"""Crossover repair: every child the GA proposes is a valid configuration, and repair changes
only what it must (the genes of the checks a child violates)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.search import construct
from ascend_tune.search.problem import Problem
from ascend_tune.search.strategies.genetic import Genetic
from ascend_tune.spec import OperatorSpec, load_spec
from ascend_tune.tune.shape import search_problem
from tests.test_feasible_walks import SIZES, VALID, Toy

SHAPES = [("matmul", {"M": 2, "N": 32, "K": 16}), ("matmul", {"M": 512, "N": 4096, "K": 1024}),
          ("add", {"totalLength": 1000})]


def _valid(model: ShapeModel, genomes: np.ndarray) -> np.ndarray:
    return model.evaluate(model.values(genomes)).valid  # the model's own verdict


@pytest.mark.parametrize(("name", "shape"), SHAPES)
def test_every_ga_child_is_valid(name: str, shape: dict[str, int],
                                 hw: HardwareProfile) -> None:
    model = ShapeModel(load_spec(name), hw, shape)
    problem = search_problem(model, "ga")
    problem.budget = 2000  # as run() sets it: it bounds the sampling walks
    rng = np.random.default_rng(5)
    pop = problem.sample(30, rng)
    fit = problem.evaluate(pop)
    assert np.isfinite(fit).all()
    # No mutation, no group moves: what comes out is crossover (with repair) alone.
    ga = Genetic(crossover_rate=1.0, mutation_rate=0.0, group=0.0)
    children = ga._children(problem, pop, fit, 200, rng)
    assert len(children) > 0
    assert _valid(model, children).all()


def test_uniform_crossover_of_valid_parents_needs_repair(hw: HardwareProfile,
                                                         matmul_spec: OperatorSpec) -> None:
    # Why the repair matters: mixing genes of two valid tilings breaks a check in most
    # children on this shape (the buffers no longer fit, the core split no longer matches).
    model = ShapeModel(matmul_spec, hw, {"M": 512, "N": 4096, "K": 1024})
    problem = search_problem(model, "ga")
    problem.budget = 2000
    rng = np.random.default_rng(5)
    a, b = problem.sample(200, rng), problem.sample(200, rng)
    mixed = np.where(rng.random(a.shape) < 0.5, a, b)
    assert (~_valid(model, mixed)).mean() > 0.3
    repaired, ok = construct.repair(problem.feasible, problem.sizes, mixed, rng)
    assert ok.mean() > 0.8  # 0.845 at this seed; a dead end keeps ok False
    assert _valid(model, repaired[ok]).all()


def test_repair_keeps_valid_rows_and_pinned_genes(hw: HardwareProfile,
                                                  matmul_spec: OperatorSpec) -> None:
    model = ShapeModel(matmul_spec, hw, {"M": 512, "N": 4096, "K": 1024})
    problem = search_problem(model, "ga")
    problem.budget = 2000
    feasible, sizes = problem.feasible, problem.sizes
    rng = np.random.default_rng(9)
    good = problem.sample(50, rng)
    same, ok = construct.repair(feasible, sizes, good.copy(), rng)
    assert ok.all() and np.array_equal(same, good), "a valid row is returned unchanged"
    raw = rng.integers(0, sizes, size=(300, sizes.size))
    bad = ~_valid(model, raw)
    assert bad.any()
    pinned = np.zeros(raw.shape, dtype=bool)
    pinned[:, 0] = True  # gene 0 may not move
    fixed, ok = construct.repair(feasible, sizes, raw.copy(), rng, pinned=pinned)
    assert np.array_equal(fixed[:, 0], raw[:, 0])
    assert _valid(model, fixed[ok]).all()
    # Only genes read by a violated check move.
    violated = construct.violated(feasible, raw)
    may_move = (violated.astype(int) @ feasible.reads.astype(int)) > 0
    assert not ((fixed != raw) & ~may_move).any()


# ---- the other moves of a generation, on the toy of test_feasible_walks (20 valid) ---------

def _toy_problem(feasible: object | None = None) -> Problem:
    def objective(genomes: np.ndarray) -> np.ndarray:
        g = np.asarray(genomes)
        ok = (g[:, 0] + g[:, 1] <= 3) & (g[:, 2] >= g[:, 0])
        return np.where(ok, 1.0 + g.sum(axis=1), np.inf)

    problem = Problem(SIZES, objective, feasible=Toy() if feasible is None else feasible)
    problem.budget = 1000
    return problem


def _seen_population(problem: Problem, genomes: list[tuple[int, int, int]]
                     ) -> tuple[np.ndarray, np.ndarray]:
    pop = np.array(genomes, dtype=np.int64)
    return pop, problem.evaluate(pop)


def _spy(monkeypatch: pytest.MonkeyPatch, name: str) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    real = getattr(construct, name)

    def spy(*args: Any, **kw: Any) -> Any:
        calls.append(args)
        return real(*args, **kw)

    monkeypatch.setattr(construct, name, spy)
    return calls


def test_mutation_rounds_are_duplicate_rounds_plus_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every valid configuration already seen: every mutated child lands on a seen one, so
    # each round re-mutates every child, duplicate_rounds + 1 rounds in all.
    problem = _toy_problem()
    pop, fit = _seen_population(problem, sorted(VALID))
    calls = _spy(monkeypatch, "mutate")
    ga = Genetic(crossover_rate=0.0, mutation_rate=1.0, group=0.0, duplicate_rounds=2)
    assert len(ga._children(problem, pop, fit, 30, np.random.default_rng(0))) == 0
    assert [len(c[2]) for c in calls] == [30, 30, 30]
    # Over the rounds every gene is picked for a move, gene 0 too.
    assert set(np.concatenate([c[3] for c in calls]).tolist()) == {0, 1, 2}
    calls.clear()
    Genetic(crossover_rate=0.0, mutation_rate=0.0, group=0.0)._children(
        problem, pop, fit, 30, np.random.default_rng(0))
    assert calls == [], "no child to mutate: mutate is not called"


def test_mutated_and_group_moved_children_are_new_and_valid() -> None:
    problem = _toy_problem()
    pop, fit = _seen_population(problem, [(0, 0, 0), (1, 1, 1), (0, 2, 2)])
    for ga in (Genetic(crossover_rate=0.0, mutation_rate=1.0, group=0.0, duplicate_rounds=0),
               Genetic(crossover_rate=0.0, mutation_rate=0.0, group=1.0)):
        children = ga._children(problem, pop, fit, 40, np.random.default_rng(1))
        assert len(children) > 0
        assert {tuple(c) for c in children.tolist()} <= VALID - set(map(tuple, pop.tolist()))


def test_group_moves_resample_one_whole_check(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = _toy_problem()
    pop, fit = _seen_population(problem, [(0, 0, 0), (1, 1, 1)])
    calls = _spy(monkeypatch, "complete")
    Genetic(crossover_rate=0.0, mutation_rate=0.0, group=1.0)._children(
        problem, pop, fit, 40, np.random.default_rng(2))
    # Repair's walk frees nothing here (no crossover: every child valid); the group moves'
    # walk frees some genes of every row.
    (call,) = [c for c in calls if c[3].any(axis=1).all()]
    # Each row frees the genes of one check: {g0, g1} or {g0, g2}, both chosen.
    assert {tuple(row) for row in call[3].tolist()} == {(True, True, False), (True, False, True)}


def test_an_unconstrained_problem_has_no_group_moves() -> None:
    problem = _toy_problem(construct.Unconstrained(3))
    pop, fit = _seen_population(problem, [(0, 0, 0), (1, 1, 1)])
    ga = Genetic(crossover_rate=1.0, mutation_rate=0.0, group=1.0)
    children = ga._children(problem, pop, fit, 20, np.random.default_rng(3))
    # Crossover of (0,0,0) and (1,1,1) without repair structure: any mix, unseen ones kept.
    assert {tuple(c) for c in children.tolist()} <= {
        (a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)} - {(0, 0, 0), (1, 1, 1)}
