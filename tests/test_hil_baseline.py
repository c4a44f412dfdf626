"""Measured speedups (issue 26, part 6): `measure` also measures each shape's baseline
configuration (default; --no-baseline skips it), the results file keeps it, the measure table
and `report` show the measured speedup beside the predicted one, and `report` reads the
measured candidates a results file holds. The device is the stand-in of test_hil.py."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from ascend_tune.hardware import HardwareProfile
from ascend_tune.hil import candidates as cands
from ascend_tune.results import format as results
from ascend_tune.spec import OperatorSpec, load_spec
from ascend_tune.spec.shapes import shape_key
from tests.npu_standin import standin
from tests.test_hil import cli, counted, search, standin_command

SHAPES = [{"totalLength": 65536}, {"totalLength": 1 << 20}]
TOP_K = 3


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory, hw: HardwareProfile) -> Path:
    path = tmp_path_factory.mktemp("baseline") / "add.json"
    search(path, load_spec("add"), hw, SHAPES, top_k=TOP_K)
    doc = results.read_all(path)
    for entry in doc["shapes"]:  # the baselines are not candidates: each needs its own run
        assert entry["baseline"]["valid"] and cands.same_as_baseline(entry) is None
    return path


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory, searched: Path
             ) -> tuple[Path, Any, list[str], str]:
    """``searched`` measured with the default --baseline, once as JSON and once printed."""
    folder = tmp_path_factory.mktemp("measured_baseline")
    path = folder / "add.json"
    shutil.copy(searched, path)
    counter = folder / "calls.txt"
    proc = cli("measure", str(path), "--run", standin_command(csv=False), "--repeat", "1",
               "--json", env={"STANDIN_COUNTER": str(counter)})
    assert proc.returncode == 0, proc.stderr
    again = cli("measure", str(path), "--run", standin_command(csv=False), "--repeat", "1",
                env={"STANDIN_COUNTER": str(counter)})
    assert again.returncode == 0, again.stderr
    return path, json.loads(proc.stdout), counted(counter), again.stdout


def _time(entry: dict[str, Any], config: dict[str, int]) -> float:
    return standin.median_time(load_spec("add"), entry["shape"], config, 1)


def test_the_baseline_is_measured_and_the_measured_speedup_recorded(
        measured: tuple[Path, Any, list[str], str]) -> None:
    path, summary, calls, _text = measured
    # One run per candidate and one per baseline; the second measure ran nothing.
    assert len(calls) == len(SHAPES) * (TOP_K + 1)
    assert summary["measured"] == len(SHAPES) * TOP_K
    assert summary["baselines_measured"] == len(SHAPES)
    for entry, item in zip(results.read_all(path)["shapes"], summary["shapes"], strict=True):
        base = entry["baseline"]
        assert base["measured"]["time_us"] == pytest.approx(_time(entry, base["config"]),
                                                            rel=1e-3)
        win = entry["measured"]
        assert win["baseline_us"] == base["measured"]["time_us"]
        assert win["speedup"] == pytest.approx(base["measured"]["time_us"] / win["time_us"],
                                               rel=1e-6)
        assert item["baseline"]["measured_us"] == base["measured"]["time_us"]
        assert item["speedup"] == {"predicted": entry["speedup"], "measured": win["speedup"]}
        assert entry["speedup"] == pytest.approx(
            base["latency_us"] / entry["predicted"]["latency_us"], rel=1e-5)


def test_the_measure_table_shows_measured_beside_predicted_speedup(
        measured: tuple[Path, Any, list[str], str]) -> None:
    path, _summary, _calls, text = measured
    assert "speedup of the measured winner over the spec's baseline" in text
    assert "predicted speedup" in text and "measured speedup" in text
    table = text[text.index("speedup of the measured winner"):]
    for entry in results.read_all(path)["shapes"]:
        line = next(x for x in table.splitlines() if f" {shape_key(entry['shape'])} " in x)
        assert f"{entry['speedup']:.2f}x" in line
        assert f"{entry['measured']['speedup']:.2f}x" in line
        assert f"{entry['baseline']['measured']['time_us']:.2f}" in line


def test_no_baseline_skips_it_and_a_later_run_measures_only_the_baselines(
        tmp_path: Path, searched: Path) -> None:
    path = tmp_path / "add.json"
    shutil.copy(searched, path)
    counter = tmp_path / "calls.txt"
    env = {"STANDIN_COUNTER": str(counter)}
    proc = cli("measure", str(path), "--run", standin_command(csv=False), "--repeat", "1",
               "--no-baseline", env=env)
    assert proc.returncode == 0, proc.stderr
    assert len(counted(counter)) == len(SHAPES) * TOP_K
    assert "measured speedup" not in proc.stdout  # nothing of the baselines measured
    for entry in results.read_all(path)["shapes"]:
        assert "measured" not in entry["baseline"] and "speedup" not in entry["measured"]
    proc = cli("measure", str(path), "--run", standin_command(csv=False), "--repeat", "1",
               "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["measured"] == 0 and out["baselines_measured"] == len(SHAPES)
    assert len(counted(counter)) == len(SHAPES) * (TOP_K + 1)
    baseline_calls = [json.loads(re.search(r"config=(\{.*?\})", line).group(1))  # type: ignore[union-attr]
                      for line in counted(counter)[-len(SHAPES):]]
    assert baseline_calls == [e["baseline"]["config"] for e in results.read_all(path)["shapes"]]
    assert all("speedup" in e["measured"] for e in results.read_all(path)["shapes"])


def test_a_baseline_that_is_a_candidate_is_not_run_twice(tmp_path: Path,
                                                         searched: Path) -> None:
    path = tmp_path / "add.json"
    doc = results.read_all(searched)
    entry = doc["shapes"][0]
    entry["candidates"][2]["config"] = dict(entry["baseline"]["config"])
    path.write_text(results.to_text(doc))
    counter = tmp_path / "calls.txt"
    proc = cli("measure", str(path), "--run", standin_command(csv=False), "--repeat", "1",
               "-q", env={"STANDIN_COUNTER": str(counter)})
    assert proc.returncode == 0, proc.stderr
    assert len(counted(counter)) == len(SHAPES) * TOP_K + 1  # the other shape's baseline
    first = results.read_all(path)["shapes"][0]
    assert first["baseline"]["measured"]["candidate"] == 2
    assert first["baseline"]["measured"]["time_us"] == (
        first["candidates"][2]["measured"]["time_us"])
    # Its row is the candidate's: calibration does not count the same run twice.
    rows = cands.measured_rows(results.read_all(path), load_spec("add"), str(path))
    assert len(rows) == len(SHAPES) * TOP_K + 1


def test_a_failed_baseline_is_reported_and_retried(tmp_path: Path, searched: Path) -> None:
    path = tmp_path / "add.json"
    shutil.copy(searched, path)
    base = results.read_all(path)["shapes"][1]["baseline"]["config"]
    proc = cli("measure", str(path), "--run", standin_command(csv=False), "--repeat", "1",
               "--retries", "0", "-q", env={"STANDIN_FAIL": json.dumps(base)})
    assert proc.returncode == 1
    assert f"shape {shape_key(SHAPES[1])} baseline: exit status 3" in proc.stderr
    entry = results.read_all(path)["shapes"][1]
    assert "exit status 3" in entry["baseline"]["measured"]["error"]
    assert "speedup" not in entry["measured"]  # the winner stands; its speedup is unknown
    proc = cli("measure", str(path), "--run", standin_command(csv=False), "--repeat", "1",
               "--retry-failed", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["baselines_measured"] == 1
    assert "speedup" in results.read_all(path)["shapes"][1]["measured"]


def test_an_edited_baseline_is_refused_in_one_line(tmp_path: Path, searched: Path) -> None:
    path = tmp_path / "add.json"
    doc = results.read_all(searched)
    doc["shapes"][0]["baseline"]["config"]["tileLength"] += 32
    path.write_text(results.to_text(doc))
    before = path.read_bytes()
    proc = cli("measure", str(path), "--run", "echo 1")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "baseline" in proc.stderr and "stale or was edited" in proc.stderr
    assert path.read_bytes() == before


def test_calibrate_and_validate_read_the_measured_baselines(
        measured: tuple[Path, Any, list[str], str]) -> None:
    path = measured[0]
    proc = cli("validate", "--from-results", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    rows = [p["row"] for p in json.loads(proc.stdout)["points"]]
    assert len(rows) == len(SHAPES) * (TOP_K + 1)
    assert sum(r.endswith(" baseline") for r in rows) == len(SHAPES)


def test_report_shows_measured_speedups_and_reads_the_results_measurements(
        measured: tuple[Path, Any, list[str], str], searched: Path, tmp_path: Path,
        add_spec: OperatorSpec) -> None:
    path = measured[0]
    page = tmp_path / "report.html"
    proc = cli("report", str(path), "-o", str(page), "--dispatch-shapes", "0", "--charts", "0")
    assert proc.returncode == 0, proc.stderr
    html = page.read_text()
    text = re.sub(r"<[^>]+>", " ", html)
    assert "speedup, measured" in html and "tuned us, measured" in html
    assert "2 of 2 shape(s) measured on a device" in text
    geomean = math.exp(sum(math.log(e["measured"]["speedup"])
                           for e in results.read_all(path)["shapes"]) / len(SHAPES))
    assert f"(measured {geomean:.2f}x)" in text  # the summary table
    for entry in results.read_all(path)["shapes"]:
        row = html[html.index(f">{shape_key(entry['shape'])}</a>"):]
        row = row[:row.index("</tr>")]
        assert f"{entry['measured']['speedup']:.2f}x" in row
        assert f"{entry['speedup']:.2f}x" in row
    # The measured candidates and baselines are the fidelity section's rows, unasked.
    assert 'id="fidelity"' in html
    assert f"{len(SHAPES) * (TOP_K + 1)} row(s) compared" in text
    # An unmeasured results file with the measured one as --measurements: the same rows.
    other = tmp_path / "other.html"
    proc = cli("report", str(searched), "-o", str(other), "--measurements", str(path),
               "--dispatch-shapes", "0", "--charts", "0")
    assert proc.returncode == 0, proc.stderr
    other_text = re.sub(r"<[^>]+>", " ", other.read_text())
    assert f"{len(SHAPES) * (TOP_K + 1)} row(s) compared" in other_text
    assert "speedup, measured" not in other.read_text()  # its own shapes were not measured


def test_a_hand_edited_measured_baseline_is_refused_in_one_line(
        measured: tuple[Path, Any, list[str], str], tmp_path: Path) -> None:
    doc = results.read_all(measured[0])
    doc["shapes"][0]["baseline"]["measured"]["time_us"] = -1.0
    path = tmp_path / "edited.json"
    path.write_text(results.to_text(doc))
    for args, message in (
            (("report", str(path), "-o", str(tmp_path / "r.html"), "--dispatch-shapes", "0"),
             "baseline.measured.time_us must be a finite positive number, got -1.0"),
            (("validate", "--from-results", str(path)),
             "baseline: measured time -1.0 is not a finite positive number")):
        proc = cli(*args)
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "r.html").exists()


def test_search_summary_shows_the_measured_speedup(
        measured: tuple[Path, Any, list[str], str], tmp_path: Path) -> None:
    path = tmp_path / "add.json"
    shutil.copy(measured[0], path)
    proc = cli("search", "add", "--hw", "ascend910b3", "--top-k", str(TOP_K), "--budget", "500",
               *[a for s in SHAPES for a in ("--shape", shape_key(s))], "-o", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "reused" in proc.stderr and "measured speedup" in proc.stdout
    for entry in results.read_all(path)["shapes"]:
        line = next(x for x in proc.stdout.splitlines() if f" {shape_key(entry['shape'])} " in x)
        assert f"{entry['speedup']:.2f}x" in line
        assert f"{entry['measured']['speedup']:.2f}x" in line


def test_fresh_measures_the_baselines_again(measured: tuple[Path, Any, list[str], str],
                                            tmp_path: Path) -> None:
    path = tmp_path / "add.json"
    shutil.copy(measured[0], path)
    counter = tmp_path / "calls.txt"
    proc = cli("measure", str(path), "--run", standin_command(csv=False), "--repeat", "1",
               "--fresh", "--json", env={"STANDIN_COUNTER": str(counter)})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["measured"], out["baselines_measured"]) == (len(SHAPES) * TOP_K, len(SHAPES))
    assert len(counted(counter)) == len(SHAPES) * (TOP_K + 1)
    # The stand-in's noise is seeded by shape, configuration and run: the same times again.
    assert [e["measured"] for e in results.read_all(path)["shapes"]] == [
        e["measured"] for e in results.read_all(measured[0])["shapes"]]
