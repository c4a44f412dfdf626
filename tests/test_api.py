"""The documented Python API: the worked example in its docstring runs as written, each entry
point returns what the command line shows, and ``predict`` is the engine's own numbers."""

from __future__ import annotations

import contextlib
import math
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ascend_tune import api
from ascend_tune.base.vocabulary import BOUND_NAMES, PIPE_COLUMNS
from ascend_tune.calibrate.coefficients import BY_NAME, leaf_number
from ascend_tune.model.engine import ShapeModel
from ascend_tune.results import format as results
from tests.conftest import DATA
from tests.npu_standin import standin


def _example() -> str:
    doc = api.__doc__ or ""
    block = doc.split("::\n", 1)[1].split("\n\n``tune``", 1)[0]
    return textwrap.dedent(block)


def test_the_docstring_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(_example(), "api-example", "exec"), {})
    finally:
        os.chdir(cwd)
    doc = results.read_all(tmp_path / "add.results.json")
    assert [e["shape"]["totalLength"] for e in doc["shapes"]] == [4096, 1 << 20]
    assert (tmp_path / "AddCustom/op_host/add_custom.cpp").exists()
    assert (tmp_path / "AddCustom/op_host/add_custom_tiling_select.h").exists()
    printed = capsys.readouterr().out.split()
    # The 4096-element winner on 2^20 elements moves 4 KiB per copy: MTE2-bound.
    assert printed[0] == "aiv_mte2_time_us"


def test_every_public_name_is_documented() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text()
    for name in api.__all__:
        assert getattr(api, name) is not None
        assert f"`{name}" in text, f"docs/api.md does not document {name}"


def test_tune_reuses_the_cache_and_render_matches_emit(tmp_path: Path) -> None:
    spec, hw = api.load_spec("add"), api.load_profile("ascend910b3")
    out = tmp_path / "r.json"
    first = api.tune(spec, hw, [{"totalLength": 65536}], budget=100, output=out)
    again = api.tune(spec, hw, [{"totalLength": 65536}], budget=100, output=out)
    assert first == again
    files = api.render(results.read_all(out), op_host=True)
    written = api.emit(out, tmp_path / "proj", op_host=True)
    assert sorted(Path(p).relative_to(tmp_path / "proj").as_posix() for p in written) == sorted(
        files)
    with pytest.raises(api.AscendTuneError, match="out of range"):
        api.tune(spec, hw, [{"totalLength": 0}])


# ---- shapes and options -----------------------------------------------------------------------


def test_shape_helpers(tmp_path: Path) -> None:
    spec = api.load_spec("matmul")
    assert api.parse_shape("K=64, M=128,N=256") == {"K": 64, "M": 128, "N": 256}
    assert api.parse_shape("K=64,M=128,N=256", spec) == {"M": 128, "N": 256, "K": 64}
    assert api.shape_key({"M": 128, "N": 256, "K": 64}) == "M=128,N=256,K=64"
    assert api.parse_assignments("baseM=64,baseN=128") == {"baseM": 64, "baseN": 128}
    with pytest.raises(api.AscendTuneError, match="--shape M=1,N=2: shape misses K"):
        api.parse_shape("M=1,N=2", spec)
    with pytest.raises(api.AscendTuneError, match="--set 'baseM=x': value of baseM must be an "
                                                  "integer, got 'x'"):
        api.parse_assignments("baseM=x")
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("K,M,N\n64,128,256\n32,16,16\n")
    assert api.collect_shapes(spec, [shapes], ["M=16,N=16,K=32", "M=1,N=1,K=1"]) == [
        {"M": 128, "N": 256, "K": 64}, {"M": 16, "N": 16, "K": 32}, {"M": 1, "N": 1, "K": 1}]
    with pytest.raises(api.AscendTuneError, match="no shapes"):
        api.collect_shapes(spec)


def test_options_strategies_and_styles() -> None:
    assert {"ils", "ga", "exhaustive", "random"} <= set(api.strategies())
    assert "auto" not in api.strategies()
    assert list(api.emit_styles()) == ["macro", "struct"]
    assert "BEGIN_TILING_DATA_DEF" in api.emit_styles()["macro"]
    api.check_search_options(strategy="ga", budget=1, seed=(1 << 63) - 1, jobs=1, top_k=1)
    for options, message in [({"strategy": "nope"}, "--strategy 'nope' is not one of: auto, "),
                             ({"budget": 0}, "--budget must be at least 1, got 0"),
                             ({"jobs": 0}, "--jobs must be at least 1, got 0"),
                             ({"seed": 1 << 63}, "--seed must be between 0 and 2\\*\\*63-1"),
                             ({"top_k": 0}, "--top-k must be at least 1, got 0")]:
        with pytest.raises(api.AscendTuneError, match=message):
            api.check_search_options(**options)
    with pytest.raises(api.AscendTuneError, match="--budget must be at least 1"):
        api.search(api.load_spec("add"), api.load_profile("ascend910b3"),
                   [{"totalLength": 4096}], budget=0)


# ---- search -----------------------------------------------------------------------------------


class _Recorder(api.Progress):
    def __init__(self) -> None:
        self.caches: list[api.CacheReport] = []
        self.todo: list[int] = []
        self.done: list[tuple[str, float]] = []

    def opened(self, cache: api.CacheReport) -> None:
        self.caches.append(cache)

    @contextlib.contextmanager
    def running(self, todo: int) -> Iterator[None]:
        self.todo.append(todo)
        yield

    def shape_done(self, key: str, entry: dict[str, Any] | str, seconds: float) -> None:
        assert not isinstance(entry, str)
        self.done.append((key, entry["predicted"]["latency_us"]))


def test_search_plan_and_lock(tmp_path: Path) -> None:
    spec, hw = api.load_spec("add"), api.load_profile("ascend910b3")
    shapes = [{"totalLength": 8192}, {"totalLength": 4096}]
    out = tmp_path / "r.json"
    planned = api.plan(spec, hw, shapes)
    assert [(p.key, p.space_size, p.strategy) for p in planned] == [
        ("totalLength=8192", 640, "exhaustive"), ("totalLength=4096", 640, "exhaustive")]
    baseline = api.predict(spec, hw, shapes[1], {})
    assert planned[1].baseline_us == round(baseline.latency_us, 6)
    options: dict[str, Any] = {"budget": 50, "seed": 3}
    lock = api.check_locked(spec, hw, shapes, out, **options)
    assert (lock.up_to_date, lock.missing, lock.pruned, lock.shapes) == (False, 2, 0, 2)

    first = _Recorder()
    run = api.search(spec, hw, shapes, output=out, progress=first, **options)
    assert (run.interrupted, run.saved, run.failures) == (False, 2, [])
    assert set(run.times) == {"totalLength=8192", "totalLength=4096"}
    entries = run.entries()
    assert [e["shape"] for e in entries] == shapes  # the order asked for, not the file's
    assert first.caches[0].reused == 0 and first.todo == [2]
    assert sorted(first.done) == sorted((api.shape_key(e["shape"]), e["predicted"]["latency_us"])
                                        for e in entries)
    doc = run.document()
    assert doc["shapes"] == entries and doc["failures"] == []
    assert "text" not in doc["spec"] and "data" not in doc["hw"]
    assert doc["search"] == {"strategy": "auto", "seed": 3, "budget": 50}

    again = _Recorder()
    cached = api.search(spec, hw, shapes, output=out, progress=again, **options)
    assert (cached.saved, cached.times, again.todo, again.done) == (0, {}, [0], [])
    assert again.caches[0].reused == 2 and cached.entries() == entries
    assert api.check_locked(spec, hw, shapes, out, **options).up_to_date
    assert api.tune(spec, hw, shapes, output=out, **options) == entries
    changed = api.check_locked(spec, hw, shapes, out, budget=51, seed=3)
    assert changed.invalidated is not None and not changed.up_to_date
    with pytest.raises(api.AscendTuneError, match="--locked needs -o"):
        api.check_locked(spec, hw, shapes, None)


# ---- predict ----------------------------------------------------------------------------------


def _bits(x: float) -> str:
    return float(x).hex()


@pytest.mark.parametrize(("name", "shape"), [("matmul", {"M": 1024, "N": 2048, "K": 512}),
                                             ("add", {"totalLength": 100_000})])
def test_predict_is_the_engine_bit_for_bit(name: str, shape: dict[str, int]) -> None:
    spec, hw = api.load_spec(name), api.load_profile("ascend910b3")
    model = ShapeModel(spec, hw, shape)
    rng = np.random.default_rng(7)
    values = model.values(np.stack([rng.integers(0, s, 400) for s in model.sizes], axis=1))
    configs = [dict(zip(spec.params, map(int, row), strict=True)) for row in values]
    predicted = api.predict(spec, hw, shape, configs)
    ev = model.evaluate(values)
    assert 0 < int(ev.valid.sum()) < len(configs), "random rows should mix valid and invalid"
    for i, p in enumerate(predicted):
        assert p.config == configs[i]
        assert p.valid == bool(ev.valid[i])
        assert _bits(p.latency_us) == _bits(ev.latency_us[i])
        assert p.roofline_us == model.roofline_us
        if not p.valid:
            assert p.violates == model.constraint_names[int(ev.failed[i])]
            assert p.bound is None and math.isinf(p.latency_us)
            continue
        assert p.violates is None and p.bound == BOUND_NAMES[int(ev.bound[i])]
        assert list(p.pipes_us) == list(PIPE_COLUMNS)
        assert [_bits(v) for v in p.pipes_us.values()] == [
            _bits(ev.pipes_us[c][i]) for c in PIPE_COLUMNS]
        assert _bits(p.gm_bandwidth_us) == _bits(ev.gm_us[i])
        assert _bits(p.head_overhead_us) == _bits(ev.head_us[i])
    # One configuration alone scores as it does in a batch.
    first_valid = int(np.flatnonzero(ev.valid)[0])
    alone = api.predict(spec, hw, shape, configs[first_valid])
    assert alone == predicted[first_valid]


@pytest.mark.parametrize(("name", "shape"), [("matmul", {"M": 512, "N": 1024, "K": 256}),
                                             ("add", {"totalLength": 1 << 20})])
def test_predict_agrees_with_a_tuned_entry(name: str, shape: dict[str, int]) -> None:
    spec, hw = api.load_spec(name), api.load_profile("ascend910b3")
    entry = api.tune(spec, hw, [shape], budget=200)[0]
    p = api.predict(spec, hw, shape, entry["best"])
    pred = entry["predicted"]
    assert p.valid and round(p.latency_us, 6) == pred["latency_us"]
    assert p.bound == pred["bound"]
    assert {c: round(v, 6) for c, v in p.pipes_us.items()} == pred["pipes_us"]
    assert round(p.gm_bandwidth_us, 6) == pred["gm_bandwidth_us"]
    assert round(p.head_overhead_us, 6) == pred["head_overhead_us"]
    assert round(p.roofline_us, 6) == pred["roofline_us"]
    # A partial configuration takes the rest from the baseline, as explain --set does.
    model = ShapeModel(spec, hw, shape)
    first = spec.params[0]
    partial = api.predict(spec, hw, shape, {first: entry["best"][first]})
    assert partial.config == {**model.baseline_values(), first: entry["best"][first]}
    why = api.explain(spec, hw, shape, {first: entry["best"][first]})
    assert partial.config == why.config
    assert round(partial.latency_us, 6) == why.predicted["latency_us"]


def test_predict_reports_an_invalid_configuration() -> None:
    spec, hw = api.load_spec("add"), api.load_profile("ascend910b3")
    shape = {"totalLength": 4096}
    model = ShapeModel(spec, hw, shape)
    grid = dict(zip(spec.params, model.grids, strict=True))
    big = {"bufferNum": int(grid["bufferNum"].max()), "tileLength": int(grid["tileLength"].max()),
           "blockDim": int(grid["blockDim"].max())}
    p = api.predict(spec, hw, shape, big)
    assert (p.valid, p.bound, p.latency_us) == (False, None, math.inf)
    assert p.violates in model.constraint_names
    assert api.predict(spec, hw, shape, []) == []


@pytest.mark.parametrize(("shape", "configs", "message"), [
    ({"totalLength": 4096}, {"tileLenght": 64},
     "config: unknown parameter 'tileLenght' (did you mean 'tileLength'?); AddCustom takes "
     "blockDim, tileLength, bufferNum"),
    ({"totalLength": 4096}, [{"tileLength": 256}, {"tileLength": 300}],
     "configs[1]: tileLength=300 is outside its domain for shape totalLength=4096 (nearest: "
     "256, 512)"),
    ({"totalLength": 4096}, {"tileLength": 10 ** 30},
     "config: tileLength=1000000000000000000000000000000 is outside its domain"),
    ({"totalLength": 4096}, {"tileLength": 64.0},
     "config: tileLength must be an integer, got 64.0"),
    ({"totalLength": 4096}, {"bufferNum": True}, "config: bufferNum must be an integer, got True"),
    ({"totalLength": 4096}, {"bufferNum": "2"}, "config: bufferNum must be an integer, got '2'"),
    ({"totalLength": 4096}, [{"bufferNum": 2}, "x"],
     "configs[1]: expected a mapping of parameter values, got str"),
    ({"totalLength": 4096}, "tileLength=64",
     "configs: expected a mapping of parameter values or a sequence of them, got str"),
    ({"totalLenght": 4096}, {}, "shape: unknown shape variable 'totalLenght'"),
    ({"totalLength": 0}, {}, "shape: totalLength=0 is out of range"),
    ({"totalLength": 2.5}, {}, "shape: totalLength must be an integer, got 2.5"),
])
def test_predict_refuses_bad_input_in_one_line(shape: dict[str, Any], configs: Any,
                                               message: str) -> None:
    spec, hw = api.load_spec("add"), api.load_profile("ascend910b3")
    with pytest.raises(api.AscendTuneError) as caught:
        api.predict(spec, hw, shape, configs)
    assert str(caught.value).startswith(message), str(caught.value)
    assert "\n" not in str(caught.value)


def test_predict_accepts_the_baseline_outside_the_domain() -> None:
    spec, hw = api.load_spec("matmul"), api.load_profile("ascend910b3")
    shape = {"M": 100, "N": 100, "K": 100}  # baseM = align_up(M, 16) = 112: not a grid value
    model = ShapeModel(spec, hw, shape)
    base = model.baseline_values()
    outside = [p for p in spec.params
               if base[p] not in set(model.grids[spec.params.index(p)].tolist())]
    assert outside, "this shape's baseline should leave some parameter's domain"
    p = api.predict(spec, hw, shape, base)
    assert p.config == base and p == api.predict(spec, hw, shape, {})


# ---- emit -------------------------------------------------------------------------------------


def test_prepare_emit_stale_write_and_leftovers(tmp_path: Path) -> None:
    spec, hw = api.load_spec("add"), api.load_profile("ascend910b3")
    out = tmp_path / "r.json"
    api.tune(spec, hw, [{"totalLength": 4096}], budget=50, output=out)
    proj = tmp_path / "proj"
    plan = api.prepare_emit(out, proj)
    assert plan.files == api.render(results.read_all(out))
    assert plan.spec.name == spec.name and not plan.op_host and plan.leftovers == []
    stale = plan.stale()
    assert sorted(s.split("\n")[0] for s in stale) == sorted(
        f"missing: {proj / rel}" for rel in plan.files)
    assert sorted(plan.write()) == sorted(str(proj / rel) for rel in plan.files)
    assert plan.stale() == [] and plan.write() == []
    header = proj / "op_host" / "add_custom_tiling.h"
    header.write_text(header.read_text() + "// edited\n")
    assert [s.split("\n")[0] for s in plan.stale()] == [f"stale: {header}"]
    old = proj / "op_kernel" / "add_custom_old.h"
    old.parent.mkdir(exist_ok=True)
    old.write_text("// Generated by ascend-tune 0.0.1\n")
    again = api.prepare_emit(out, proj)
    assert again.leftovers == ["op_kernel/add_custom_old.h"]
    assert again.write() == [str(header)]
    with pytest.raises(api.AscendTuneError, match="--style 'nope' is not one of: macro, struct"):
        api.prepare_emit(out, proj, style="nope")


# ---- measure ----------------------------------------------------------------------------------


def test_plan_measure_and_measure(tmp_path: Path) -> None:
    spec, hw = api.load_spec("add"), api.load_profile("ascend910b3")
    out = tmp_path / "r.json"
    api.tune(spec, hw, [{"totalLength": 1 << 20}], budget=200, top_k=2, output=out)
    run = (f"{sys.executable} {standin.__file__} add --shape-json {{shape_json}} "
           "--config-json {config_json} --blob {tiling_blob} --headers {headers_dir} "
           "--repeat {repeat}")
    for options, message in [({"style": "nope"}, "--style 'nope' is not one of"),
                              ({"where": "a=b"}, "--where selects CSV rows: it needs --csv"),
                              ({"where": {"a": "b"}}, "--where selects CSV rows"),
                              ({"repeat": 0}, "--repeat must be at least 1, got 0")]:
        with pytest.raises(api.AscendTuneError, match=message):
            api.plan_measure(out, run, **options)
    with pytest.raises(api.AscendTuneError, match=r"unknown placeholder \{nope\}"):
        api.plan_measure(out, run + " {nope}")
    plan = api.plan_measure(out, run, repeat=1)
    assert plan.spec.name == spec.name and plan.command.repeat == 1 and plan.style == "macro"
    outcome = api.measure(plan)
    assert (outcome.measured, outcome.failures, outcome.interrupted) == (2, [], False)
    [summary] = api.measure_summary(outcome.entries)
    assert summary["shape"] == {"totalLength": 1 << 20}
    times = [c["measured_us"] for c in summary["candidates"]]
    assert times == [pytest.approx(standin.median_time(spec, summary["shape"], c["config"], 1),
                                   abs=1e-4) for c in summary["candidates"]]
    assert summary["winner"] == int(np.argmin(times))
    assert api.measure(plan).measured == 0  # resumable: everything is measured already


# ---- measurements, calibration, report, profiles ----------------------------------------------


def test_validate_and_calibrate(tmp_path: Path) -> None:
    spec, hw = api.load_spec("add"), api.load_profile("ascend910b3")
    skipped: list[str] = []
    rows = api.load_measurements(spec, hw, [DATA / "measurements" / "plain.csv"],
                                 on_skipped=skipped.append)
    assert len(rows.rows) == 3 and skipped == rows.skipped and len(skipped) == 1
    result = api.validate(spec, hw, [DATA / "measurements" / "plain.csv"])
    doc = result.document
    assert doc["rows"] == 3 and doc["skipped"] == 1 and doc["errors"]["n"] == 3
    assert doc["errors"] == result.overall.as_dict()
    assert api.validate(spec, hw, rows).document == doc
    with pytest.raises(api.AscendTuneError, match="give --holdout or --kfold, not both"):
        api.check_split(0.5, 2)
    with pytest.raises(api.AscendTuneError, match="give measurement files, or --from-results"):
        api.load_measurements(spec, hw)
    matmul = api.load_spec("matmul")
    m = DATA / "measurements"
    loaded = api.load_measurements(matmul, hw, [m / "op_summary_block_dim.csv"],
                                   manifest=m / "manifest.yaml")
    # One row determines one coefficient at most: the one it is most sensitive to.
    fit = api.calibrate(matmul, hw, loaded)
    assert len(fit.fitted) == 1 and fit.held_out_before is None
    assert fit.before.n == fit.after.n == 1
    assert fit.after.mape <= fit.before.mape + 1e-9, "a fit never makes its own rows worse"
    assert fit.scales == api.calibrate(matmul, hw, [m / "op_summary_block_dim.csv"],
                                       manifest=m / "manifest.yaml").scales
    api.check_writable(tmp_path / "missing" / "cal.yaml")  # makes the folder, as -o does
    assert (tmp_path / "missing").is_dir()
    (tmp_path / "plain").write_text("")
    with pytest.raises(api.AscendTuneError, match=r"plain is a file, not a folder"):
        api.check_writable(tmp_path / "plain" / "cal.yaml")
    written = api.write_profile(tmp_path / "cal.yaml", fit, "ascend910b3", "mine", loaded)
    calibrated = api.load_profile(written)
    assert calibrated.name == "mine"
    (name,) = fit.fitted
    scale = fit.scales[name]
    (path,) = BY_NAME[name].leaves[:1]
    assert leaf_number(calibrated.data, path) == pytest.approx(
        leaf_number(hw.data, path) * scale, rel=1e-5)


def test_report_and_profiles(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    spec, hw = api.load_spec("add"), api.load_profile("ascend910b3")
    out = tmp_path / "r.json"
    api.tune(spec, hw, [{"totalLength": 4096}, {"totalLength": 8192}], budget=50, output=out)
    page = api.report([out], tmp_path / "r.html", chart_shapes=1)
    assert (page.operators, page.shapes, page.charts >= 1, page.skipped_rows) == (1, 2, True, ())
    assert (tmp_path / "r.html").read_text() == page.html and "<html" in page.html
    with pytest.raises(api.AscendTuneError, match="--charts must be 0 or more"):
        api.report([out], tmp_path / "x.html", chart_shapes=-1)
    names = [p["name"] for p in api.profiles()]
    assert "ascend910b3" in names
    doc = api.profile_document(hw)
    assert doc["name"] == "ascend910b3"
    assert doc["values"]["chip.clock_mhz"]["value"] == hw["clock_mhz"]
    assert {"value", "source", "confidence"} == set(doc["values"]["chip.clock_mhz"])
    assert api.check([Path(__file__).resolve().parents[1] / "operator_specs" / "add.yaml"]) == []

