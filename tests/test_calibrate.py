from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.base.vocabulary import PIPE_COLUMNS
from ascend_tune.calibrate import fit as cal
from ascend_tune.calibrate import guard
from ascend_tune.calibrate import split as row_split
from ascend_tune.calibrate.coefficients import BY_NAME, expand, leaf, scaled_profile
from ascend_tune.calibrate.identifiability import identify
from ascend_tune.calibrate.measurements import Measurement, load_manifest, read_files
from ascend_tune.calibrate.row_model import RowModel, _candidates
from ascend_tune.hardware import HardwareProfile, load_profile, load_profile_data
from ascend_tune.model.engine import ShapeModel, evaluate_valid_rows
from ascend_tune.spec import OperatorSpec, load_spec
from tests.conftest import DATA
from tests.test_cli import cli

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
    assert len(report.skipped) == 2
    assert reasons[0].startswith("Input Shapes has no tensor 1")
    assert any("could not convert string to float: 'oops'" in r for r in reasons)
    assert any(s.startswith(f"{M / 'op_summary_block_dim.csv'}:3: ") for s in report.skipped)


def test_a_negative_duration_refuses_the_file(matmul_spec: OperatorSpec, tmp_path: Path) -> None:
    # A number no kernel time can be is a broken profile, not a row to leave out quietly.
    lines = (M / "kernel_details.csv").read_text().splitlines(keepends=True)
    bad = tmp_path / "kernel_details.csv"
    bad.write_text(lines[0] + lines[1] + lines[1].replace(",233.7,", ",-3,"))
    with pytest.raises(AscendTuneError) as info:
        read_files([bad], matmul_spec, load_manifest(M / "manifest.yaml"))
    assert str(info.value) == (f"{bad}:3: column Duration(us): '-3' is not a finite positive "
                               "time; fix or remove the row")


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
    assert e.bias == pytest.approx((0.1 - 0.05 + 0.1) / 3)  # signed: > 0 predicts slower
    swapped = cal.error_stats(np.array([2.0, 1.0, 3.0]), np.array([1.0, 2.0, 3.0]))
    assert swapped.pairwise_agreement == pytest.approx(2 / 3)
    assert swapped.spearman == pytest.approx(0.5)


def _synthetic(tmp_path: Path, spec: OperatorSpec, truth: HardwareProfile,
               shapes: list[dict[str, int]] | None = None, per_shape: int = 1,
               fixed: dict[str, int] | None = None, pipes: bool = True, seed: int = 4,
               name: str = "synthetic.csv") -> Path:
    """A plain measurement CSV whose times are ``truth``'s predictions for random valid
    configurations (``fixed`` parameters pinned): ground truth for the fit to recover."""
    rng = np.random.default_rng(seed)
    if shapes is None:
        shapes = [{"totalLength": int(np.exp(rng.uniform(np.log(5e4), np.log(5e7))))}
                  for _ in range(24)]
    columns = [c for c in PIPE_COLUMNS if pipes]
    lines = [",".join([*shapes[0], *spec.params, "time_us", *columns])]
    for shape in shapes:
        model = ShapeModel(spec, truth, shape)
        found = 0
        for _ in range(2000):
            idx = np.array([[int(rng.integers(len(g))) for g in model.grids]])
            values = model.values(idx)[0]
            for p, v in (fixed or {}).items():
                values[spec.params.index(p)] = v
            ev = model.evaluate(values[None, :])
            if not ev.valid[0]:
                continue
            cells = [*shape.values(), *values.tolist(), repr(float(ev.latency_us[0])),
                     *(repr(float(ev.pipes_us[c][0])) for c in columns)]
            lines.append(",".join(str(x) for x in cells))
            found += 1
            if found == per_shape:
                break
        assert found == per_shape, f"no valid configuration for {shape}"
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _rows(path: Path, spec: OperatorSpec) -> list[Measurement]:
    report = read_files([path], spec, load_manifest(None))
    assert not report.skipped, report.skipped
    return report.rows


def _perturbed(hw: HardwareProfile, scales: dict[str, float]) -> HardwareProfile:
    return load_profile_data(cal.apply(hw.data, scales), "truth")


def test_calibration_recovers_a_perturbed_chip(tmp_path: Path, hw: HardwareProfile,
                                               add_spec: OperatorSpec) -> None:
    true_scales = {"gm_to_ub_bandwidth": 0.7, "head_overhead": 1.6, "vector_time": 1.3}
    rows = _rows(_synthetic(tmp_path, add_spec, _perturbed(hw, true_scales)), add_spec)
    result = cal.fit(add_spec, hw, rows)
    # Held out before fitting: 6 of the 24 rows, judged on a calibration that never saw them.
    assert result.held_out_before is not None and result.held_out_after is not None
    assert result.held_out_before.n == 6 and result.before.n == 18
    assert result.held_out_before.mape > 0.05 and result.held_out_before.bias < 0
    assert result.held_out_after.mape < 0.02
    assert result.after.mape < 0.02
    # The aliases (head_overhead, vector_time) move the coefficients they were split into.
    truth = expand(true_scales)
    for name, scale in truth.items():
        assert result.scales[name] == pytest.approx(scale, rel=0.05), name
    # Coefficients the truth did not move stay near 1 when fitted.
    for name in set(result.fitted) - set(truth):
        assert result.scales[name] == pytest.approx(1.0, rel=0.05), name
    assert result.warnings == [f"18 fit row(s) for {len(result.fitted)} coefficients: fewer "
                               "than 3 rows per coefficient, the fit is weak"]
    doc = cal.profile_document(result, "ascend910b3", "mine", ["synthetic.csv"], len(rows), 0)
    assert doc["base"] == "ascend910b3" and doc["calibration"]["rows_used"] == 24
    leaf = doc["vector"]["issue_cycles"]
    assert "calibrated" in leaf["source"] and "x1.3 of ascend910b3" in leaf["source"]
    # The sourced value it replaces and the rows it was fitted on stay visible.
    assert leaf["note"].startswith("sourced value in ascend910b3: 22 (ATT v1")
    assert "synthetic.csv:" in leaf["note"]
    held = {m.origin for i, m in enumerate(rows) if i in set(result.split.held_out.tolist())}
    assert not any(h in result.rows_by_coefficient["vector_issue"] for h in held)
    out = tmp_path / "mine.yaml"
    import yaml
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    calibrated = load_profile(str(out))
    fit_rows = [rows[i] for i in result.split.fit]
    again = cal.error_stats(cal.predict(add_spec, calibrated, fit_rows).time_us,
                            np.array([r.time_us for r in fit_rows]))
    # The written curve points are rounded to 6 decimals (coefficients._scale_value): up to
    # ~1e-6 of a rate, a few 1e-7 of a prediction, so the MAPE agrees to 1e-7, not exactly.
    assert again.mape == pytest.approx(result.after.mape, abs=1e-7)


def test_fit_rows_are_named_compactly() -> None:
    assert cal.compress_origins(["a.csv:2", "a.csv:3", "b.csv:7", "a.csv:4", "a.csv:9",
                                 "a.csv:9", "manifest.yaml"]) == [
        "a.csv:2-4,9", "b.csv:7", "manifest.yaml"]
    assert cal.compress_origins([]) == []


def test_identify_drops_unseen_and_collinear_columns() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=20), rng.normal(size=20)
    jac = np.stack([a, np.zeros(20), 2.0 * a + 1e-4 * b, b, 0.1 * a + 0.1 * b], axis=1)
    found = identify(jac, ["a", "zero", "twice_a", "b", "mix"])
    assert found.unseen == ["zero"]
    # twice_a is a's column scaled: one of them goes, the more sensitive one stays; then mix is
    # a combination of the two that are left and goes too (it is the least sensitive).
    assert found.together == {"a": ["twice_a"], "mix": ["twice_a", "b"]}
    assert found.kept == ["twice_a", "b"]
    assert identify(np.zeros((0, 2)), ["x", "y"]).unseen == ["x", "y"]
    # More coefficients than residuals: never all kept.
    assert len(identify(rng.normal(size=(2, 3)), ["p", "q", "r"]).kept) == 2


def test_fit_leaves_undetermined_coefficients_alone(tmp_path: Path, hw: HardwareProfile,
                                                    add_spec: OperatorSpec) -> None:
    # Every row moves tiles of one size on one core: GM read latency and bandwidth change
    # each row's MTE2 time in the same proportion, so only their combination is determined.
    truth = _perturbed(hw, {"gm_to_ub_bandwidth": 0.8, "vector_time": 1.3})
    shapes = [{"totalLength": n} for n in (1 << 18, 3 << 18, 1 << 20, 5 << 19, 1 << 21, 3 << 20,
                                           1 << 22, 3 << 21, 1 << 23, 5 << 21, 1 << 24, 3 << 22)]
    path = _synthetic(tmp_path, add_spec, truth, shapes, per_shape=2,
                      fixed={"tileLength": 2048, "bufferNum": 2, "blockDim": 1})
    rows = _rows(path, add_spec)
    result = cal.fit(add_spec, hw, rows, cal.FitOptions(holdout=0))
    pair = {"gm_to_ub_bandwidth", "gm_to_ub_latency"}
    (kept,) = pair & set(result.fitted)
    (dropped,) = pair - {kept}
    assert result.not_fitted[dropped].startswith(f"{dropped} and {kept} scale together")
    assert result.not_fitted["fixpipe_bandwidth"].startswith("nothing in these rows uses it")
    assert "high-confidence" in result.not_fitted["cube_rate"]
    for name in result.not_fitted:
        assert name not in result.scales
        for path_ in BY_NAME[name].leaves:  # the written numbers are the sourced ones
            assert leaf(result.data, path_) == leaf(hw.data, path_)
    # Every row issues the same two-source vector instructions: the per-repeat and
    # per-instruction costs and the bank-conflict factor move each row's Vector time in the
    # same proportion too. Which one is kept is a near tie the floating point decides.
    vector = {"vector_rate", "vector_issue", "bank_conflict"}
    (kept_v,) = vector & set(result.fitted)
    for dropped_v in vector - {kept_v}:
        assert result.not_fitted[dropped_v].startswith(f"{dropped_v} and "), dropped_v
        assert "scale together" in result.not_fitted[dropped_v]
    # The product of the two is what the rows fix: the fit still matches them.
    assert result.after.mape < 0.01 < result.before.mape
    assert result.scales[kept_v] > 1.3


def test_no_row_bound_by_a_pipe_it_does_not_measure(tmp_path: Path, hw: HardwareProfile,
                                                    add_spec: OperatorSpec) -> None:
    # End-to-end times only, one core, two reads per write: the rows are bound by MTE2, the
    # UB->GM write never bounds a row and no row measures MTE3, so nothing can say what its
    # bandwidth is.
    shapes = [{"totalLength": n} for n in (1 << 20, 1 << 21, 1 << 22, 1 << 23, 1 << 24)]
    path = _synthetic(tmp_path, add_spec, hw, shapes, per_shape=3, pipes=False,
                      fixed={"tileLength": 4096, "bufferNum": 2, "blockDim": 1})
    result = cal.fit(add_spec, hw, _rows(path, add_spec), cal.FitOptions(holdout=0))
    assert result.not_fitted["ub_write_bandwidth"] == (
        "no row is bound by mte3 and none measures its busy time (aiv_mte3_time_us)")
    assert "ub_write_bandwidth" not in result.fitted


def test_held_out_split_is_fixed_before_fitting(tmp_path: Path, hw: HardwareProfile,
                                                add_spec: OperatorSpec) -> None:
    truth = _perturbed(hw, {"vector_time": 1.2})
    shapes = [{"totalLength": 1 << k} for k in range(16, 26)]
    rows = _rows(_synthetic(tmp_path, add_spec, truth, shapes, per_shape=3), add_spec)
    split = row_split.holdout(rows, 0.25, seed=0)
    assert split == row_split.holdout(rows, 0.25, seed=0)  # deterministic
    assert split.method.startswith("by source and shape")
    # Whole shape sweeps: no shape is on both sides.
    fit_shapes = {rows[i].shape["totalLength"] for i in split.fit}
    assert not fit_shapes & {rows[i].shape["totalLength"] for i in split.held_out}
    assert len(split.held_out) == 9 and sorted([*split.fit, *split.held_out]) == list(range(30))
    # The split does not look at the times, and the fit does not look at held-out rows:
    # wreck every held-out time and the split and the fitted scales stay the same.
    fitted_rows = set(split.fit.tolist())
    wrecked = [m if i in fitted_rows else
               Measurement(m.origin, m.shape, m.config, m.free, m.time_us * 10, {})
               for i, m in enumerate(rows)]
    assert row_split.holdout(wrecked, 0.25, seed=0) == split
    a, b = cal.fit(add_spec, hw, rows), cal.fit(add_spec, hw, wrecked)
    assert a.scales == b.scales and a.after == b.after
    assert a.held_out_after is not None and b.held_out_after is not None
    assert a.held_out_after.mape < 0.02 and b.held_out_after.mape > 0.8
    # A different seed holds out different sweeps; too few rows hold out none, and say so.
    assert not np.array_equal(row_split.holdout(rows, 0.25, seed=1).held_out, split.held_out)
    few = row_split.holdout(rows[:5], 0.25, seed=0)
    assert few.held_out.size == 0 and "only 5 row(s)" in few.method


def test_too_few_rows_warned(tmp_path: Path, hw: HardwareProfile,
                             add_spec: OperatorSpec) -> None:
    truth = _perturbed(hw, {"vector_time": 1.2, "head_overhead": 1.4})
    shapes = [{"totalLength": 1 << k} for k in range(16, 26)]
    # End-to-end times only: each row is one measured value, and no more coefficients than
    # values can be independent (the identifiability screen keeps at most that many).
    rows = _rows(_synthetic(tmp_path, add_spec, truth, shapes, pipes=False), add_spec)
    two = cal.fit(add_spec, hw, rows[:2])
    assert 1 <= len(two.fitted) <= 2
    assert (f"2 fit row(s) for {len(two.fitted)} coefficients: fewer than 3 rows per "
            "coefficient, the fit is weak") in two.warnings
    # Measured pipe times let more coefficients be independent than there are rows: the most
    # sensitive, one per row, are fitted and the rest named.
    piped = _rows(_synthetic(tmp_path, add_spec, truth, shapes, name="piped.csv"), add_spec)
    one = cal.fit(add_spec, hw, piped[:1])
    assert len(one.fitted) == 1
    assert any("only 1 fit row(s) were measured: those the rows pull on least are left at 1" in why
               for why in one.not_fitted.values())
    weak = cal.fit(add_spec, hw, piped[:7])
    assert weak.held_out_before is None and weak.split.held_out.size == 0
    assert weak.warnings[0].startswith("nothing held out (only 7 row(s)")
    assert any(f"7 fit row(s) for {len(weak.fitted)} coefficients: fewer than 3" in w
               for w in weak.warnings)
    path = tmp_path / "two.csv"
    path.write_text("\n".join((tmp_path / "synthetic.csv").read_text().splitlines()[:3]) + "\n")
    out = tmp_path / "cal.yaml"
    done = cli("calibrate", str(path), "--spec", "add", "--hw", "ascend910b3", "-o", str(out))
    assert done.returncode == 0 and "the fit is weak" in done.stderr and out.exists()


def test_high_confidence_leaf_untouched_unless_included(tmp_path: Path, hw: HardwareProfile,
                                                        matmul_spec: OperatorSpec) -> None:
    truth = _perturbed(hw, {"cube_rate": 1.5, "mmad_overhead": 2.0})
    shapes = [{"M": m, "N": n, "K": k} for m, n, k in
              ((1024, 1024, 1024), (2048, 1024, 4096), (512, 4096, 1024), (4096, 4096, 2048),
               (1024, 2048, 8192), (128, 4096, 4096))]
    rows = _rows(_synthetic(tmp_path, matmul_spec, truth, shapes, per_shape=3), matmul_spec)
    default = cal.fit(matmul_spec, hw, rows, cal.FitOptions(holdout=0))
    assert "cube_rate" not in default.fitted
    assert default.not_fitted["cube_rate"].startswith(
        "high-confidence profile value cube.cycles_per_fractal (S6")
    assert default.data["cube"]["cycles_per_fractal"] == hw.data["cube"]["cycles_per_fractal"]
    for option in (cal.FitOptions(holdout=0, include=("cube.cycles_per_fractal",)),
                   cal.FitOptions(holdout=0, include=("cube_rate",)),
                   cal.FitOptions(holdout=0, fit_all=True)):
        asked = cal.fit(matmul_spec, hw, rows, option)
        assert asked.scales["cube_rate"] == pytest.approx(1.5, rel=0.03), option
        assert asked.after.mape < default.after.mape
    every = tuple(c.name for c in cal.COEFFICIENTS)
    with pytest.raises(AscendTuneError, match=r"^nothing to calibrate: no coefficient is "
                                              r"determined by the 18 fit row\(s\) \(e\.g\. "
                                              r"gm_to_l1_bandwidth: excluded"):
        cal.fit(matmul_spec, hw, rows, cal.FitOptions(holdout=0, exclude=every))
    with pytest.raises(AscendTuneError, match=r"--include cube: not a calibrated coefficient or "
                                              r"leaf \(did you mean 'cube_rate'"):
        cal.fit(matmul_spec, hw, rows, cal.FitOptions(include=("cube",)))


def test_calibrate_and_validate_json(tmp_path: Path, hw: HardwareProfile,
                                     add_spec: OperatorSpec) -> None:
    truth = _perturbed(hw, {"vector_time": 1.3, "head_overhead": 1.5})
    path = _synthetic(tmp_path, add_spec, truth)
    out = tmp_path / "cal.yaml"
    args = ("calibrate", str(path), "--spec", "add", "--hw", "ascend910b3", "-o", str(out))
    proc = cli(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["split"] == {"method": "by source and shape: 6 of 24 group(s), seed 0",
                            "fit_rows": 18, "held_out_rows": 6}
    assert doc["held_out"]["rows"] == 6 and doc["held_out"]["after"]["mape"] < 0.02
    assert doc["in_sample"]["caveat"].startswith("in-sample")
    # vector_time (an alias) scaled both of its coefficients: each is recovered.
    for name, leaf_path in (("vector_rate", "vector.cycles_per_repeat"),
                            ("vector_issue", "vector.issue_cycles")):
        assert doc["fitted"][name]["scale"] == pytest.approx(1.3, rel=0.02)
        assert doc["fitted"][name]["leaves"] == [leaf_path]
        assert doc["fitted"][name]["rows"][0].startswith(f"{path}:")
        # Exact synthetic times: what is left is the model's own rounding, so the 95 %
        # interval is tight around the scale and holds the truth.
        interval = doc["fitted"][name]["interval95"]
        assert interval["low"] <= 1.3 <= interval["high"] and interval["percent"] < 2.0
    assert "high-confidence" in doc["not_fitted"]["cube_rate"]
    assert all(w.endswith("the fit is weak") for w in doc["warnings"])
    written = load_profile(str(out))
    assert written.data["calibration"]["held_out"] == doc["held_out"]
    text = cli(*args)
    assert text.returncode == 0, text.stderr
    assert text.stdout.index("held-out error on 6 row(s)") < text.stdout.index("in-sample")
    assert "not fitted: cube_rate: high-confidence" in text.stdout
    assert re.search(r"fitted \(scale, 95 % interval, rows\): .*vector_issue x1\.3 ±<0\.1 % "
                     r"\(\d+ rows\)", text.stdout), text.stdout
    proc = cli("validate", str(path), "--spec", "add", "--hw", "ascend910b3", "--kfold", "3",
               "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    held = doc["held_out"]
    assert held["folds"] == 3 and held["rows"] == 24 and held["method"].startswith("by source")
    assert held["after"]["mape"] < 0.02 < held["before"]["mape"]
    assert doc["in_sample"]["caveat"].startswith("in-sample")
    assert [round(s, 1) for s in doc["fitted"]["vector_issue"]["scales"]] == [1.3] * 3
    assert "high-confidence" in doc["not_fitted"]["cube_rate"]
    # 16 fit rows per fold for the coefficients add's rows determine: weak, and said so.
    assert doc["warnings"] and all("fewer than 3 rows per coefficient" in w
                                   for w in doc["warnings"])


def test_row_model_batches_by_shape_and_matches_one_row_at_a_time(
        hw: HardwareProfile, matmul_spec: OperatorSpec) -> None:
    from ascend_tune.calibrate.row_model import RowModel

    shape_a, shape_b = {"M": 1024, "N": 2048, "K": 1024}, {"M": 512, "N": 4096, "K": 2048}
    base = {"baseM": 128, "baseN": 256, "baseK": 64, "stepKa": 4, "stepKb": 4}
    rows = [Measurement("m.csv:2", shape_a, base, ("mDim", "nDim"), 50.0),
            Measurement("m.csv:3", shape_b, {**base, "baseN": 128}, (), 60.0),
            Measurement("m.csv:4", shape_a, {**base, "baseK": 32}, ("mDim",), 70.0),
            Measurement("m.csv:5", shape_a, {**base, "baseM": 4096}, (), 80.0)]  # breaks L0
    model = RowModel(matmul_spec, hw, rows)
    assert [i for i, _ in model.invalid] == [3] and model.valid_rows.tolist() == [0, 1, 2]
    assert "m.csv:5: the measured configuration breaks constraint" in model.invalid[0][1]
    assert len(model._groups) == 2  # one shape model per distinct shape
    faster = cal.scaled_profile(hw, {"gm_to_ub_bandwidth": 1.7, "cube_rate": 0.6,
                                     "head_overhead": 2.0})
    for profile in (hw, faster):
        batched = model.evaluate(profile)
        for i in (0, 1, 2):
            one = RowModel(matmul_spec, profile, [rows[i]]).evaluate()
            assert batched.time_us[i] == one.time_us[0]
            assert np.array_equal(batched.pipes_us[i], one.pipes_us[0])
        assert np.isnan(batched.time_us[3])
    # A free parameter is the model's best over its domain: never slower than a fixed pick.
    fixed = RowModel(matmul_spec, hw, [Measurement("m.csv:6", shape_a, {**base, "mDim": 1,
                                                                         "nDim": 1}, (), 1.0)])
    assert model.evaluate().time_us[0] <= fixed.evaluate().time_us[0]
    # The scaled profile changes what it should: the batched model sees the new numbers.
    assert model.evaluate(faster).time_us[0] != model.evaluate(hw).time_us[0]
    written = load_profile_data(cal.apply(hw.data, {"gm_to_ub_bandwidth": 1.7, "cube_rate": 0.6,
                                                    "head_overhead": 2.0}), "written")
    assert model.evaluate(written).time_us[:3] == pytest.approx(
        model.evaluate(faster).time_us[:3], rel=1e-5)


def test_a_trial_evaluates_every_shape_in_one_batch_with_the_same_bits(
        tmp_path: Path, hw: HardwareProfile, add_spec: OperatorSpec,
        matmul_spec: OperatorSpec) -> None:
    """RowModel evaluates a trial profile's candidates of all shapes in one batch
    (engine.evaluate_valid_rows): each row's time and pipe times must be the bits its own
    shape's ShapeModel gives on that profile (built from scratch here), for rows of one
    candidate (add) and rows with free parameters (the matmul manifest: 196 candidates)."""
    trial = scaled_profile(hw, {"gm_to_ub_bandwidth": 0.8, "head_base": 1.3, "vector_rate": 1.1,
                                "cube_rate": 0.9, "hbm_bandwidth": 1.2})
    add_rows = _rows(_synthetic(tmp_path, add_spec, hw, per_shape=2), add_spec)
    manifest = load_manifest(M / "manifest.yaml")
    matmul_rows = read_files([M / "op_summary_block_dim.csv", M / "kernel_details.csv",
                              M / "PipeUtilization.csv"], matmul_spec, manifest).rows
    for spec, rows in ((add_spec, add_rows), (matmul_spec, matmul_rows)):
        model = RowModel(spec, hw, rows)
        got = model.evaluate(trial)
        for i in model.valid_rows.tolist():
            own = ShapeModel(spec, trial, rows[i].shape)
            ev = own.evaluate(_candidates(spec, own, own.baseline_values(), rows[i]))
            k = int(np.argmin(ev.latency_us))
            assert got.time_us[i] == ev.latency_us[k], (spec.name, i)
            assert got.pipes_us[i].tolist() == [ev.pipes_us[c][k] for c in PIPE_COLUMNS]
    # The batch is taken (not the shape-by-shape fallback) on a scaled profile.
    models = [ShapeModel(add_spec, hw, r.shape) for r in add_rows[:3]]
    values = [np.array([[r.config[p] for p in add_spec.params]]) for r in add_rows[:3]]
    assert evaluate_valid_rows(models, values, trial) is not None


def test_a_coefficient_no_row_reaches_says_which_rows_would(tmp_path: Path,
                                                            hw: HardwareProfile) -> None:
    # Matmul rows whose operand pitches are all 512 B-aligned (K, N multiples of 256): the
    # ND2NZ pitch grades change no prediction, and the reason says what shape would show them.
    spec = load_spec("matmul:cube_only")
    aligned = [{"M": m, "N": n, "K": k} for m, n, k in ((1024, 1024, 1024), (512, 4096, 2048))]
    rows = _rows(_synthetic(tmp_path, spec, hw, aligned, per_shape=3, pipes=False), spec)
    result = cal.fit(spec, hw, rows, cal.FitOptions(holdout=0))
    assert result.not_fitted["nd2nz_pitch"] == (
        "it changes no prediction in these rows (only an ND2NZ copy whose operand rows are a "
        "pitch off the 512 B alignment apart pays it: a shape whose K or N rows are not a "
        "multiple of 512 B (256 fp16 elements) shows it; or what it costs is limited by "
        "something else there)")
    # A cube-only kernel never pays the mix launch.
    assert result.not_fitted["mix_launch"].startswith(
        "it changes no prediction in these rows (only a mix (Cube + Vector) kernel's launch")


def test_an_efficiency_is_fitted_no_higher_than_its_limit_and_refused_there(
        tmp_path: Path, hw: HardwareProfile) -> None:
    # A device whose ND2NZ copies lose less at misaligned pitches than the grades say (x1.4):
    # the 256 B grade (0.8) may grow x1.25 at most before it would pass 1, so the fit stops
    # there, and the guard refuses the number at the bound (--force writes it), where the
    # written profile used to fail to load.
    spec = load_spec("matmul:cube_only")
    truth = scaled_profile(hw, {"nd2nz_pitch": 1.4})  # not a valid profile: a device
    shapes = [{"M": m, "N": n, "K": k} for m, n, k in ((1024, 4000, 4000), (512, 4032, 4064),
                                                         (2048, 4224, 4000))]
    rows = _rows(_synthetic(tmp_path, spec, truth, shapes, per_shape=4), spec)
    others = tuple(c.name for c in cal.COEFFICIENTS if c.name != "nd2nz_pitch")
    result = cal.fit(spec, hw, rows, cal.FitOptions(holdout=0, exclude=others))
    assert result.scales["nd2nz_pitch"] == pytest.approx(1.25, rel=1e-3)
    assert leaf(result.data, ("memory", "nd2nz_pitch_256b_efficiency"))["value"] <= 1.0
    problems = guard.refusals(result)
    assert len(problems) == 1 and problems[0].endswith("at the fit's bound x1.25")
