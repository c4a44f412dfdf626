"""Crossover repair: every child the GA proposes is a valid configuration, and repair changes
only what it must (the genes of the checks a child violates)."""

from __future__ import annotations

import numpy as np
import pytest

from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.search import construct
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

