from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests import cli_process
from tests.conftest import DATA, ROOT


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return cli_process.run(args, cwd=cwd or ROOT, env={**os.environ, "COLUMNS": "200"})


def one_line_error(proc: subprocess.CompletedProcess[str], contains: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert contains in lines[0], lines[0]


@pytest.mark.parametrize(("args", "contains"), [
    (["search", "missing.yaml", "--hw", "ascend910b3", "--shape", "totalLength=8"],
     "operator spec 'missing.yaml' not found"),
    (["search", "add", "--hw", "ascend910b9", "--shape", "totalLength=8"],
     "hardware profile 'ascend910b9' not found (did you mean 'ascend910b4'?)"),
    (["search", "add", "--hw", "ascend910b3", "--shape", "totalLenght=8"],
     "unknown shape variable 'totalLenght' (did you mean 'totalLength'?)"),
    (["search", "add", "--hw", "ascend910b3", "--shape", "totalLength=abc"],
     "value of totalLength must be an integer, got 'abc'"),
    (["search", "add", "--hw", "ascend910b3", "--shape", "totalLength=0"],
     "totalLength=0 is out of range"),
    (["search", str(DATA / "broken" / "hostile_expression.yaml"), "--hw", "ascend910b3",
      "--shape", "totalLength=8"], "only plain function calls are allowed"),
    (["search", str(DATA / "broken" / "empty_domain.yaml"), "--hw", "ascend910b3",
      "--shape", "totalLength=8"], "params.tileLength: empty domain (pow2 [65536, 32768])"),
    (["search", "add", "--hw", "ascend910b3", "--shape", "totalLength=8", "-o",
      "README.md/folder/r.json"], "r.json: README.md is a file, not a folder"),
    (["search", "add", "--hw", "ascend910b3", "--shapes", "nope.csv"], "shape file not found"),
    (["explain", "add", "--hw", "ascend910b3", "--shape", "totalLength=4096", "--set",
      "bufferNum=2,tileLength=65536"], "breaks constraint 'ub_fits'"),
    (["emit", "missing.json", "-o", "out"], "results file not found"),
])
def test_bad_input_is_one_line_exit_2(args: list[str], contains: str) -> None:
    one_line_error(cli(*args), contains)


def test_unwritable_output_folder(tmp_path: Path) -> None:
    # /sys refuses new files even to root; a read-only folder does it for other users.
    locked = Path("/sys") if os.geteuid() == 0 else tmp_path / "locked"
    if locked != Path("/sys"):
        locked.mkdir()
        locked.chmod(0o500)
    try:
        one_line_error(cli("search", "add", "--hw", "ascend910b3", "--shape", "totalLength=8",
                           "-o", str(locked / "r.json")), "cannot write results")
    finally:
        if locked != Path("/sys"):
            locked.chmod(0o700)
    plain = tmp_path / "plain"
    plain.write_text("")
    one_line_error(cli("search", "add", "--hw", "ascend910b3", "--shape", "totalLength=8",
                       "-o", str(plain / "r.json")), "is a file, not a folder")
    one_line_error(cli("search", "add", "--hw", "ascend910b3", "--shape", "totalLength=8",
                       "-o", str(tmp_path)), "is a folder; give a file name")


def test_search_is_deterministic_cached_and_job_independent(tmp_path: Path) -> None:
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("totalLength\n1000\n65536\n12345679\n")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    base = ["search", "add", "--hw", "ascend910b3", "--shapes", str(shapes), "--seed", "3",
            "--quiet"]
    assert cli(*base, "-o", str(a)).returncode == 0
    assert cli(*base, "--jobs", "2", "--strategy", "auto", "-o", str(b)).returncode == 0
    assert a.read_bytes() == b.read_bytes()
    # A rerun tunes nothing new and leaves the file byte-identical.
    before = a.read_bytes()
    rerun = cli("search", "add", "--hw", "ascend910b3", "--shapes", str(shapes), "--seed", "3",
                "-o", str(a))
    assert rerun.returncode == 0 and "3 of 3 shape(s) reused" in rerun.stderr
    assert a.read_bytes() == before
    # CI: --locked passes when nothing would change, and writes nothing.
    locked = [*base, "-o", str(a), "--locked"]
    assert cli(*locked).returncode == 0 and a.read_bytes() == before
    # A comment-only spec edit keeps the cache (keyed by meaning, not bytes).
    spec = tmp_path / "add.yaml"
    spec.write_text("# my copy\n" + (ROOT / "operator_specs/add.yaml").read_text())
    copy = ["search", str(spec), "--hw", "ascend910b3", "--shapes", str(shapes), "--seed", "3",
            "-o", str(a)]
    assert "3 of 3 shape(s) reused" in cli(*copy).stderr
    # Another seed would retune everything: --locked says so and exits 1, writing nothing.
    proc = cli("search", "add", "--hw", "ascend910b3", "--shapes", str(shapes), "--seed", "4",
               "-o", str(a), "--locked")
    assert proc.returncode == 1 and "search settings changed" in proc.stderr
    assert a.read_bytes() == before
    # Shapes dropped from the list stay (tuning data); --prune drops them, with a warning.
    shapes.write_text("totalLength\n1000\n65536\n")
    assert cli(*locked).returncode == 0 and a.read_bytes() == before
    proc = cli(*locked, "--prune")
    assert proc.returncode == 1 and proc.stderr == (
        f"error: {a}: 1 pruned: totalLength=12345679; rerun without --locked to update it\n")
    proc = cli(*base[:-1], "-o", str(a), "--prune")
    assert proc.returncode == 0 and (f"warning: {a}: dropped 1 shape(s) not in the shape list "
                                     "(--prune)") in proc.stderr
    assert [e["shape"]["totalLength"] for e in json.loads(a.read_text())["shapes"]] == [1000,
                                                                                       65536]
    # Without --locked, other settings retune every shape, with a note.
    other = cli("search", "add", "--hw", "ascend910b3", "--shapes", str(shapes), "--seed", "4",
                "-o", str(a))
    assert other.returncode == 0 and "retuning every shape" in other.stderr
    assert json.loads(a.read_text())["search"]["seed"] == 4
    # A corrupt file is an error and is not overwritten.
    a.write_text("{not json")
    one_line_error(cli(*base, "-o", str(a)), "corrupt results file")
    assert a.read_text() == "{not json"


def test_shape_without_valid_configuration_exits_1_and_keeps_others(tmp_path: Path) -> None:
    profile = tmp_path / "tiny_ub.yaml"
    profile.write_text("name: tiny_ub\nbase: ascend910b3\nmemory:\n  ub_bytes: "
                       "{value: 3072, source: test, confidence: low}\n")
    out = tmp_path / "r.json"
    proc = cli("search", str(DATA / "huge_tile_add.yaml"), "--force", "--hw", str(profile),
               "--shape",
               "totalLength=4096", "--shape", "totalLength=64", "-o", str(out), "--quiet")
    assert proc.returncode == 1, proc.stderr
    assert "totalLength=4096: no valid configuration" in proc.stderr
    assert "whole_input_resident fails" in proc.stderr
    assert '"totalLength":64' in out.read_text()


def test_explain_and_hw_commands() -> None:
    proc = cli("explain", "add", "--hw", "ascend910b3", "--shape", "totalLength=16777216")
    assert proc.returncode == 0, proc.stderr
    assert "diagnosis:" in proc.stdout and "aiv_mte2_time_us" in proc.stdout
    proc = cli("explain", "matmul", "--hw", "ascend910b3", "--shape", "M=4096,N=4096,K=4096",
               "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    # Roofline of 4096^3 bf16: 2 * 4096^3 FLOPs over 2 * (16 * 16 * 16) MACs per cycle * 20
    # AIC * 1.8e9 Hz = 2.9491e14 FLOP/s: 466.03 us (the GM term, 3 * 4096^2 * 2 B at 1.6 TB/s
    # = 62.9 us, is lower).
    assert doc["predicted"]["roofline_us"] == pytest.approx(466.034, rel=1e-5)
    assert (doc["spec"], doc["hw"], doc["shape"]) == ("MatmulCustom", "ascend910b3",
                                                      {"M": 4096, "N": 4096, "K": 4096})
    lst = cli("hw", "list", "--json")
    assert lst.returncode == 0
    assert sorted(p["name"] for p in json.loads(lst.stdout)) == [
        "ascend310p3", "ascend910b1", "ascend910b2", "ascend910b3", "ascend910b4",
        "ascend950pr", "ascend950pr_9589"]
    show = cli("hw", "show", "ascend310p3")
    assert show.returncode == 0 and "S16" in show.stdout


def test_check_command(tmp_path: Path) -> None:
    ok = cli("check", *[str(p) for p in (ROOT / "operator_specs").glob("*.yaml")],
             *[str(p) for p in (ROOT / "hw_profiles").glob("*.yaml")], cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    bad = cli("check", str(DATA / "broken" / "unknown_key.yaml"),
              str(DATA / "broken" / "wrong_pipe.yaml"))
    assert bad.returncode == 2
    lines = bad.stderr.strip().splitlines()
    broken = DATA / "broken"
    assert [line.split(": ", 3)[:3] for line in lines] == [
        ["error", f"{broken / 'unknown_key.yaml'}:22", "constraint"],
        ["error", f"{broken / 'wrong_pipe.yaml'}:39", "pipeline.vector.body.0.body.2.pipe"]]
    assert "unknown key 'constraint' (did you mean 'constraints'?)" in lines[0]
    assert "pipe 'cube' does not exist on the vector core" in lines[1]


def test_emit_check_cycle(tmp_path: Path) -> None:
    res = tmp_path / "r.json"
    assert cli("search", "add", "--hw", "ascend910b3", "--shape", "totalLength=4096", "-o",
               str(res), "--quiet").returncode == 0
    out = tmp_path / "proj"
    stale = cli("emit", str(res), "-o", str(out), "--check")
    assert stale.returncode == 1 and "missing:" in stale.stdout
    assert stale.stdout.strip().splitlines()[-1] == (
        f"3 of 3 file(s) stale or missing in {out}; fix: ascend-tune emit {res} -o {out}")
    assert cli("emit", str(res), "-o", str(out), "--op-host").returncode == 0
    # The host file emitted once is kept in the check without --op-host.
    host = out / "op_host/add_custom.cpp"
    host.write_text(host.read_text().replace("AddConfig", "AddConfigX"))
    stale = cli("emit", str(res), "-o", str(out), "--check")
    assert stale.returncode == 1 and f"stale: {host}" in stale.stdout
    assert "fix: ascend-tune emit" in stale.stdout and "--op-host" in stale.stdout
    assert cli("emit", str(res), "-o", str(out)).returncode == 0
    assert cli("emit", str(res), "-o", str(out), "--check").returncode == 0
    # Files an earlier emit wrote that these options do not are listed, never deleted.
    old = out / "op_host/add_custom_tiling_func.cpp"
    old.write_text("// Generated by ascend-tune 0.0.9 - do not edit\n")
    proc = cli("emit", str(res), "-o", str(out), "--check")
    assert proc.returncode == 0 and f"leftover: {old}" in proc.stdout and old.exists()
    # Switching styles: the other style's header is named, not mistaken for another operator.
    one_line_error(cli("emit", str(res), "-o", str(out), "--style", "struct"),
                   "header from an emit in the other style; delete it to switch styles")


def test_calibrate_and_validate_commands(tmp_path: Path) -> None:
    m = DATA / "measurements"
    bad = tmp_path / "bad.csv"
    bad.write_text("totalLength,time_us\nx,1\n")
    one_line_error(cli("validate", str(bad), "--spec", "add", "--hw", "ascend910b3", "-q"),
                   "no usable measurement row")
    proc = cli("validate", str(m / "plain.csv"), "--spec", "add", "--hw", "ascend910b3")
    assert proc.returncode == 0, proc.stderr
    assert "plain.csv:6: could not convert string to float: 'abc'" in proc.stderr
    assert "used 3 of 4 row(s), skipped 1" in proc.stderr
    assert "MAPE" in proc.stdout
    out = tmp_path / "cal.yaml"
    proc = cli("calibrate", str(m / "op_summary_block_dim.csv"), str(m / "PipeUtilization.csv"),
               "--spec", "matmul", "--hw", "ascend910b3", "--manifest", str(m / "manifest.yaml"),
               "-o", str(out), "--exclude", "gm_to_l1_latency", "--exclude", "hbm_bandwidth")
    assert proc.returncode == 0, proc.stderr
    assert "after (cal.yaml)" in proc.stdout
    # The PipeUtilization run's manifest config does not fit L0C: skipped with its reason.
    assert "breaks constraint 'l0c_fits'" in proc.stderr
    assert "used 1 of 3 row(s), skipped 2" in proc.stderr
    assert cli("check", str(out)).returncode == 0
    proc = cli("validate", str(m / "plain.csv"), "--spec", "add", "--hw", str(out), "--json",
               "--kfold", "3", "--exclude", "gm_to_ub_latency", "--exclude", "hbm_bandwidth")
    assert proc.returncode == 0, proc.stderr
    assert '"held_out"' in proc.stdout


def test_dry_run_tunes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = cli("search", "add", "--hw", "ascend910b3", "--shape", "totalLength=4096",
               "--dry-run", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "640" in proc.stdout and "exhaustive" in proc.stdout
    assert not out.exists()


def test_every_command_speaks_json(tmp_path: Path) -> None:
    ok = cli("check", str(ROOT / "operator_specs/add.yaml"), "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout) == {
        "files": [str(ROOT / "operator_specs/add.yaml")], "problems": [], "notes": []}
    bad = cli("check", str(DATA / "broken/unknown_key.yaml"), "--json")
    assert bad.returncode == 2 and len(json.loads(bad.stdout)["problems"]) == 1
    res = tmp_path / "r.json"
    assert cli("search", "add", "--hw", "ascend910b3", "--shape", "totalLength=4096", "-o",
               str(res), "-q").returncode == 0
    out = tmp_path / "proj"
    wrote = cli("emit", str(res), "-o", str(out), "--json")
    assert wrote.returncode == 0 and len(json.loads(wrote.stdout)["written"]) == 3
    checked = cli("emit", str(res), "-o", str(out), "--check", "--json")
    assert checked.returncode == 0 and json.loads(checked.stdout)["stale"] == []
    m = DATA / "measurements"
    cal = cli("calibrate", str(m / "op_summary_block_dim.csv"), "--spec", "matmul", "--hw",
              "ascend910b3", "--manifest", str(m / "manifest.yaml"), "-o",
              str(tmp_path / "cal.yaml"), "--json", "--exclude", "gm_to_l1_latency",
              "--exclude", "hbm_bandwidth")
    assert cal.returncode == 0, cal.stderr
    doc = json.loads(cal.stdout)
    fitted = doc["in_sample"]
    assert fitted["after"]["mape"] <= fitted["before"]["mape"] + 1e-9 and doc["rows"] >= 1
