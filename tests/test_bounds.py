"""Lower bounds of the latency (model.bounds) and the exact search that screens by them."""

from __future__ import annotations

import numpy as np
import pytest

from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.search import problem as problem_mod
from ascend_tune.search.problem import run
from ascend_tune.search.space import enumerator
from ascend_tune.search.strategies import STRATEGIES
from ascend_tune.spec import load_spec
from ascend_tune.tune.shape import search_problem

_CASES = [("matmul", {"M": 511, "N": 1023, "K": 2047}),
          ("batch_matmul", {"B": 7, "M": 33, "N": 4097, "K": 1000}),
          ("flash_attention", {"B": 1, "N": 32, "S1": 4096, "S2": 4096, "D": 128}),
          ("softmax", {"rows": 65536, "cols": 2048}),
          ("add", {"totalLength": 12_345_679}),
          ("grouped_matmul", {"G": 4, "M": 512, "N": 1024, "K": 2048})]


@pytest.mark.parametrize(("name", "shape"), _CASES)
def test_every_bound_is_below_the_latency(name: str, shape: dict[str, int],
                                          hw: HardwareProfile) -> None:
    spec = load_spec(name)
    model = ShapeModel(spec, hw, shape)
    valid = np.concatenate(list(enumerator(model).blocks()))
    rows = valid[np.random.default_rng(0).permutation(len(valid))[:20_000]]
    latency = model.valid_objective(rows)
    bounds = model._bounds
    for level in range(len(bounds.levels)):
        lower = bounds(level, rows)
        assert (lower <= latency).all(), (name, level)
        assert (lower > 0).all(), "a bound of zero would screen nothing"
    # The cheaper bound is the weaker one (the compute stages are a subset of the rest).
    assert (bounds(0, rows) <= bounds(1, rows)).all()
    # may_beat keeps every row at most the cut and drops only rows above it.
    cut = float(np.quantile(latency, 0.05))
    kept = model.may_beat(rows, cut)
    assert kept[latency <= cut].all()
    assert not kept.all() or name in ("add", "softmax", "flash_attention")


def test_the_bound_screens_most_of_a_matmul_valid_set(hw: HardwareProfile) -> None:
    model = ShapeModel(load_spec("matmul"), hw, {"M": 511, "N": 1023, "K": 2047})
    valid = np.concatenate(list(enumerator(model).blocks()))
    rows = valid[::50]
    best = float(model.valid_objective(rows).min())
    assert model.may_beat(rows, best).mean() < 0.05


@pytest.mark.parametrize(("name", "shape"), [
    ("matmul", {"M": 97, "N": 193, "K": 389}),
    ("batch_matmul", {"B": 64, "M": 1, "N": 4096, "K": 128}),
    ("flash_attention", {"B": 8, "N": 32, "S1": 1, "S2": 4096, "D": 128})])
def test_screened_exact_search_gives_the_same_results(
        name: str, shape: dict[str, int], hw: HardwareProfile,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Screening from the first block on (SCREEN_AFTER 0) changes nothing a caller sees: the
    optimum, the counts, the convergence history and the kept best (top-k)."""
    model = ShapeModel(load_spec(name), hw, shape)
    seen = []
    for screen_after in (10**12, 0):
        monkeypatch.setattr(problem_mod, "SCREEN_AFTER", screen_after)
        problem = search_problem(model, "exhaustive")
        screened: list[int] = []
        real = model.may_beat

        def spy(genomes: np.ndarray, cut: float, real=real, screened=screened) -> np.ndarray:
            keep = real(genomes, cut)
            screened.append(int((~keep).sum()))
            return keep

        problem._valid_screen = spy
        res = run(STRATEGIES["exhaustive"](), problem, 1, np.random.default_rng(0))
        seen.append((res.genome.tolist(), res.latency_us, res.evaluations, res.rejected,
                     res.history, [(g.tolist(), v) for g, v in problem.top(64)]))
        assert (sum(screened) > 0) == (screen_after == 0 and name != "flash_attention")
    assert seen[0] == seen[1]
