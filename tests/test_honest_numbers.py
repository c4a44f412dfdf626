"""Honest numbers where the closed loop reports (issue 26, part 5): `validate --kfold` pools the
held-out rows (the maximum is the largest held-out error, not a mean of per-fold maxima), rank
statistics are undefined (n/a, null) for folds too small to rank, and `calibrate` refuses a
fitted number at its bound or beyond a physical limit unless --force."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from ascend_tune.calibrate import fit as cal
from ascend_tune.calibrate.guard import refusals
from ascend_tune.calibrate.validation import pooled_errors
from ascend_tune.hardware import HardwareProfile, load_profile
from ascend_tune.hardware.limits import physical_problems
from ascend_tune.spec import OperatorSpec
from tests.test_calibrate import _perturbed, _rows, _synthetic
from tests.test_cli import cli, one_line_error

SMALL_TO_LARGE = [{"totalLength": 1 << k} for k in range(12, 26)]


def test_rank_statistics_are_undefined_for_one_row_or_no_distinct_times() -> None:
    one = cal.error_stats(np.array([2.0]), np.array([1.0]))
    assert one.spearman is None and one.pairwise_agreement is None
    assert one.as_dict()["spearman"] is None and one.max_error == pytest.approx(1.0)
    tied = cal.error_stats(np.array([1.0, 2.0]), np.array([3.0, 3.0]))
    assert tied.pairwise_agreement is None  # no pair of distinct measured times to order


def test_pooled_errors_take_the_largest_row_and_rank_only_folds_that_can() -> None:
    # A 3-row fold with one row 35.7 % off, and two 1-row folds 5 % off: the mean of the
    # per-fold maxima would say 15.2 %; the held-out maximum is 35.7 %.
    folds = [cal.Errors(3, 0.15, 0.357, 0.5, 2 / 3, 0.1), cal.Errors(1, 0.05, 0.05, None, None,
                                                                      -0.05),
             cal.Errors(1, 0.05, 0.05, None, None, 0.05)]
    pooled = pooled_errors(folds)
    assert pooled["max_error"] == 0.357
    assert pooled["mape"] == pytest.approx((3 * 0.15 + 0.05 + 0.05) / 5)
    assert pooled["bias"] == pytest.approx(0.3 / 5)
    assert pooled["spearman"] == 0.5 and pooled["pairwise_agreement"] == pytest.approx(2 / 3)
    assert pooled["ranked_folds"] == 1 and pooled["n"] == 5
    none = pooled_errors(folds[1:])
    assert none["spearman"] is None and none["pairwise_agreement"] is None
    assert none["ranked_folds"] == 0


def test_kfold_with_one_row_folds_reports_rank_statistics_as_undefined(
        tmp_path: Path, hw: HardwareProfile, add_spec: OperatorSpec) -> None:
    truth = _perturbed(hw, {"vector_time": 1.3, "head_overhead": 1.5})
    shapes = [{"totalLength": 1 << k} for k in range(14, 24, 2)]
    path = _synthetic(tmp_path, add_spec, truth, shapes)
    args = ("validate", str(path), "--spec", "add", "--hw", "ascend910b3", "--kfold", "5")
    proc = cli(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    held = json.loads(proc.stdout)["held_out"]
    assert held["folds"] == 5 and held["rows"] == 5 and held["method"].startswith("by row")
    for side in ("before", "after"):
        assert held[side]["spearman"] is None and held[side]["pairwise_agreement"] is None
        assert held[side]["ranked_folds"] == 0
        # The largest held-out error of any row, and MAPE over every held-out row.
        per_row = [f[side]["max_error"] for f in held["per_fold"]]
        assert held[side]["max_error"] == max(per_row)
        assert held[side]["mape"] == pytest.approx(np.mean(per_row), abs=1e-6)
        assert all(f[side]["spearman"] is None for f in held["per_fold"])
    text = cli(*args)
    assert text.returncode == 0, text.stderr
    table = text.stdout[text.stdout.index("held-out error"):text.stdout.index("in-sample")]
    assert "no fold can rank" in table and "n/a" in table and "1.000" not in table
    assert f"{held['before']['max_error']:.1%}" in table


def test_calibrate_refuses_a_scale_at_its_bound_unless_forced(
        tmp_path: Path, hw: HardwareProfile, add_spec: OperatorSpec) -> None:
    # The launch costs 80x the profile's (160 us): the fit stops at the physical range's
    # 100 us (x50).
    path = _synthetic(tmp_path, add_spec, _perturbed(hw, {"head_overhead": 80.0}),
                      SMALL_TO_LARGE, per_shape=2)
    out = tmp_path / "cal.yaml"
    args = ("calibrate", str(path), "--spec", "add", "--hw", "ascend910b3", "-o", str(out),
            "--holdout", "0")
    one_line_error(cli(*args), "calibration refused, nothing written: head_base: "
                               "launch.head_base_us fitted to 100, x50 of the sourced 2: at the "
                               "fit's bound x50")
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    forced = cli(*args, "--force")
    assert forced.returncode == 0, forced.stderr
    assert "written with --force: head_base" in forced.stderr
    doc = yaml.safe_load(out.read_text())
    assert any(w.startswith("written with --force: head_base")
               for w in doc["calibration"]["warnings"])
    assert load_profile(str(out)).data["launch"]["head_base_us"]["value"] == 100


def test_calibrate_refuses_a_number_beyond_a_physical_limit(
        tmp_path: Path, hw: HardwareProfile, add_spec: OperatorSpec) -> None:
    # HBM x4.5 is within the fit's bounds, but 7 200 GB/s is above the 7 000 GB/s of the L2
    # that all GM traffic passes through.
    rows = _rows(_synthetic(tmp_path, add_spec, _perturbed(hw, {"hbm_bandwidth": 4.5}),
                            SMALL_TO_LARGE, per_shape=2), add_spec)
    result = cal.fit(add_spec, hw, rows, cal.FitOptions(holdout=0))
    assert result.scales["hbm_bandwidth"] == pytest.approx(4.5, rel=0.02)
    assert refusals(result) == [
        "physical limit: memory.hbm_bandwidth_gbps = "
        f"{result.data['memory']['hbm_bandwidth_gbps']['value']:.6g} exceeds 7000 "
        "(memory.l2_bandwidth_gbps: GM traffic passes through L2)"]
    # Every built-in profile is within its own physical limits.
    for name in ("ascend310p3", "ascend910b1", "ascend910b2", "ascend910b3", "ascend910b4",
                 "ascend950pr", "ascend950pr_9589"):
        assert physical_problems(load_profile(name).data) == [], name


def test_a_transfer_curve_above_its_core_port_is_not_refused(hw: HardwareProfile) -> None:
    # The model takes the smaller of the two: a curve above the port never binds, and a
    # device's port below the msKPP single-core curve is what a calibration may find.
    data = cal.apply(hw.data, {"gm_to_l1_bandwidth": 2.0, "aic_gm_port": 0.3})
    assert physical_problems(data) == []
