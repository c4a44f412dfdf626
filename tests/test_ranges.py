"""Tuning a range of shapes: parsing untrusted range texts, the grid and draws, the rounds
that grow the table until the held-out dispatch is within target, the cache and --locked."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ascend_tune import api
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.spec import load_spec
from ascend_tune.tune.ranges import parse_range
from tests.test_report import run_cli

RMS_RANGE = "rows=1:8192,cols=4096"


@pytest.mark.parametrize(("text", "message"), [
    ("rows=1:8192", "shape misses cols"),
    ("rows=9:3,cols=4096", "rows range 9:3 is empty"),
    ("rows=1:x,cols=4096", "rows=1:x is not an integer or LO:HI"),
    ("rows=1:8,rows=2,cols=64", "rows is given twice"),
    ("rows=0:8,cols=64", "rows"),  # below the spec's minimum
    ("rowz=1:8,cols=64", "unknown shape variable 'rowz'"),
    ("rows", "expected NAME=LO:HI"),
])
def test_bad_ranges_are_one_line_errors(text: str, message: str) -> None:
    spec = load_spec("rmsnorm")
    with pytest.raises(AscendTuneError, match=message) as err:
        parse_range(spec, text)
    assert "\n" not in str(err.value)


def test_grid_and_draws() -> None:
    r = parse_range(load_spec("rmsnorm"), RMS_RANGE)
    assert r.ranged == ["rows"] and r.text() == RMS_RANGE
    grid = r.grid()
    rows = [s["rows"] for s in grid]
    assert rows[0] == 1 and rows[-1] == 8192 and rows == sorted(set(rows))
    assert all(s["cols"] == 4096 for s in grid)
    keys = {f"rows={s['rows']},cols=4096" for s in grid}
    a = r.draw(np.random.default_rng(1), 20, keys)
    b = r.draw(np.random.default_rng(1), 20, keys)
    assert a == b and len(a) == 20 and len({tuple(s.values()) for s in a}) == 20
    assert all(1 <= s["rows"] <= 8192 and f"rows={s['rows']},cols=4096" not in keys for s in a)


def test_range_search_reaches_the_target_on_held_out_shapes(tmp_path: Path) -> None:
    spec = load_spec("rmsnorm")
    hw = api.load_profile("ascend910b3")
    out = tmp_path / "r.json"
    run, outcome = api.search_range(spec, hw, [RMS_RANGE], target=1.03, max_shapes=40,
                                    output=out, seed=3)
    held = outcome.held_out
    assert held is not None and held.ratios
    # Stops at the target (held-out mean) or at the budget, and says which.
    assert (held.mean() <= 1.03 and "within the target" in outcome.stopped) or (
        len(outcome.shapes) >= 40 and "budget" in outcome.stopped)
    assert all(r >= 1.0 for r in held.ratios)
    # Every tuned shape is in the file, each round's shapes joined the table.
    doc = json.loads(out.read_text())
    assert {e["shape"]["rows"] for e in doc["shapes"]} == {s["rows"] for s in outcome.shapes}
    assert len(run.entries()) == len(outcome.shapes)
    # The held-out figure is honest: a fresh draw against the final table is no worse than
    # the target by much (the table only grew since).
    r = parse_range(spec, RMS_RANGE)
    tuned = {f"rows={s['rows']},cols=4096" for s in outcome.shapes}
    fresh = r.draw(np.random.default_rng(99), 12, tuned)
    optimum = api.tune(spec, hw, fresh, seed=3)
    ratios = [api.select(doc, s).latency_us / e["predicted"]["latency_us"]
              for s, e in zip(fresh, optimum, strict=True)]
    assert float(np.mean(ratios)) <= 1.06
    # Same inputs and seed: the same shapes and a byte-identical results file.
    again = tmp_path / "again.json"
    api.search_range(spec, hw, [RMS_RANGE], target=1.03, max_shapes=40, output=again, seed=3)
    assert again.read_bytes() == out.read_bytes()
    # --locked: up to date as written, and stale once a shape is missing.
    lock = api.check_locked(spec, hw, [], out, seed=3, ranges=[RMS_RANGE], target=1.03,
                            max_shapes=40)
    assert lock.up_to_date and lock.shapes == len(outcome.shapes)
    doc["shapes"] = doc["shapes"][:-1]
    out.write_text(json.dumps(doc))
    assert not api.check_locked(spec, hw, [], out, seed=3, ranges=[RMS_RANGE], target=1.03,
                                max_shapes=40).up_to_date


def test_cli_shape_range(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                         tmp_path: Path) -> None:
    code, out, err = run_cli(capsys, monkeypatch, "search", "rmsnorm", "--hw", "ascend910b3",
                             "--shape-range", RMS_RANGE, "--dry-run")
    assert code == 0 and "rows=8192,cols=4096" in out and "rows=1,cols=4096" in out
    code, out, err = run_cli(capsys, monkeypatch, "search", "rmsnorm", "--hw", "ascend910b3",
                             "--shape-range", "rows=5:1,cols=4096")
    assert code == 2 and "rows range 5:1 is empty" in err
    code, out, err = run_cli(capsys, monkeypatch, "search", "rmsnorm", "--hw", "ascend910b3",
                             "--shape-range", RMS_RANGE, "--target", "0.5")
    assert code == 2 and "--target must be at least 1.0" in err
    path = tmp_path / "r.json"
    code, out, err = run_cli(capsys, monkeypatch, "search", "rmsnorm", "--hw", "ascend910b3",
                             "--shape-range", RMS_RANGE, "-o", str(path), "--max-shapes", "20")
    assert code == 0 and "Held out" in out and path.exists()
    code, out, err = run_cli(capsys, monkeypatch, "search", "rmsnorm", "--hw", "ascend910b3",
                             "--shape-range", RMS_RANGE, "-o", str(path), "--max-shapes", "20",
                             "--locked")
    assert code == 0 and "up to date" in out
