"""Seeds from the tuning database (issue 47, part 3): a neighbour's winner moved onto a new
shape's constraints with the fewest changes, and the GA's first descents started from them."""

from __future__ import annotations

import numpy as np

from ascend_tune.hardware import load_profile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.search import construct
from ascend_tune.spec import load_spec
from ascend_tune.tune.seeding import Seeds, transfer
from ascend_tune.tune.shape import TuneSettings, search_problem, seed_genomes, tune_shape

HW = "ascend910b3"
# The winner of Matmul 4096x4096x4096 (GA, budget 2000): 8 x 5 cores, 128 x 256 base tiles.
BIG = {"baseM": 128, "baseN": 256, "baseK": 64, "stepM": 1, "stepN": 1, "stepKa": 8,
       "stepKb": 4, "dbL1": 2, "dbL0A": 2, "dbL0B": 2, "dbL0C": 1, "iterateOrder": 0,
       "mDim": 8, "nDim": 5, "kDim": 1}


def test_an_invalid_seed_is_moved_one_gene_onto_the_new_shape() -> None:
    spec, hw = load_spec("matmul"), load_profile(HW)
    model = ShapeModel(spec, hw, {"M": 512, "N": 4096, "K": 1024})
    problem = search_problem(model, "ga")
    mapped = model.nearest_indices(BIG)
    # On M=512, mDim 8 leaves a 64-row core block: a 128-row base tile no longer fits.
    assert construct.violated(problem.feasible, mapped[None, :]).any()
    moved = transfer(model, problem, [BIG], 0)
    assert len(moved) >= 1
    assert np.isfinite(model.objective(moved)).all()
    # Each start differs from the seed in one gene only (the old re-sampling repair changed
    # baseM, baseN, mDim and nDim at once here), the nearest change first.
    assert ((moved != mapped[None, :]).sum(axis=1) == 1).all()
    changed = [spec.params[int(np.flatnonzero(row != mapped)[0])] for row in moved]
    assert set(changed) <= {"baseM", "mDim"}
    first = dict(zip(spec.params, model.values(moved[:1])[0], strict=True))
    assert first["baseM"] == 64 or first["mDim"] == 4


def test_a_valid_seed_is_kept_as_it_is_and_the_order_is_kept() -> None:
    spec, hw = load_spec("matmul"), load_profile(HW)
    model = ShapeModel(spec, hw, {"M": 4096, "N": 7168, "K": 2048})
    problem = search_problem(model, "ga")
    other = {**BIG, "mDim": 5, "nDim": 8}
    genomes = seed_genomes(model, problem,
                           Seeds((tuple(BIG.items()), tuple(other.items()), tuple(BIG.items())),
                                 ("M=4096,N=4096,K=4096",)), 0)
    assert len(genomes) == 2  # the duplicate dropped, the order (best first) kept
    assert (genomes[0] == model.nearest_indices(BIG)).all()
    assert (genomes[1] == model.nearest_indices(other)).all()


def test_the_seeded_ga_descends_from_its_seeds_and_finds_what_they_lead_to() -> None:
    """A seed one gene from the optimum: the seeded GA's first descents start from it and
    reach the optimum within a few dozen evaluations; without the seed the same run (same
    seed) needs several times more."""
    spec, hw = load_spec("matmul"), load_profile(HW)
    shape = {"M": 512, "N": 4096, "K": 1024}
    near = {**BIG, "baseM": 128, "baseN": 128, "baseK": 128, "stepKb": 8, "dbL1": 1,
            "dbL0C": 2, "mDim": 2, "nDim": 16}
    settings = TuneSettings("ga", 2000, 0)
    seeded = tune_shape(spec, hw, shape, settings, Seeds((tuple(near.items()),), ("x",)))
    plain = tune_shape(spec, hw, shape, settings)
    assert seeded["seeded"] == {"configurations": 1, "from": ["x"]}
    best = min(lat for _n, lat in plain["history"] + seeded["history"])

    def reached(history: list[list[float]]) -> int:
        return next(int(n) for n, lat in history if lat <= best * (1 + 1e-9))

    assert reached(seeded["history"]) <= 100
    assert reached(plain["history"]) > 2 * reached(seeded["history"])
