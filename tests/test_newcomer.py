"""The frictions a newcomer hit (issue 27, part 6): shapes accumulate in a results file across
runs, notes are not warnings, an interrupt is not an error, --locked names what it would do,
a closed stdout is quiet, explain reads a results file, --set takes the tables' form, the API
takes text paths and prints short reprs, --from-results brings its spec and profile, CSV shape
files take comments, -o makes its folder, tables wrap at separators, and a built-in name
shadowed by a local file says which file it used."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ascend_tune import api
from ascend_tune.cli import console, main
from ascend_tune.results import format as results
from tests.conftest import ROOT

ADD = ["search", "add", "--hw", "ascend910b3", "--budget", "30"]


def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["ascend-tune", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr()
    code = exc.value.code
    return (code if isinstance(code, int) else 0 if code is None else 1), out.out, out.err


def _shapes(path: Path) -> list[int]:
    return [e["shape"]["totalLength"] for e in results.read_all(path)["shapes"]]


def test_shapes_accumulate_across_runs_and_prune_drops_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "new" / "folder" / "r.json"  # -o makes the folder
    assert run(capsys, monkeypatch, *ADD, "--shape", "totalLength=4096", "-o", str(out),
               "-q")[0] == 0
    code, _, err = run(capsys, monkeypatch, *ADD, "--shape", "totalLength=8192", "-o", str(out))
    assert code == 0 and _shapes(out) == [4096, 8192]
    assert "warning" not in err
    code, _, err = run(capsys, monkeypatch, *ADD, "--shape", "totalLength=8192", "-o", str(out))
    assert err == f"note: 1 of 1 shape(s) reused from {out}\n"
    # --locked names the shapes it would tune, and with --prune the ones it would drop.
    code, _, err = run(capsys, monkeypatch, *ADD, "--shape", "totalLength=65536", "--shape",
                       "totalLength=8192", "-o", str(out), "--locked")
    assert (code, err) == (1, f"error: {out}: 1 shape(s) would be tuned: totalLength=65536; "
                              "rerun without --locked to update it\n")
    code, _, err = run(capsys, monkeypatch, *ADD, "--shape", "totalLength=8192", "-o", str(out),
                       "--locked", "--prune")
    assert (code, err) == (1, f"error: {out}: 1 pruned: totalLength=4096; rerun without "
                              "--locked to update it\n")
    code, _, err = run(capsys, monkeypatch, *ADD, "--shape", "totalLength=8192", "-o", str(out),
                       "--locked", "--seed", "7")
    assert (code, err) == (1, f"error: {out}: the search settings changed (seed 0 -> 7); 1 "
                              "shape(s) would be retuned: totalLength=8192\n")
    # Dropping tuning data is said even with -q.
    code, _, err = run(capsys, monkeypatch, *ADD, "--shape", "totalLength=8192", "-o", str(out),
                       "--prune", "-q")
    assert (code, err) == (0, f"warning: {out}: dropped 1 shape(s) not in the shape list "
                              "(--prune)\n")
    assert _shapes(out) == [8192]


def test_an_interrupt_is_not_an_error(capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def stop(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "load_profile", stop)
    code, _, err = run(capsys, monkeypatch, *ADD, "--shape", "totalLength=4096")
    assert (code, err) == (130, "interrupted: what finished is saved\n")


def test_a_closed_stdout_exits_quietly(tmp_path: Path) -> None:
    # `ascend-tune ... | true`: the reader is gone before the table is printed.
    proc = subprocess.run(
        f"{sys.executable} -m ascend_tune hw list | true; echo rc=${{PIPESTATUS[0]}}",
        shell=True, executable="/bin/bash", capture_output=True, text=True, cwd=ROOT)
    assert proc.stdout == "rc=141\n"
    assert proc.stderr == ""


def test_explain_reads_a_results_file_and_set_takes_the_tables_form(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "r.json"
    entries = api.tune(api.load_spec("add"), api.load_profile("ascend910b3"),
                       [{"totalLength": 4096}], output=str(out), budget=30)
    best = entries[0]["best"]
    code, text, err = run(capsys, monkeypatch, "explain", str(out), "--shape",
                          "totalLength=4096")
    assert code == 0, err
    assert err == (f"note: {out}: the configuration its selection code runs for this shape "
                   "(the tuned winner)\n")
    assert text.splitlines()[1] == "configuration: " + " ".join(f"{k}={v}"
                                                               for k, v in best.items())
    # The summary table prints "blockDim=4 tileLength=1024": that is what --set takes.
    code, text, err = run(capsys, monkeypatch, "explain", "add", "--hw", "ascend910b3",
                          "--shape", "totalLength=4096", "--set", "blockDim=4",
                          "tileLength=1024", "--json")
    assert code == 0, err
    assert json.loads(text)["config"]["blockDim"] == 4
    assert json.loads(text)["config"]["tileLength"] == 1024
    code, _, err = run(capsys, monkeypatch, "explain", "add", "--shape", "totalLength=4096")
    assert (code, err) == (2, "error: --hw is required with a spec (a results file holds its "
                              "own)\n")


def test_the_api_takes_text_paths_and_prints_short_reprs(tmp_path: Path) -> None:
    spec, hw = api.load_spec("add"), api.load_profile("ascend910b3")
    out = str(tmp_path / "x.json")
    api.tune(spec, hw, [{"totalLength": 4096}], output=out, budget=30)
    written = api.emit(out, str(tmp_path / "Out"))
    assert str(tmp_path / "Out" / "op_host" / "add_custom_tiling.h") in written
    assert api.select(out, {"totalLength": 4096}).source == "exact"
    run = api.search(spec, hw, [{"totalLength": 4096}], output=out, budget=30)
    assert repr(spec) == (f"OperatorSpec('AddCustom', origin={spec.origin!r}, "
                          "shape_vars=('totalLength',), params=('blockDim', 'tileLength', "
                          "'bufferNum'))")
    assert repr(hw) == f"HardwareProfile('ascend910b3', sha256={hw.sha256[:12]!r})"
    assert repr(run) == ("SearchResult('AddCustom' on 'ascend910b3', shapes=1, saved=0, "
                         "failures=0, interrupted=False)")
    plan = api.prepare_emit(out, tmp_path / "Out")
    assert len(repr(plan)) < 300 and len(repr(api.explain(spec, hw, {"totalLength": 64}))) < 300


def test_from_results_brings_spec_and_profile(tmp_path: Path) -> None:
    spec, hw = api.results_inputs(ROOT / "examples" / "add" / "results.json")
    assert (spec.name, hw.name) == ("AddCustom", "ascend910b3")
    assert spec.sha256 == api.load_spec("add").sha256


def test_csv_shape_files_take_comments(tmp_path: Path) -> None:
    csv = tmp_path / "shapes.csv"
    csv.write_text("# decode shapes of the 7B model\ntotalLength\n# small\n4096\n8192\n")
    assert api.collect_shapes(api.load_spec("add"), [str(csv)]) == [
        {"totalLength": 4096}, {"totalLength": 8192}]


def test_tables_wrap_at_separators_not_mid_token(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = io.StringIO()
    monkeypatch.setattr(console, "stdout", console._Console(file=buf, width=60,
                                                            highlight=False, soft_wrap=True))
    console.table("t", ["shape", "changed", "us"],
                  [["M=4096,N=4096,K=4096", "baseM=256 baseN=128 stepKb=2", "579.25"]],
                  right=(2,))
    lines = buf.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 60
    text = "".join(lines)
    for token in ("M=4096,", "N=4096,", "K=4096", "baseM=256", "stepKb=2", "579.25"):
        assert token in text, (token, buf.getvalue())


def test_a_shadowed_builtin_name_says_which_file_it_used(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "operator_specs").mkdir()
    local = tmp_path / "operator_specs" / "add.yaml"
    local.write_text("# my edit\n" + (ROOT / "operator_specs" / "add.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    spec = api.load_spec("add")
    assert api.shadowing_spec("add", spec) == Path("operator_specs/add.yaml")
    assert api.shadowing_spec("operator_specs/add.yaml", spec) is None
    code, text, err = run(capsys, monkeypatch, *ADD, "--shape", "totalLength=4096", "--json")
    assert code == 0
    assert err.splitlines()[0] == (f"note: 'add' is the built-in spec {spec.origin}; "
                                   "operator_specs/add.yaml differs from it: pass "
                                   "operator_specs/add.yaml to tune that file")
    assert json.loads(text)["spec"]["path"] == spec.origin
    os.remove(local)
    assert api.shadowing_spec("add", spec) is None


def test_validate_from_results_needs_no_spec_or_profile(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.json"
    api.tune(api.load_spec("add"), api.load_profile("ascend910b3"),
             [{"totalLength": 4096}, {"totalLength": 65536}, {"totalLength": 1 << 20}],
             output=path, budget=40, top_k=2)
    doc = results.read_all(path)
    for n, entry in enumerate(doc["shapes"]):
        for i, cand in enumerate(entry["candidates"]):
            cand["measured"] = {"time_us": 3.0 + n + i}
    path.write_text(results.to_text(doc))
    code, text, err = run(capsys, monkeypatch, "validate", "--from-results", str(path),
                          "--json")
    assert code == 0, err
    assert len(json.loads(text)["points"]) == 6
    code, _, err = run(capsys, monkeypatch, "validate", "--spec", "add")
    assert (code, err) == (2, "error: give --hw (or --from-results RESULTS, which holds both)\n")


def test_a_lock_file_a_killed_search_left_does_not_block(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # SIGKILL leaves the lock file (its flock dies with the process): the next run takes it
    # over with a note and removes it at the end.
    out = tmp_path / "r.json"
    lock = tmp_path / ".r.json.lock"
    lock.write_text("4194999")
    code, _, err = run(capsys, monkeypatch, *ADD, "--shape", "totalLength=4096", "-o", str(out))
    assert code == 0, err
    assert err.splitlines()[0] == (f"note: {out}: took over the lock file of search 4194999, "
                                   "which was killed; what it saved is kept")
    assert not lock.exists() and _shapes(out) == [4096]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_sigkill_during_a_search_leaves_nothing_that_blocks(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    shapes = tmp_path / "s.csv"
    shapes.write_text("totalLength\n" + "".join(f"{4096 * (i + 1)}\n" for i in range(400)))
    cmd = [sys.executable, "-m", "ascend_tune", "search", "add", "--hw", "ascend910b3",
           "--shapes", str(shapes), "--budget", "20", "-q", "-o", str(out)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journal = tmp_path / ".r.json.journal"
    deadline = time.monotonic() + 120
    while (not journal.exists() or journal.stat().st_size < 2000) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    assert (tmp_path / ".r.json.lock").exists()
    rerun = subprocess.run([c for c in cmd if c != "-q"], cwd=ROOT, capture_output=True,
                           text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert "took over the lock file of search" in rerun.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "s.csv"]
    assert len(_shapes(out)) == 400
