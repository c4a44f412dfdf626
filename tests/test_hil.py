"""Hardware in the loop without an NPU: `search --top-k`, `measure` with the device stand-in
(tests/npu_standin/standin.py: the model on a hidden, perturbed profile with seeded noise),
the measured winner, calibration from measured candidates, resuming a killed run, and the
same measurement on Ray's local cluster."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ascend_tune.base import executors
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.calibrate import fit as calibrate
from ascend_tune.calibrate.coefficients import leaf_number
from ascend_tune.calibrate.fit import error_stats
from ascend_tune.emit import blob as tiling_blob
from ascend_tune.emit import render as emit
from ascend_tune.hardware import HardwareProfile, load_profile_data
from ascend_tune.hil import candidates as cands
from ascend_tune.hil import command as cmd
from ascend_tune.hil import run as hil_run
from ascend_tune.model.engine import ShapeModel
from ascend_tune.results import format as results
from ascend_tune.results.store import survey
from ascend_tune.search.problem import decode_flat
from ascend_tune.spec import OperatorSpec, load_spec
from ascend_tune.spec.shapes import shape_key
from ascend_tune.tune import run as search_run
from ascend_tune.tune.shape import TuneSettings, tune_shape
from tests import cli_process
from tests.conftest import ROOT, STUB, needs_gxx, slow
from tests.npu_standin import standin

STANDIN = Path(standin.__file__)
SHAPES = [{"totalLength": n} for n in (8192, 1 << 20, 1 << 23)]
TOP_K = 5
REPEAT = 2
BUDGET = 500
# The stand-in writes an msprof-like op_summary (a Cast row, then the kernel's row).
CSV = ("--csv", "PROF_*/device_*/summary/op_summary_*.csv", "--where", "OP Type=AddCustom")


def standin_command(csv: bool = True) -> str:
    line = (f"{sys.executable} {STANDIN} add --shape-json {{shape_json}} --config-json "
            "{config_json} --blob {tiling_blob} --headers {headers_dir} --repeat {repeat}")
    return line + (" --csv-dir {work_dir}" if csv else "")


def parsed_command(csv: bool = True, **options: Any) -> cmd.Command:
    spec = load_spec("add")
    kwargs: dict[str, Any] = {"repeat": REPEAT, **options}
    if csv:
        kwargs.update(csv=CSV[1], where={"OP Type": "AddCustom"})
    return cmd.parse(standin_command(csv), [*spec.shape_vars, *spec.params], **kwargs)


def search(path: Path, spec: OperatorSpec, hw: HardwareProfile,
           shapes: Sequence[dict[str, int]], top_k: int = TOP_K, strategy: str = "auto",
           executor: executors.Executor | None = None) -> None:
    head = results.header(spec.name, spec.sha256, spec.source_text, hw.name, hw.sha256,
                          hw.data, strategy, 0, BUDGET, spec.variant, top_k=top_k)
    out = search_run.run_search(spec, hw, list(shapes),
                                TuneSettings(strategy, BUDGET, 0, top_k), head, output=path,
                                executor=executor)
    assert not out.failures and not out.interrupted


def counted(counter: Path) -> list[str]:
    return counter.read_text().splitlines() if counter.exists() else []


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory, hw: HardwareProfile) -> Path:
    path = tmp_path_factory.mktemp("searched") / "add.json"
    search(path, load_spec("add"), hw, SHAPES)
    return path


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory, searched: Path
             ) -> tuple[Path, hil_run.MeasureOutcome, list[str]]:
    """The searched file measured on two local devices, times read from the stand-in's CSV."""
    folder = tmp_path_factory.mktemp("measured")
    path = folder / "add.json"
    shutil.copy(searched, path)
    counter = folder / "calls.txt"
    os.environ["STANDIN_COUNTER"] = str(counter)
    try:
        out = hil_run.run_measure(path, parsed_command(),
                                  executors.LocalExecutor(["0", "1"]), baseline=False)
    finally:
        del os.environ["STANDIN_COUNTER"]
    return path, out, counted(counter)


def expected_winner(spec: OperatorSpec, entry: Mapping[str, Any]) -> int:
    times = [standin.median_time(spec, entry["shape"], c["config"], REPEAT)
             for c in entry["candidates"]]
    return int(np.argmin(times))


# ---- search --top-k -------------------------------------------------------------------------


@pytest.mark.xdist_group("hil_searched")
def test_top_k_keeps_the_k_best_distinct_configurations(tmp_path: Path, hw: HardwareProfile,
                                                        add_spec: OperatorSpec,
                                                        searched: Path) -> None:
    again = tmp_path / "again.json"
    search(again, add_spec, hw, SHAPES)
    assert again.read_bytes() == searched.read_bytes()  # deterministic
    doc = results.read_all(searched)
    assert doc["search"]["top_k"] == TOP_K
    for entry in doc["shapes"]:
        found = entry["candidates"]
        assert len(found) == TOP_K
        configs = [tuple(c["config"].values()) for c in found]
        assert len(set(configs)) == TOP_K
        latencies = [c["predicted"]["latency_us"] for c in found]
        assert latencies == sorted(latencies)
        assert found[0]["config"] == entry["best"]
        assert found[0]["predicted"] == entry["predicted"]
        assert found[0]["tiling"] == entry["tiling"]

    # Exhaustive on a small space: the candidates are exactly the K fastest valid
    # configurations of the whole space.
    shape = {"totalLength": 8192}
    entry = tune_shape(add_spec, hw, shape, TuneSettings("exhaustive", 1, 0, TOP_K))
    model = ShapeModel(add_spec, hw, shape)
    values = model.values(decode_flat(np.arange(model.space_size), model.sizes))
    ev = model.evaluate(values)
    best = np.sort(ev.latency_us[ev.valid])[:TOP_K]
    got = [c["predicted"]["latency_us"] for c in entry["candidates"]]
    assert got == pytest.approx(best.tolist(), rel=1e-6)


@pytest.mark.xdist_group("hil_searched")
def test_top_k_one_keeps_todays_file_and_another_k_retunes(tmp_path: Path,
                                                          hw: HardwareProfile,
                                                          add_spec: OperatorSpec,
                                                          searched: Path) -> None:
    plain = tmp_path / "plain.json"
    search(plain, add_spec, hw, SHAPES, top_k=1)
    doc = results.read_all(plain)
    assert "top_k" not in doc["search"]
    assert all("candidates" not in e for e in doc["shapes"])
    old_head = results.header(add_spec.name, add_spec.sha256, add_spec.source_text, hw.name,
                              hw.sha256, hw.data, "auto", 0, BUDGET, add_spec.variant)
    assert survey(plain, old_head, None).invalidated is None  # files without top_k stay valid
    k1 = results.read_head(plain)
    reason = survey(searched, k1, None).invalidated
    assert reason is not None and "search settings changed" in reason


# ---- the TilingData blob --------------------------------------------------------------------


@needs_gxx
def test_tiling_blob_is_the_bytes_the_emitted_host_code_saves(tmp_path: Path,
                                                              hw: HardwareProfile) -> None:
    from tests.test_tiling_layout import _host_program

    cases = {"add": [{"totalLength": 65536}, {"totalLength": 1000}],
             "matmul": [{"M": 1024, "N": 4096, "K": 512}],  # nested TCubeTiling
             "softmax": [{"rows": 4096, "cols": 1000}]}
    bundles, lines, expected = [], [], []
    for name, shapes in cases.items():
        spec = load_spec(name)
        shapes = [dict(zip(spec.shape_vars, s.values(), strict=True)) for s in shapes]
        entries = [tune_shape(spec, hw, s, TuneSettings("auto", 200, 0)) for s in shapes]
        doc = {**results.header(spec.name, spec.sha256, spec.source_text, hw.name,
                                hw.sha256, hw.data, "auto", 0, 200, spec.variant),
               "shapes": entries}
        bundle = emit.load_bundle(doc, name)
        bundles.append(bundle)
        emit.write(tmp_path / "out", emit.render(bundle, "macro"))
        for e in entries:
            lines.append(f"{spec.name} {' '.join(map(str, e['shape'].values()))} "
                         f"{hw['cube_cores']} {hw['vector_cores']}\n")
            expected.append(tiling_blob.pack(spec, e["tiling"]))
    src = tmp_path / "host.cpp"
    src.write_text(_host_program(bundles))
    build = subprocess.run(["g++", "-std=c++11", "-O0", f"-I{STUB}",
                            f"-I{tmp_path / 'out' / 'op_host'}", str(src), "-o",
                            str(tmp_path / "host")], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[:3000]
    out = subprocess.run([str(tmp_path / "host")], input="".join(lines), capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert len(out) == len(expected)
    for line, blob in zip(out, expected, strict=True):
        size, *data = (int(v) for v in line.split())
        assert size == len(blob)
        assert bytes(data) == blob


def test_tiling_blob_refuses_a_missing_or_non_numeric_field(add_spec: OperatorSpec,
                                                            hw: HardwareProfile) -> None:
    tiling = tune_shape(add_spec, hw, {"totalLength": 4096}, TuneSettings("auto", 50, 0))["tiling"]
    name = sorted(tiling)[0]
    with pytest.raises(AscendTuneError, match=f"field '{name}' is missing"):
        tiling_blob.pack(add_spec, {k: v for k, v in tiling.items() if k != name})
    with pytest.raises(AscendTuneError, match=f"{name} must be a number"):
        tiling_blob.pack(add_spec, {**tiling, name: "8"})


# ---- measure --------------------------------------------------------------------------------


@pytest.mark.xdist_group("hil_searched")
def test_measuring_reranks_and_the_measured_winner_is_emitted(
        measured: tuple[Path, hil_run.MeasureOutcome, list[str]],
        add_spec: OperatorSpec) -> None:
    path, out, calls = measured
    assert not out.failures and not out.interrupted
    assert out.measured == len(SHAPES) * TOP_K
    assert out.invocations == len(calls) == len(SHAPES) * TOP_K * REPEAT
    assert {line.split()[0] for line in calls} == {"device=0", "device=1"}
    doc = results.read_all(path)
    moved = 0
    for entry in doc["shapes"]:
        found = entry["candidates"]
        win = expected_winner(add_spec, entry)
        moved += win != 0
        assert entry["measured"]["candidate"] == win
        assert entry["best"] == found[win]["config"]
        assert entry["tiling"] == found[win]["tiling"]
        assert entry["predicted"] == found[win]["predicted"]  # the model's view of the winner
        assert entry["measured"]["time_us"] == found[win]["measured"]["time_us"]
        assert entry["measured"]["model_pick_us"] == found[0]["measured"]["time_us"]
        for c in found:
            # The CSV's kernel row, not the Cast row; per-pipe times kept for calibration.
            want = standin.median_time(add_spec, entry["shape"], c["config"], REPEAT)
            assert c["measured"]["time_us"] == pytest.approx(want, rel=1e-3)
            assert c["measured"]["pipes_us"]["aiv_mte2_time_us"] > 0
    assert moved >= 1  # the hidden profile changes the order: re-ranking is not a no-op
    bundle = emit.load_bundle(doc, str(path))
    winners = {shape_key(e["shape"]): e["best"] for e in doc["shapes"]}
    assert {shape_key(s): c for s, c in bundle.shapes} == winners


@pytest.mark.xdist_group("hil_searched")
def test_calibration_from_measured_candidates_moves_toward_the_hidden_profile(
        measured: tuple[Path, hil_run.MeasureOutcome, list[str]], hw: HardwareProfile,
        add_spec: OperatorSpec, tmp_path: Path) -> None:
    path, _out, _calls = measured
    rows = cands.read_measured_rows([path], add_spec)
    assert len(rows) == len(SHAPES) * TOP_K
    fit = calibrate.fit(add_spec, hw, rows)
    fitted = load_profile_data(fit.data, "calibrated")
    hidden = standin.hidden_profile()
    owner = {path: c.name for c in calibrate.COEFFICIENTS for path in c.leaves}
    moved = 0
    for leaf in standin.HIDDEN_FACTORS:
        before, after, truth = (leaf_number(p.data, leaf) for p in (hw, fitted, hidden))
        if owner[leaf] in fit.fitted:
            moved += 1
            assert abs(math.log(after / truth)) < abs(math.log(before / truth)), leaf
        else:  # 11 rows cannot fit every coefficient they see: the rest stay at the source
            assert after == before and "fit row(s) were measured" in fit.not_fitted[
                owner[leaf]], leaf
    assert moved >= 3

    # A second search on the calibrated profile: its picks run at least as fast on the
    # stand-in, and its ranking of random configurations agrees better with the stand-in's.
    again = tmp_path / "calibrated.json"
    search(again, add_spec, fitted, SHAPES)
    first = {shape_key(e["shape"]): e for e in results.read_all(path)["shapes"]}
    for entry in results.read_all(again)["shapes"]:
        shape = entry["shape"]
        model_pick = first[shape_key(shape)]["candidates"][0]["config"]
        assert (standin.true_time(add_spec, shape, entry["best"])[0]
                <= standin.true_time(add_spec, shape, model_pick)[0] * (1 + 1e-9))
        before, after = (_agreement(add_spec, p, shape) for p in (hw, fitted))
        assert after > before, shape


def _agreement(spec: OperatorSpec, hw: HardwareProfile, shape: Mapping[str, int]) -> float:
    """Spearman between the model on ``hw`` and the stand-in over 200 random configurations."""
    model = ShapeModel(spec, hw, dict(shape))
    genomes = np.random.default_rng(0).integers(0, model.sizes, size=(200, model.sizes.size))
    values = model.values(genomes)
    ev = model.evaluate(values)
    keep = values[ev.valid]
    truth = np.array([standin.true_time(spec, shape, dict(zip(spec.params, map(int, v),
                                                              strict=True)))[0] for v in keep])
    return error_stats(ev.latency_us[ev.valid], truth).spearman


def cli(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return cli_process.run(args, cwd=ROOT, env={**os.environ, "COLUMNS": "200", **(env or {})})


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory, hw: HardwareProfile) -> Path:
    """Two shapes, four candidates each."""
    path = tmp_path_factory.mktemp("small") / "add.json"
    search(path, load_spec("add"), hw, [{"totalLength": 65536}, {"totalLength": 1 << 20}],
           top_k=4)
    return path


@pytest.mark.xdist_group("hil_small")
def test_failed_and_timed_out_candidates_are_recorded_and_skipped(tmp_path: Path,
                                                                  small: Path) -> None:
    path = tmp_path / "add.json"
    shutil.copy(small, path)
    doc = results.read_all(path)
    fail = doc["shapes"][0]["candidates"][0]["config"]  # the model's pick of shape 0 fails
    hang = doc["shapes"][1]["candidates"][2]["config"]
    assert fail not in [c["config"] for c in doc["shapes"][1]["candidates"]]
    assert hang not in [c["config"] for c in doc["shapes"][0]["candidates"]]
    counter = tmp_path / "calls.txt"
    proc = cli("measure", str(path), "--run", standin_command(csv=False), "--repeat", "1",
               "--no-baseline", "--timeout", "4", "--retries", "1", "--devices", "0-1", "--json",
               env={"STANDIN_COUNTER": str(counter), "STANDIN_FAIL": json.dumps(fail),
                    "STANDIN_HANG": json.dumps(hang)})
    assert proc.returncode == 1, proc.stderr
    summary = json.loads(proc.stdout)
    assert len(summary["failures"]) == 2
    assert "exit status 3: aclrtSynchronizeStream failed" in proc.stderr
    assert "timed out after 4 s" in proc.stderr
    after = results.read_all(path)
    first, second = after["shapes"]
    assert first["candidates"][0]["measured"]["attempts"] == 2  # retried once
    assert "exit status 3" in first["candidates"][0]["measured"]["error"]
    assert "timed out" in second["candidates"][2]["measured"]["error"]
    # Skipped: the winner is the fastest candidate that measured.
    for entry in (first, second):
        timed = [(c["measured"]["time_us"], i) for i, c in enumerate(entry["candidates"])
                 if "time_us" in c["measured"]]
        assert entry["measured"]["candidate"] == min(timed)[1]
        assert entry["measured"]["failed"] == 1
    assert entry["measured"]["candidate"] != 2
    assert len(counted(counter)) == 8 - 2 + 2 * 2  # the two failing ones ran twice


@pytest.mark.xdist_group("hil_small")
def test_rerun_measures_nothing_and_retry_failed_only_the_failed(tmp_path: Path,
                                                                small: Path) -> None:
    path = tmp_path / "add.json"
    shutil.copy(small, path)
    fail = results.read_all(path)["shapes"][0]["candidates"][1]["config"]
    counter = tmp_path / "calls.txt"
    env = {"STANDIN_COUNTER": str(counter)}
    first = cli("measure", str(path), "--run", standin_command(csv=False), "--repeat", "1",
                "--no-baseline", "--retries", "0", "--devices", "0-1", "-q",
                env={**env, "STANDIN_FAIL": json.dumps(fail)})
    assert first.returncode == 1 and len(counted(counter)) == 8
    again = cli("measure", str(path), "--run", standin_command(csv=False), "--repeat", "1",
                "--no-baseline", "--devices", "0-1", "-q", env=env)
    assert again.returncode == 0 and len(counted(counter)) == 8
    retry = cli("measure", str(path), "--run", standin_command(csv=False), "--repeat", "1",
                "--no-baseline", "--retry-failed", "-q", env=env)
    assert retry.returncode == 0, retry.stderr
    assert len(counted(counter)) == 9
    assert all("time_us" in c["measured"] for e in results.read_all(path)["shapes"]
               for c in e["candidates"])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
@pytest.mark.xdist_group("hil_small")
def test_a_killed_measure_run_resumes_without_remeasuring(tmp_path: Path, small: Path,
                                                          sig: signal.Signals) -> None:
    path = tmp_path / "add.json"
    shutil.copy(small, path)
    counter = tmp_path / "calls.txt"
    args = [sys.executable, "-m", "ascend_tune", "measure", str(path), "--run",
            standin_command(csv=False), "--repeat", "1", "--no-baseline", "-q"]
    scratch = tmp_path / "tmp"  # the runs' temp folders (blob, headers) go here
    scratch.mkdir()
    env = {**os.environ, "STANDIN_COUNTER": str(counter), "STANDIN_SLEEP_S": "0.3",
           "TMPDIR": str(scratch)}
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(counted(counter)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(sig)
    _stdout, stderr = proc.communicate(timeout=60)
    left = sorted(scratch.glob("ascend-tune-measure-*"))
    if sig == signal.SIGTERM:
        assert proc.returncode == 130, stderr
        # The user's stop is not an error; the run cleans up after itself.
        assert stderr.startswith("interrupted: ") and "error" not in stderr, stderr
        assert left == []
    else:
        assert proc.returncode == -signal.SIGKILL
        assert len(left) == 1, "the killed run's temp folder (it cannot remove it)"
    kept = sum("measured" in c for e in results.read_all(path)["shapes"]
               for c in e["candidates"])
    assert 3 <= kept < 8
    before = len(counted(counter))
    rerun = subprocess.run(args, cwd=ROOT, env={**env, "STANDIN_SLEEP_S": "0"},
                           capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    # -q silences progress, not housekeeping: the killed run's folder is removed and said so.
    assert rerun.stderr == "".join(f"note: removed {folder}, the temp folder of a measure run "
                                   "that was killed\n" for folder in left)
    assert list(scratch.iterdir()) == []
    assert len(counted(counter)) - before == 8 - kept  # nothing measured twice
    final = results.read_all(path)
    assert all("time_us" in c["measured"] for e in final["shapes"] for c in e["candidates"])
    assert not results.journal_path(path).exists()


@pytest.mark.xdist_group("hil_small")
def test_measure_refuses_bad_input_in_one_line(tmp_path: Path, small: Path) -> None:
    def one_line(proc: subprocess.CompletedProcess[str], contains: str) -> None:
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert contains in proc.stderr

    one_line(cli("measure", str(small), "--run", "echo {shapee}"),
             "unknown placeholder {shapee}")
    one_line(cli("measure", str(small), "--run", "echo 1", "--pattern", "time"),
             "exactly one group")
    one_line(cli("measure", str(small), "--run", "echo 1", "--devices", "3-1"),
             "'3-1' is not a range of device ids")
    one_line(cli("measure", str(small), "--run", "echo 'unclosed"), "--run:")
    edited = tmp_path / "edited.json"
    doc = results.read_all(small)
    doc["shapes"][1]["candidates"][3]["config"]["blockDim"] = 100_000
    edited.write_text(results.to_text(doc))
    before = edited.read_bytes()
    one_line(cli("measure", str(edited), "--run", "echo 1"),
             "candidates[3]: the configuration fails 'every_core_busy'")
    assert edited.read_bytes() == before  # nothing written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edited.json"]  # nothing left


@pytest.mark.xdist_group("hil_searched")
def test_search_summary_shows_predicted_and_measured(
        measured: tuple[Path, hil_run.MeasureOutcome, list[str]], tmp_path: Path) -> None:
    path, _out, _calls = measured
    proc = cli("search", "add", "--hw", "ascend910b3", "--top-k", str(TOP_K), "--budget",
               str(BUDGET), *[a for s in SHAPES for a in ("--shape", shape_key(s))],
               "-o", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "predicted us" in proc.stdout and "measured us" in proc.stdout
    entry = results.read_all(path)["shapes"][0]
    assert f"{entry['measured']['time_us']:.2f}" in proc.stdout


# ---- Ray ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Ray's local cluster with two CPUs and two fake NPUs; yields the stand-in's counter
    file (Ray workers get their environment when the cluster starts)."""
    import ray

    counter = tmp_path_factory.mktemp("ray") / "calls.txt"
    # address="local": a cluster of its own, though another test's cluster (test_fleet's, in
    # the same worker) left its address in /tmp/ray/ray_current_cluster, which ray.init()
    # without an address would try to join.
    ray.init(address="local", num_cpus=2, resources={"NPU": 2}, include_dashboard=False,
             log_to_driver=False,
             configure_logging=False,
             runtime_env={"env_vars": {"STANDIN_COUNTER": str(counter)}})
    try:
        yield counter
    finally:
        ray.shutdown()


@slow  # starts a local Ray cluster (the optional ray extra)
@pytest.mark.xdist_group("hil_searched")
def test_measure_and_search_on_a_ray_cluster(
        ray_cluster: Path, tmp_path: Path, searched: Path, hw: HardwareProfile,
        add_spec: OperatorSpec,
        measured: tuple[Path, hil_run.MeasureOutcome, list[str]]) -> None:
    path = tmp_path / "add.json"
    shutil.copy(searched, path)
    counter = ray_cluster
    out = hil_run.run_measure(path, parsed_command(), executors.RayExecutor(None, {"NPU": 1}),
                              baseline=False)
    assert len(counted(counter)) == len(SHAPES) * TOP_K * REPEAT
    assert not out.failures and out.measured == len(SHAPES) * TOP_K
    # Ray gave each task one of the two NPUs and set ASCEND_RT_VISIBLE_DEVICES itself.
    assert {line.split()[0] for line in counted(counter)} == {"device=0", "device=1"}
    local = results.read_all(measured[0])
    assert results.read_all(path)["shapes"] == local["shapes"]  # the same winners and times

    spread = tmp_path / "spread.json"
    search(spread, add_spec, hw, SHAPES, executor=executors.RayExecutor(None, {"CPU": 1}))
    assert spread.read_bytes() == searched.read_bytes()


@pytest.mark.xdist_group("hil_searched")
def test_calibrate_and_validate_read_the_measured_candidates(
        measured: tuple[Path, hil_run.MeasureOutcome, list[str]], tmp_path: Path,
        add_spec: OperatorSpec) -> None:
    path = measured[0]
    rows = len(SHAPES) * TOP_K
    profile = tmp_path / "cal.yaml"
    proc = cli("calibrate", "--from-results", str(path), "--spec", "add", "--hw",
               "ascend910b3", "-o", str(profile), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows"] == rows and profile.exists()
    proc = cli("validate", "--from-results", str(path), "--spec", "add", "--hw", "ascend910b3",
               "--json")
    assert proc.returncode == 0, proc.stderr
    points = json.loads(proc.stdout)["points"]
    assert len(points) == rows
    first = results.read_all(path)["shapes"][0]
    assert points[0]["measured_us"] == first["candidates"][0]["measured"]["time_us"]
    other = tmp_path / "other.json"
    search(other, load_spec("mul"), standin.hidden_profile(), SHAPES[:1], top_k=1)
    proc = cli("calibrate", "--from-results", str(other), "--spec", "add", "--hw",
               "ascend910b3", "-o", str(profile))
    assert proc.returncode == 2 and "results of spec" in proc.stderr


def test_devices_and_placeholders() -> None:
    assert executors.parse_devices("0-3,6,2") == ["0", "1", "2", "3", "6"]
    assert cmd.substitute("{{x}} {M}-{M}", {"M": "4"}) == "{x} 4-4"
    with pytest.raises(AscendTuneError, match="unmatched brace"):
        cmd.parse("echo {M", ["M"])


def _job(values: Mapping[str, str]) -> cmd.Job:
    return cmd.Job("totalLength=65536", 0, dict(values), b"\0" * 8, {"op_host/x_tiling.h": ""})


def test_the_time_comes_from_a_pattern_or_an_msprof_csv() -> None:
    values = {"shape": "totalLength=65536"}
    # One argument with spaces stays one argument (no shell); a custom pattern reads it.
    line = (f"{sys.executable} -c \"import sys; print('took', len(sys.argv[1]), 'us')\" "
            "'{shape} x'")
    out = cmd.run_job(cmd.parse(line, [], pattern=r"took (\S+) us", repeat=3), _job(values))
    assert out.error is None and out.time_us == len("totalLength=65536 x")
    assert out.invocations == 3 and out.runs_us == [19.0, 19.0, 19.0]
    # msprof op's PipeUtilization.csv: the slowest block, each pipe's largest time.
    writer = ("import sys, pathlib; pathlib.Path(sys.argv[1], 'PipeUtilization.csv').write_text("
              "'block_id,sub_block_id,aic_time(us),aiv_time(us),aiv_mte2_time(us)\\n"
              "0,0,,7.5,3.0\\n0,1,,9.25,4.0\\n1,0,,8.0,2.0\\n')")
    line = f"{sys.executable} -c \"{writer}\" {{work_dir}}"
    out = cmd.run_job(cmd.parse(line, [], csv="PipeUtilization.csv"), _job(values))
    assert out.error is None, out.error
    assert out.time_us == 9.25 and out.pipes_us == {"aiv_mte2_time_us": 4.0}
    # No time in the output: the candidate fails with the output's last line in the error.
    out = cmd.run_job(cmd.parse("echo done", []), _job(values))
    assert out.time_us is None and out.error is not None and "'done'" in out.error
