from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ascend_tune.engine import ShapeModel
from ascend_tune.errors import NoValidConfigError
from ascend_tune.hardware import HardwareProfile
from ascend_tune.spec import OperatorSpec
from ascend_tune.strategies import STRATEGIES, Problem
from ascend_tune.strategies.base import run
from ascend_tune.tuner import TuneSettings, tune_shape


def _true_optimum(model: ShapeModel) -> float:
    problem = Problem(model.sizes, model.objective)
    run(STRATEGIES["exhaustive"](), problem, 1, np.random.default_rng(0))
    return problem.best_latency


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_strategy_conformance(name: str, hw: HardwareProfile, add_spec: OperatorSpec) -> None:
    model = ShapeModel(add_spec, hw, {"totalLength": 3_000_000})
    calls: list[int] = []

    def objective(genomes: np.ndarray) -> np.ndarray:
        calls.append(len(genomes))
        return model.objective(genomes)

    results = []
    for _ in range(2):
        problem = Problem(model.sizes, objective, model.nearest_indices(model.baseline_values()))
        res = run(STRATEGIES[name](), problem, 200, np.random.default_rng(5))
        results.append(res)
        assert np.isfinite(res.latency_us)
        assert res.latency_us == pytest.approx(float(model.objective(res.genome[None])[0]))
        if name != "exhaustive":
            assert res.evaluations <= 200
        # Memoised: no genome is scored twice.
        assert problem.evaluations + problem.rejected == problem.seen_count
    assert results[0].genome.tolist() == results[1].genome.tolist(), "same seed, same answer"
    if name == "exhaustive":
        assert results[0].latency_us == _true_optimum(model)


def test_ga_reaches_the_exhaustive_optimum(hw: HardwareProfile, add_spec: OperatorSpec,
                                           matmul_spec: OperatorSpec) -> None:
    for shape in ({"totalLength": 12_345_679}, {"totalLength": 65536}):
        model = ShapeModel(add_spec, hw, shape)
        best = _true_optimum(model)
        problem = Problem(model.sizes, model.objective,
                          model.nearest_indices(model.baseline_values()))
        res = run(STRATEGIES["ga"](), problem, 300, np.random.default_rng(0))
        assert res.latency_us <= best * 1.01
    # GA beats random search at equal budget on the large Matmul space (median of 5 seeds).
    model = ShapeModel(matmul_spec, hw, {"M": 2048, "N": 5120, "K": 3072})
    ga, rnd = [], []
    for seed in range(5):
        for name, out in (("ga", ga), ("random", rnd)):
            problem = Problem(model.sizes, model.objective)
            out.append(run(STRATEGIES[name](), problem, 1000,
                           np.random.default_rng(seed)).latency_us)
    assert np.median(ga) < np.median(rnd)


def test_no_valid_configuration_names_the_constraints(hw: HardwareProfile,
                                                      add_spec: OperatorSpec) -> None:
    tiny = hw.scaled(1.0)
    scalars = dict(tiny.scalars)
    scalars["ub_bytes"] = 1024  # no tile fits
    object.__setattr__(tiny, "scalars", scalars)
    with pytest.raises(NoValidConfigError, match=r"totalLength=4096: no valid configuration; "
                       r"of all 640 candidates: ub_fits fails all"):
        tune_shape(add_spec, tiny, {"totalLength": 4096}, TuneSettings("auto", 100, 0))


def test_results_entry_is_complete(hw: HardwareProfile, matmul_spec: OperatorSpec) -> None:
    entry = tune_shape(matmul_spec, hw, {"M": 512, "N": 4096, "K": 1024},
                       TuneSettings("ga", 500, 3))
    assert entry["strategy"] == "ga"
    assert set(entry["predicted"]["pipes_us"]) >= {"aic_mac_time_us", "aic_mte2_time_us"}
    assert entry["predicted"]["latency_us"] >= entry["predicted"]["roofline_us"]
    assert entry["baseline"]["valid"] and entry["speedup"] >= 1.0
    assert entry["tiling"]["cubeTilingData"]["baseM"] == entry["best"]["baseM"]
    assert 0 < entry["evaluations"] <= 500
    json.dumps(entry)  # serialisable


def test_json_roundtrip_has_no_wall_clock(tmp_path: Path, hw: HardwareProfile,
                                          add_spec: OperatorSpec) -> None:
    entry = tune_shape(add_spec, hw, {"totalLength": 1000}, TuneSettings("auto", 100, 0))
    text = json.dumps(entry)
    assert "time_s" not in text and "seconds" not in text
