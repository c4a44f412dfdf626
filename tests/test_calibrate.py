from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ascend_tune import calibrate as cal
from ascend_tune.hardware import HardwareProfile, load_profile, load_profile_data
from ascend_tune.measurements import load_manifest, read_files
from ascend_tune.spec import OperatorSpec
from tests.conftest import DATA

M = DATA / "measurements"


def test_op_summary_layouts_and_bad_rows(matmul_spec: OperatorSpec) -> None:
    manifest = load_manifest(M / "manifest.yaml")
    report = read_files([M / "op_summary_block_dim.csv", M / "op_summary_block_num.csv",
                   M / "kernel_details.csv"], matmul_spec, manifest)
    got = [(r.shape, r.time_us, r.block_dim) for r in report.rows]
    assert got == [({"M": 1024, "N": 4096, "K": 2048}, 120.5, 20),
                   ({"M": 512, "N": 4096, "K": 1024}, 61.25, 16),
                   ({"M": 2048, "N": 4096, "K": 4096}, 233.7, 20)]
    first, second = report.rows[0], report.rows[1]
    # Block Dim vs Block Num and aic_mac_* vs aic_cube_* are the same columns.
    assert first.pipes_us["aic_mac_time_us"] == 80.1
    assert second.pipes_us["aic_mac_time_us"] == 35.5
    assert second.pipes_us["aic_mte2_time_us"] == 41.7
    # Manifest: default config, per-shape override, free parameters.
    assert first.config == {"baseM": 128, "baseN": 256, "baseK": 64, "stepKa": 4, "stepKb": 4}
    assert second.config["baseN"] == 128
    assert first.free == ("mDim", "nDim")
    reasons = sorted(s.split(": ", 1)[1] for s in report.skipped)
    assert len(report.skipped) == 3
    assert reasons[0].startswith("Input Shapes has no tensor 1")
    assert any("could not convert string to float: 'oops'" in r for r in reasons)
    assert any("time -3.0 is not positive" in r for r in reasons)
    assert any(s.startswith(f"{M / 'op_summary_block_dim.csv'}:3: ") for s in report.skipped)


def test_pipe_utilization_takes_the_slowest_block(matmul_spec: OperatorSpec) -> None:
    report = read_files([M / "PipeUtilization.csv"], matmul_spec,
                        load_manifest(M / "manifest.yaml"))
    (row,) = report.rows
    assert row.shape == {"M": 1024, "N": 2048, "K": 1024}
    assert row.time_us == 51.9
    assert row.pipes_us["aic_mac_time_us"] == 30.8
    assert row.pipes_us["aic_mte2_time_us"] == 34.9
    assert row.config["dbL0C"] == 2


def test_pipe_utilization_without_manifest_is_reported(matmul_spec: OperatorSpec) -> None:
    report = read_files([M / "PipeUtilization.csv"], matmul_spec, load_manifest(None))
    assert report.rows == []
    assert "the manifest needs files:" in report.skipped[0]


def test_plain_layout(add_spec: OperatorSpec) -> None:
    report = read_files([M / "plain.csv"], add_spec, load_manifest(None))
    assert [(r.shape["totalLength"], r.config, r.time_us) for r in report.rows] == [
        (1048576, {"blockDim": 40, "tileLength": 4096, "bufferNum": 2}, 12.5),
        (1048576, {"blockDim": 8, "bufferNum": 2}, 30.0),
        (4096, {}, 2.4)]
    assert report.rows[0].pipes_us == {"aiv_mte2_time_us": 9.1}
    assert report.skipped == [f"{M / 'plain.csv'}:6: could not convert string to float: 'abc'"]


def test_error_metrics_hand_worked() -> None:
    e = cal.error_stats(np.array([110.0, 190.0, 330.0]), np.array([100.0, 200.0, 300.0]))
    # |10|/100, |10|/200, |30|/300 -> mean 0.0833; order preserved -> Spearman 1, pairs 100 %.
    assert e.mape == pytest.approx((0.1 + 0.05 + 0.1) / 3)
    assert e.max_error == pytest.approx(0.1)
    assert e.spearman == pytest.approx(1.0) and e.pairwise_agreement == 1.0
    swapped = cal.error_stats(np.array([2.0, 1.0, 3.0]), np.array([1.0, 2.0, 3.0]))
    assert swapped.pairwise_agreement == pytest.approx(2 / 3)
    assert swapped.spearman == pytest.approx(0.5)


def _synthetic(tmp_path: Path, spec: OperatorSpec, truth: HardwareProfile) -> Path:
    rng = np.random.default_rng(4)
    lines = ["totalLength,blockDim,tileLength,bufferNum,time_us,aiv_mte2_time_us,"
             "aiv_mte3_time_us,aiv_vec_time_us"]
    from ascend_tune.engine import ShapeModel
    for _ in range(24):
        n = int(np.exp(rng.uniform(np.log(5e4), np.log(5e7))))
        model = ShapeModel(spec, truth, {"totalLength": n})
        while True:
            cfg = {"blockDim": int(rng.integers(1, 41)),
                   "tileLength": int(2 ** rng.integers(9, 14)),
                   "bufferNum": int(rng.integers(1, 3))}
            ev = model.evaluate(np.array([[cfg[p] for p in spec.params]]))
            if ev.valid[0]:
                break
        pipes = [ev.pipes_us[c][0] for c in ("aiv_mte2_time_us", "aiv_mte3_time_us",
                                            "aiv_vec_time_us")]
        lines.append(",".join(str(x) for x in (n, *cfg.values(), ev.latency_us[0], *pipes)))
    path = tmp_path / "synthetic.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_calibration_recovers_a_perturbed_chip(tmp_path: Path, hw: HardwareProfile,
                                               add_spec: OperatorSpec) -> None:
    true_scales = {"gm_read_bandwidth": 0.7, "head_overhead": 1.6, "vector_time": 1.3}
    truth = load_profile_data(cal.apply(hw.data, true_scales), "truth")
    report = read_files([_synthetic(tmp_path, add_spec, truth)], add_spec, load_manifest(None))
    result = cal.fit(add_spec, hw, report.rows)
    assert result.before.mape > 0.1
    assert result.after.mape < 0.02
    assert result.scales["vector_time"] == pytest.approx(1.3, rel=0.05)
    assert result.scales["head_overhead"] == pytest.approx(1.6, rel=0.1)
    doc = cal.profile_document(result, "ascend910b3", "mine", ["synthetic.csv"],
                               len(report.rows), 0)
    assert doc["base"] == "ascend910b3" and doc["calibration"]["rows_used"] == 24
    assert "calibrated" in doc["vector"]["issue_cycles"]["source"]
    out = tmp_path / "mine.yaml"
    import yaml
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    calibrated = load_profile(str(out))
    again = cal.error_stats(cal.predict(add_spec, calibrated, report.rows).time_us,
                       np.array([r.time_us for r in report.rows]))
    assert again.mape == pytest.approx(result.after.mape, rel=1e-6)
