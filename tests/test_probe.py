"""`ascend-tune probe`: configurations that make one device run determine the profile.

The loop is run in-process here (the stand-in device is the model on a profile with leaves
scaled); benchmarks/closed_loop.py runs it through `measure` with a subprocess per run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ascend_tune import api
from ascend_tune.calibrate import fit as cal
from ascend_tune.calibrate.coefficients import leaf, scale_leaves
from ascend_tune.calibrate.measurements import Measurement
from ascend_tune.emit.bundle import load_bundle
from ascend_tune.hardware import HardwareProfile, load_profile, load_profile_data
from ascend_tune.hil import candidates as cands
from ascend_tune.model.engine import ShapeModel
from ascend_tune.results import format as results
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec.shapes import shape_key
from ascend_tune.tune.shape import TuneSettings, tune_shape
from tests.test_cli import cli, one_line_error

SHAPES = [{"M": 1024, "N": 1024, "K": 1024}, {"M": 128, "N": 8192, "K": 4096},
          {"M": 4096, "N": 4096, "K": 512}]
# The stand-in: a part whose AIC GM port and HBM are slower than the profile says.
TRUTH = {("memory", "aic_gm_port_bytes_per_cycle"): 0.45,
         ("memory", "hbm_bandwidth_gbps"): 0.8,
         ("transfers", "gm_to_l1", "latency_cycles"): 1.6}


@pytest.fixture(scope="module")
def matmul() -> OperatorSpec:
    return api.load_spec("matmul")


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory, matmul: OperatorSpec,
             hw: HardwareProfile) -> Path:
    path = tmp_path_factory.mktemp("probe") / "r.json"
    api.search(matmul, hw, SHAPES, top_k=4, budget=400, output=path)
    return path


def _copy(src: Path, dst: Path) -> Path:
    dst.write_bytes(src.read_bytes())
    return dst


def _truth(hw: HardwareProfile) -> HardwareProfile:
    return load_profile_data(scale_leaves(hw.data, TRUTH), "truth")


def _measure_in_process(path: Path, spec: OperatorSpec, truth: HardwareProfile) -> None:
    """What `measure` records, with the truth's noise-free times (no subprocess)."""
    doc = results.read_all(path)
    for entry in doc["shapes"]:
        model = ShapeModel(spec, truth, entry["shape"])
        for i, cand in enumerate(cands.candidates(entry)):
            row = np.array([[cand["config"][p] for p in spec.params]], dtype=np.int64)
            t = float(model.evaluate(row).latency_us[0])
            entry = cands.record(entry, i, {"time_us": t, "runs_us": [t], "attempts": 1})
        doc["shapes"] = [entry if e["shape"] == entry["shape"] else e for e in doc["shapes"]]
    results.write_atomic(path, results.to_text(doc))


def _rows(path: Path, spec: OperatorSpec) -> list[Measurement]:
    return cands.read_measured_rows([path], spec)


def test_probes_are_candidates_that_determine_more(tmp_path: Path, searched: Path,
                                                   matmul: OperatorSpec) -> None:
    path = _copy(searched, tmp_path / "r.json")
    before = results.read_all(path)
    design = api.probe(path, 6)
    assert design.count == 6
    after = results.read_all(path)
    added = 0
    for old, new in zip(before["shapes"], after["shapes"], strict=True):
        # The search's candidates stay first and unchanged; probes follow, marked.
        assert new["candidates"][:len(old["candidates"])] == old["candidates"]
        probes = new["candidates"][len(old["candidates"]):]
        assert all(p["probe"] is True and p["predicted"]["latency_us"] > 0 for p in probes)
        configs = [tuple(c["config"].values()) for c in new["candidates"]]
        assert len(set(configs)) == len(configs), "a probe repeats a candidate"
        added += len(probes)
        assert new["best"] == old["best"], "probing changes no winner"
    assert added == 6
    assert design.before is not None and design.after is not None
    # The top-k alone determine a few coefficients (one pipe bounds them all); the probes
    # add several (test_one_run_identifies_the_device: what that buys).
    assert "aic_gm_port" not in design.before.kept
    assert set(design.before.kept) < set(design.after.kept)
    assert len(design.after.kept) >= len(design.before.kept) + 3
    # Deterministic: the same file and seed give the same probes.
    again = api.probe(_copy(searched, tmp_path / "again.json"), 6)
    assert again.added == design.added


def test_emit_leaves_unmeasured_probes_out_of_the_dispatch_table(
        tmp_path: Path, searched: Path) -> None:
    probed = _copy(searched, tmp_path / "probed.json")
    api.probe(probed, 6)

    def runners_up(path: Path) -> tuple[dict[str, int], ...]:
        return load_bundle(results.read_all(path), str(path)).runners_up

    assert runners_up(probed) == runners_up(searched) and runners_up(searched)


def test_two_probe_rounds_identify_the_device(tmp_path: Path, searched: Path,
                                              matmul: OperatorSpec, hw: HardwareProfile) -> None:
    truth = _truth(hw)
    alone = _copy(searched, tmp_path / "alone.json")
    _measure_in_process(alone, matmul, truth)
    probed = _copy(searched, tmp_path / "probed.json")
    api.probe(probed, 8)
    _measure_in_process(probed, matmul, truth)
    fit_alone = cal.fit(matmul, hw, _rows(alone, matmul), cal.FitOptions(holdout=0.0))
    first = cal.fit(matmul, hw, _rows(probed, matmul), cal.FitOptions(holdout=0.0))
    # At the shipped numbers the ND2NZ conversion, not the port, limits most GM->L1 copies:
    # the screen there cannot see the port. The fit's line starts find the basin where it
    # binds (the port alone at a share of its physical range explains the rows far better),
    # so even the searched candidates alone recover the device.
    for fitted in (fit_alone, first):
        assert "aic_gm_port" in fitted.fitted
        assert fitted.selection["chosen"].startswith(("aic_gm_port", "l2_bandwidth",
                                                      "gm_to_l1_bandwidth"))
        for path, factor in TRUTH.items():
            got = leaf(fitted.data, path)["value"] / leaf(hw.data, path)["value"]
            assert got == pytest.approx(factor, rel=0.1), path
    api.probe(probed, 8, hw=load_profile_data(first.data, "calibrated"))
    _measure_in_process(probed, matmul, truth)
    fit = cal.fit(matmul, hw, _rows(probed, matmul), cal.FitOptions(holdout=0.0))
    assert "aic_gm_port" in fit.fitted
    for path, factor in TRUTH.items():
        got = leaf(fit.data, path)["value"] / leaf(hw.data, path)["value"]
        assert got == pytest.approx(factor, rel=0.1), path
    # Measured probes are rows like any candidate; a probe that measured fastest would win.
    doc = results.read_all(probed)
    for entry in doc["shapes"]:
        times = [c["measured"]["time_us"] for c in entry["candidates"]]
        assert entry["measured"]["time_us"] == min(times)
    # The measure summary (`measure --json`, its table) marks them.
    summary = api.measure_summary(doc["shapes"])
    assert sum(c.get("probe", False) for s in summary for c in s["candidates"]) == 16


def test_probe_designed_at_another_profile_stays_valid_on_the_files(
        tmp_path: Path, searched: Path) -> None:
    # Designed at a chip with more cores (910B1: 24 AIC / 48 AIV): every probe must still be a
    # valid candidate on the file's own profile (910B3: measure and emit re-check them there).
    path = _copy(searched, tmp_path / "r.json")
    design = api.probe(path, 5, hw=api.load_profile("ascend910b1"))
    assert design.count > 0
    doc = results.read_all(path)
    assert load_bundle(doc, str(path)).runners_up  # loads: every candidate re-checked
    plan = api.plan_measure(path, "true")  # checks the file as measure does
    assert plan.spec.name == "MatmulCustom"


def test_probe_command(tmp_path: Path, searched: Path) -> None:
    path = _copy(searched, tmp_path / "r.json")
    proc = cli("probe", str(path), "--count", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    assert doc["added"] == 3 and sum(len(v) for v in doc["probes"].values()) == 3
    assert set(doc["candidates_alone"]["determined"]) <= set(doc["with_probes"]["determined"])
    # Every determined coefficient has a planned precision; none is negative or zero.
    planned = doc["planned_precision"]
    assert planned["noise"] == 0.01
    assert set(planned["percent95"]) == set(doc["with_probes"]["determined"])
    assert all(v is None or v > 0 for v in planned["percent95"].values())
    text = cli("probe", str(path), "--count", "2")
    assert text.returncode == 0, text.stderr
    assert "determined with the probes:" in text.stdout
    assert "planned precision (95 %, at 1 % noise per measured row): " in text.stdout
    assert "ascend-tune measure" in text.stdout
    one_line_error(cli("probe", str(path), "--count", "-1"), "--count -1")
    one_line_error(cli("probe", str(tmp_path / "missing.json")), "missing.json")
    one_line_error(cli("probe", str(path), "--exclude", "nonsense"), "nonsense")


def test_probe_adds_shapes_where_the_files_cannot_determine_a_coefficient(
        tmp_path: Path, searched: Path, matmul: OperatorSpec) -> None:
    plain = api.probe(_copy(searched, tmp_path / "plain.json"), 6)
    path = _copy(searched, tmp_path / "r.json")
    design = api.probe(path, 6, shapes=2)
    # The file's shapes get the same probes; the new shapes come on top.
    assert design.added == plain.added
    assert 1 <= len(design.new_shapes) <= 2
    assert design.after is not None and plain.after is not None
    assert set(plain.after.kept) < set(design.after.kept)
    doc = results.read_all(path)
    by_key = {shape_key(e["shape"]): e for e in doc["shapes"]}
    assert len(doc["shapes"]) == len(SHAPES) + len(design.new_shapes)
    for new in design.new_shapes:
        # Each new shape newly determines something, says why it was a candidate, and is an
        # entry as search writes it (tuned at the file's settings, top-k 4), probes after.
        assert new.determines and new.why.startswith(("smaller", "misaligned"))
        assert new.key not in {shape_key(s) for s in SHAPES}
        entry = by_key[new.key]
        tuned = tune_shape(matmul, load_profile("ascend910b3"), new.shape,
                           TuneSettings("auto", 400, 0, 4))
        assert entry["best"] == tuned["best"]
        probes = [c for c in entry["candidates"] if c.get("probe")]
        assert [c["config"] for c in probes] == new.configs and probes
        assert entry["candidates"][:len(tuned["candidates"])] == tuned["candidates"]
    assert design.document()["new_shapes"][0]["determines"] == design.new_shapes[0].determines
    # Deterministic.
    again = api.probe(_copy(searched, tmp_path / "again.json"), 6, shapes=2)
    assert [(s.shape, s.configs) for s in again.new_shapes] == \
        [(s.shape, s.configs) for s in design.new_shapes]


def test_probe_shapes_option(tmp_path: Path, searched: Path) -> None:
    path = _copy(searched, tmp_path / "r.json")
    proc = cli("probe", str(path), "--count", "2", "--shapes", "1")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"new shape M=\d+,N=\d+,K=\d+: (smaller|misaligned) .*; determines \w+",
                     proc.stdout), proc.stdout
    one_line_error(cli("probe", str(path), "--shapes", "-1"), "--shapes -1")
