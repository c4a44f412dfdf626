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
    # A first run reuses nothing: the rounds after the first find the earlier rounds' shapes
    # in the file, and those are this run's work, not reused.
    assert "reused" not in err
    code, out, err = run_cli(capsys, monkeypatch, "search", "rmsnorm", "--hw", "ascend910b3",
                             "--shape-range", RMS_RANGE, "-o", str(path), "--max-shapes", "20",
                             "--locked")
    assert code == 0 and "up to date" in out


def test_ranges_in_shape_files(tmp_path: Path) -> None:
    spec = load_spec("rmsnorm")
    yml = tmp_path / "s.yaml"
    # Quoted, a {min, max} mapping, and unquoted 1:30 (base 60 in YAML 1.1: it must stay 1:30).
    yml.write_text("shapes:\n  - {rows: 64, cols: 4096}\n  - {rows: '1:8192', cols: 4096}\n"
                   "  - {rows: {min: 2, max: 9}, cols: 1024}\n  - {rows: 1:30, cols: 64}\n")
    shapes, ranges = api.collect_shape_sources(spec, [yml])
    assert shapes == [{"rows": 64, "cols": 4096}]
    assert ranges == ["rows=1:8192,cols=4096", "rows=2:9,cols=1024", "rows=1:30,cols=64"]
    csv = tmp_path / "s.csv"
    csv.write_text("rows,cols\n8,64\n1:512,128\n")
    assert api.collect_shape_sources(spec, [csv], ["rows=3,cols=5"]) == (
        [{"rows": 8, "cols": 64}, {"rows": 3, "cols": 5}], ["rows=1:512,cols=128"])
    # Commands that take shapes but not ranges say so, naming the entry.
    with pytest.raises(AscendTuneError, match=r"s\.csv:3: a shape range \(rows=1:512,cols=128\)"):
        api.collect_shapes(spec, [csv])
    # A bad range is named by its file and line.
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {rows: 64, cols: 64}\n- {rows: '9:3', cols: 64}\n")
    with pytest.raises(AscendTuneError, match=r"bad\.yaml:2: shapes\.1 .*rows range 9:3 is empty"):
        api.collect_shape_sources(spec, [bad])
    worse = tmp_path / "worse.yaml"
    worse.write_text("- {rows: '1:8', cols: [64]}\n")
    with pytest.raises(AscendTuneError, match=r"worse\.yaml:1: shapes\.0: cols: \[64\] is "
                                              "neither an integer nor a range"):
        api.collect_shape_sources(spec, [worse])


def test_cli_tunes_the_ranges_of_a_shape_file(capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("- {rows: 4096, cols: 64}\n- {rows: '1:4096', cols: 64}\n")
    code, out, err = run_cli(capsys, monkeypatch, "search", "rmsnorm", "--hw", "ascend910b3",
                             "--shapes", str(shapes), "--dry-run")
    # The plan covers the listed shape and the range's log grid.
    assert code == 0 and "rows=4096,cols=64" in out and "rows=1,cols=64" in out
    path = tmp_path / "r.json"
    code, out, err = run_cli(capsys, monkeypatch, "search", "rmsnorm", "--hw", "ascend910b3",
                             "--shapes", str(shapes), "-o", str(path), "--max-shapes", "8")
    assert code == 0 and "Held out" in out, err
    tuned = {e["shape"]["rows"] for e in json.loads(path.read_text())["shapes"]}
    assert 4096 in tuned and 1 in tuned and len(tuned) > 2
    code, out, err = run_cli(capsys, monkeypatch, "search", "rmsnorm", "--hw", "ascend910b3",
                             "--shapes", str(shapes), "-o", str(path), "--max-shapes", "8",
                             "--locked")
    assert code == 0 and "up to date" in out
    code, out, err = run_cli(capsys, monkeypatch, "search", "rmsnorm", "--hw", "ascend910b3")
    assert code == 2 and "no shapes: pass --shapes FILE, --shape K=V,... or --shape-range" in err
