"""The core functions the CLI shell calls, used directly (no subprocess)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.calibrate import validation
from ascend_tune.calibrate.rows import parse_where
from ascend_tune.hardware import load_profile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.results import format as results
from ascend_tune.spec import load_spec
from ascend_tune.tune import run as search_run
from ascend_tune.tune.explain import explain
from ascend_tune.tune.shape import TuneSettings


def _head(spec: Any, hw: Any, budget: int = 50) -> dict[str, Any]:
    return results.header(spec.name, spec.sha256, spec.source_text, hw.name, hw.sha256,
                          hw.data, "auto", 0, budget, spec.variant)


def test_parse_where() -> None:
    assert parse_where(" Op Name = add ,block_dim=8") == {"Op Name": "add", "block_dim": "8"}
    for bad in ("a", "=1", "a=1,b"):
        with pytest.raises(AscendTuneError, match="expected COLUMN=VALUE pairs"):
            parse_where(bad)


def test_folds() -> None:
    order, tests = validation.folds(10, 0.3, None, 0)
    assert sorted(order.tolist()) == list(range(10)) and [len(t) for t in tests] == [3]
    _, tests = validation.folds(10, None, 3, 0)
    assert sorted(np.concatenate(tests).tolist()) == list(range(10))
    assert validation.folds(10, None, None, 0)[1] == []
    with pytest.raises(AscendTuneError, match="not both"):
        validation.folds(10, 0.5, 2, 0)
    with pytest.raises(AscendTuneError, match="no row to calibrate on"):
        validation.folds(1, 0.5, None, 0)
    with pytest.raises(AscendTuneError, match="between 2 and the 10 rows"):
        validation.folds(10, None, 11, 0)


class _Recorder(search_run.Progress):
    def __init__(self) -> None:
        self.events: list[Any] = []

    def opened(self, cache: search_run.CacheReport) -> None:
        self.events.append(cache)

    def shape_done(self, key: str, entry: dict[str, Any] | str, seconds: float) -> None:
        self.events.append(key)


def test_run_search_reports_and_caches(tmp_path: Path) -> None:
    spec, hw = load_spec("add"), load_profile("ascend910b3")
    shapes = [{"totalLength": 8192}, {"totalLength": 4096}]
    head = _head(spec, hw)
    settings = TuneSettings("auto", 50, 0)
    memory = search_run.run_search(spec, hw, shapes, settings, head)
    assert not memory.interrupted and memory.saved == 2 and not memory.failures
    rows = search_run.in_shape_order(memory.entries(), shapes)
    assert [r["shape"] for r in rows] == shapes

    out = tmp_path / "r.json"
    keys = {"totalLength=8192", "totalLength=4096"}
    assert not search_run.check_locked(out, head, keys, False).up_to_date
    first = _Recorder()
    search_run.run_search(spec, hw, shapes, settings, head, output=out, progress=first)
    assert first.events[0].reused == 0 and set(first.events[1:]) == keys
    again = _Recorder()
    run = search_run.run_search(spec, hw, shapes, settings, head, output=out, progress=again)
    assert again.events == [search_run.CacheReport(out, None, 0, 0, 2, 2)]
    assert run.saved == 0 and run.times == {}
    assert search_run.in_shape_order(run.entries(), shapes) == rows
    assert search_run.check_locked(out, head, keys, False).up_to_date
    changed = search_run.check_locked(out, _head(spec, hw, 51), keys, False)
    assert changed.invalidated is not None and changed.missing == 2
    with pytest.raises(AscendTuneError, match="--locked needs -o"):
        search_run.check_locked(None, head, keys, False)


def test_plan_and_explain() -> None:
    spec, hw = load_spec("add"), load_profile("ascend910b3")
    planned = search_run.plan(spec, hw, [{"totalLength": 4096}], "auto")
    assert planned[0].space_size == 640 and planned[0].strategy == "exhaustive"
    # The baseline for 4096 elements: 8 cores, tiles of 32, two buffers (add.yaml's formula).
    model = ShapeModel(spec, hw, {"totalLength": 4096})
    assert model.baseline_values() == {"blockDim": 8, "tileLength": 32, "bufferNum": 2}
    baseline_us = float(model.evaluate(np.array([[8, 32, 2]])).latency_us[0])
    assert planned[0].baseline_us == round(baseline_us, 6)  # rounded as results files are
    ex = explain(spec, hw, {"totalLength": 16777216})
    doc = ex.as_dict()
    assert doc["diagnosis"] == ex.diagnosis
    assert [s["stage"] for s in doc["stages"]] == ["copy_in_x", "copy_in_y", "add", "copy_out_z"]
    # 32 MiB in and 16 MiB out: the copies in are the longest pipe.
    assert ex.bound == "aiv_mte2_time_us"
    with pytest.raises(AscendTuneError, match="--set: unknown parameter 'tileLenght'"):
        explain(spec, hw, {"totalLength": 4096}, {"tileLenght": 1})
