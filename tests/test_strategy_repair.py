"""Crossover repair: every child the GA proposes is a valid configuration, and repair changes
only what it must (the genes of the checks a child violates)."""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import pytest

from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.search import construct
from ascend_tune.search.descent import kick
from ascend_tune.search.moves import one_gene_moves
from ascend_tune.search.problem import Problem
from ascend_tune.search.strategies.genetic import Genetic, _Run
from ascend_tune.spec import OperatorSpec, load_spec
from ascend_tune.tune.shape import search_problem

SHAPES = [("matmul", {"M": 2, "N": 32, "K": 16}), ("matmul", {"M": 512, "N": 4096, "K": 1024}),
          ("add", {"totalLength": 1000})]


def _valid(model: ShapeModel, genomes: np.ndarray) -> np.ndarray:
    return model.evaluate(model.values(genomes)).valid  # the model's own verdict


@pytest.mark.parametrize(("name", "shape"), SHAPES)
def test_every_ga_child_is_valid(name: str, shape: dict[str, int],
                                 hw: HardwareProfile) -> None:
    """The memetic GA's crossover (a subset of the differing genes from the mate, the rest
    repaired) and group moves (one check's genes re-sampled) on valid parents: every child
    the run proposes is valid by the model's own verdict."""
    model = ShapeModel(load_spec(name), hw, shape)
    problem = search_problem(model, "ga")
    problem.budget = 2000  # as run() sets it: it bounds the sampling walks
    rng = np.random.default_rng(5)
    run = _Run(Genetic(), problem, rng)
    parents = problem.sample(40, rng)
    assert np.isfinite(problem.evaluate(parents)).all()
    half = len(parents) // 2  # a small valid set may give fewer samples
    crossed = [run._cross(a, b) for a, b in zip(parents[:half], parents[half:2 * half],
                                                strict=True)]
    grouped = [run._group(p) for p in parents]
    for made in (crossed, grouped):
        children = np.array([c for c in made if c is not None], dtype=np.int64)
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



# ---- the memetic GA's crossover and group move, step by step --------------------------------
# Each draw is replayed on a copy of the run's generator, so the test knows which genes the
# operator took or freed and can hold it to its contract.


def _ga(hw: HardwareProfile, shape: dict[str, int]) -> tuple[ShapeModel, _Run]:
    model = ShapeModel(load_spec("matmul"), hw, shape)
    problem = search_problem(model, "ga")
    problem.budget = 2000
    return model, _Run(Genetic(), problem, np.random.default_rng(11))


def _pair_two_apart(run: _Run, a: np.ndarray) -> np.ndarray | None:
    """A valid configuration that differs from ``a`` in exactly two genes (two one-gene
    moves in a row)."""
    for first in one_gene_moves(run.problem, a):
        for second in one_gene_moves(run.problem, first):
            if int((second != a).sum()) == 2:
                return np.asarray(second)
    return None


def test_cross_takes_a_proper_subset_of_the_differing_genes(hw: HardwareProfile) -> None:
    """_Run._cross: at least one and not every gene where the parents differ is taken from
    the mate; the taken genes stay as the mate has them when the rest can be settled around
    them; parents that differ in two genes give a child with exactly one of them taken;
    parents that differ in fewer get a kick instead."""
    model, run = _ga(hw, {"M": 512, "N": 4096, "K": 1024})
    problem = run.problem
    parents = problem.sample(60, run.rng)
    pairs = list(zip(parents[0::2], parents[1::2], strict=True))
    close = [(a, b) for a in parents[:12] if (b := _pair_two_apart(run, a)) is not None]
    assert len(close) >= 5
    settled_kept = 0
    for a, b in pairs + close:
        differ = np.flatnonzero(a != b)
        assert differ.size >= 2
        replay = copy.deepcopy(run.rng)
        take = differ[replay.permutation(differ.size)[:int(replay.integers(1, differ.size))]]
        assert 1 <= take.size < differ.size
        mixed = a.copy()
        mixed[take] = b[take]
        pinned = np.zeros((1, a.size), dtype=bool)
        pinned[0, take] = True
        settled, ok = construct.settle(problem.feasible, problem.sizes, mixed[None, :], pinned)
        if not ok[0]:
            settled, ok = construct.repair(problem.feasible, problem.sizes, mixed[None, :],
                                           replay)
        child = run._cross(a, b)
        if not ok[0]:
            assert child is None
            continue
        assert child is not None and np.array_equal(child, settled[0])
        assert _valid(model, child[None, :]).all()
        if np.array_equal(child[take], b[take]):
            settled_kept += 1
        if differ.size == 2:
            assert int((child[differ] == b[differ]).sum()) == 1, "one of the two taken"
    assert settled_kept >= 0.8 * (len(pairs) + len(close))
    # Parents one gene apart (or equal): no crossover to make, the child is a kick of `a`.
    a = parents[0]
    b = one_gene_moves(problem, a)[0]
    replay = copy.deepcopy(run.rng)
    expected = kick(problem, a, replay, Genetic().kick_genes)
    child = run._cross(a, b)
    assert expected is not None and child is not None and np.array_equal(child, expected)


class _OneCoupled:
    """Toy checks: genes 0 and 1 read together (a + b <= 3); gene 2 read alone (c >= 1)."""

    reads = np.array([[True, True, False], [False, False, True]])
    order: Sequence[int] = [0, 1, 2]
    pairs: Sequence[tuple[int, int]] = []

    def passes(self, genomes: np.ndarray, which: Sequence[int]) -> np.ndarray:
        g = np.asarray(genomes)
        every = np.stack([g[:, 0] + g[:, 1] <= 3, g[:, 2] >= 1], axis=1)
        return every[:, list(which)]


def _toy_run(feasible: construct.Feasible | None) -> _Run:
    sizes = np.array([4, 4, 3])
    problem = Problem(sizes, lambda g: np.ones(len(g)), None, feasible=feasible)
    problem.budget = 10_000
    return _Run(Genetic(), problem, np.random.default_rng(3))


def test_group_move_frees_only_the_genes_of_a_check_reading_several() -> None:
    """_Run._group re-samples together the genes of one check that reads at least two (the
    toy has one: genes 0 and 1); gene 2, read by a check of its own, never moves."""
    run = _toy_run(_OneCoupled())
    parent = np.array([1, 1, 1])
    moved = set()
    for _ in range(200):
        child = run._group(parent)
        assert child is not None
        assert child[2] == 1 and child[0] + child[1] <= 3
        moved |= {int(g) for g in np.flatnonzero(child != parent)}
    assert moved == {0, 1}


def test_group_move_without_known_checks_moves_one_drawn_gene() -> None:
    """With no constraint structure (Unconstrained), _Run._group moves the one gene it draws
    to a nearby value, nothing else."""
    run = _toy_run(None)
    parent = np.array([1, 1, 1])
    moved = set()
    for _ in range(200):
        replay = copy.deepcopy(run.rng)
        gene = int(replay.integers(0, 3, size=1)[0])
        child = run._group(parent)
        assert child is not None
        changed = np.flatnonzero(child != parent)
        assert changed.tolist() == [gene]
        moved.add(gene)
    assert moved == {0, 1, 2}
