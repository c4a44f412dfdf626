"""`measure --executor ray` into the team's database (issue 47, part 6), on a local Ray cluster
of two nodes on two loopback addresses (the head of one chip, a second node of another) and a
real PostgreSQL server (tests/postgres_server.py): each node records its own measurements, a
candidate runs only on a node of its chip, a worker killed mid-run leaves every candidate
measured exactly once, and a SQLite file with a multi-host cluster is refused in one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from ascend_tune import api
from ascend_tune.api import fleet
from ascend_tune.base import executors
from ascend_tune.db import location
from ascend_tune.db.records import Keys, Protocol
from ascend_tune.hardware import load_profile
from ascend_tune.hil import candidates as cands
from ascend_tune.hil import command as cmd
from ascend_tune.results import format as results
from ascend_tune.spec import load_spec
from ascend_tune.spec.shapes import shape_key
from tests import cli_process, postgres_server
from tests.conftest import ROOT, slow
from tests.npu_standin import standin

STANDIN = Path(standin.__file__)
CHIP, OTHER = "ascend910b3", "ascend910b4"
SHAPES = ("--shape", "totalLength=8192", "--shape", "totalLength=1048576")
TOP_K = 3


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_process.run(args, cwd=ROOT, env={**os.environ, "COLUMNS": "200"})


def spawned(*args: str) -> subprocess.CompletedProcess[str]:
    """A real ``python -m ascend_tune`` process: a fork of this test process would inherit its
    connection to the Ray cluster."""
    return subprocess.run([sys.executable, "-m", "ascend_tune", *args], cwd=ROOT,
                          env={**os.environ, "COLUMNS": "200"}, capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fleet") / "add.json"
    proc = cli("search", "add", "--hw", CHIP, *SHAPES, "--top-k", str(TOP_K), "--budget",
               "300", "--no-db", "-q", "-o", str(path))
    assert proc.returncode == 0, proc.stderr
    return path


def killer(folder: Path) -> str:
    """The stand-in behind a wrapper whose first run (of the whole test) kills the Ray worker
    that started it (its parent), as a host losing a worker mid-run does."""
    script = folder / "kill_first.py"
    script.write_text(
        "import os, signal, sys, time\n"
        f"marker = {str(folder / 'killed')!r}\n"
        "try:\n"
        "    open(marker, 'x').write(str(os.getppid()))\n"
        "except FileExistsError:\n"
        f"    os.execv(sys.executable, [sys.executable, {str(STANDIN)!r}, *sys.argv[1:]])\n"
        "os.kill(os.getppid(), signal.SIGKILL)\n"
        "time.sleep(30)\n")
    return (f"{sys.executable} {script} add --shape-json {{shape_json}} --config-json "
            "{config_json} --blob {tiling_blob} --headers {headers_dir} --repeat {repeat}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Two nodes: the head (node-a, two devices of CHIP) and a node on 127.0.0.2 (node-b, two
    devices of OTHER). Yields the address and the stand-in's counter file."""
    import ray
    from ray.cluster_utils import Cluster

    counter = tmp_path_factory.mktemp("ray") / "calls.txt"
    both = {"STANDIN_COUNTER": str(counter)}
    two = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 2, "resources": {"NPU": 2, f"NPU_{CHIP}": 2}, "include_dashboard": False,
        "env_vars": {**both, "ASCEND_TUNE_HOST": "node-a"}})
    try:
        two.add_node(num_cpus=2, resources={"NPU": 2, f"NPU_{OTHER}": 2},
                     node_ip_address="127.0.0.2",
                     env_vars={**both, "ASCEND_TUNE_HOST": "node-b"})
        two.wait_for_nodes()
        ray.init(address=two.address, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
        yield two.address, counter
    finally:
        ray.shutdown()
        two.shutdown()


def rows(url: str) -> list[tuple[str, str, str, float | None, int]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(sa.text(  # type: ignore[misc]
                "SELECT shape_key, config_key, host, time_us, baseline FROM measurements "
                "ORDER BY id"))]
    finally:
        engine.dispose()


@slow  # a two-node Ray cluster and a PostgreSQL server
def test_each_node_records_its_chips_candidates_once_though_a_worker_is_killed(
        cluster: tuple[str, Path], pg: postgres_server.Server, searched: Path,
        tmp_path: Path) -> None:
    _address, counter = cluster
    path = tmp_path / "add.json"
    shutil.copy(searched, path)
    url = pg.create_database(f"f{uuid.uuid4().hex[:12]}")
    plan = api.plan_measure(path, killer(tmp_path), repeat=2)
    db = api.open_db(url)
    assert db is not None
    out = api.measure(plan, executors.RayExecutor(None, {"NPU": 1}), db=db, baseline=False)
    db.dispose()
    assert (tmp_path / "killed").exists()  # a worker did die mid-run
    assert not out.failures and not out.interrupted
    doc = results.read_all(path)
    wanted = {(shape_key(e["shape"]), json.dumps(c["config"], sort_keys=True,
                                                         separators=(",", ":")))
              for e in doc["shapes"] for c in cands.candidates(e)}
    assert len(wanted) == 2 * TOP_K
    found = rows(url)
    # Every candidate exactly once, each measured (none lost with the killed worker) ...
    assert sorted((s, c) for s, c, _h, _t, _b in found) == sorted(wanted)
    assert all(t is not None for _s, _c, _h, t, _b in found)
    # ... recorded by the node that ran it: only the node of the file's chip ran any.
    assert {h for _s, _c, h, _t, _b in found} == {"node-a"}
    # The results file holds the same times the nodes recorded.
    times = {(shape_key(e["shape"]), json.dumps(c["config"], sort_keys=True,
                                                        separators=(",", ":"))):
             c["measured"]["time_us"] for e in doc["shapes"] for c in cands.candidates(e)}
    assert times == {(s, c): t for s, c, _h, t, _b in found}
    # The stand-in ran once per candidate and repeat (the killed try never reached it).
    assert len(counter.read_text().splitlines()) == 2 * TOP_K * 2

    # Measured the same way again: nothing runs, every candidate comes from the database.
    again = tmp_path / "again.json"
    shutil.copy(searched, again)
    db = api.open_db(url)
    assert db is not None
    second = api.measure(api.plan_measure(again, killer(tmp_path), repeat=2),
                         executors.RayExecutor(None, {"NPU": 1}), db=db, baseline=False)
    db.dispose()
    assert second.reused == 2 * TOP_K and second.invocations == 0
    assert len(rows(url)) == 2 * TOP_K


@slow  # a two-node Ray cluster
def test_a_sqlite_file_with_a_two_host_cluster_and_a_chip_no_node_has_are_refused(
        cluster: tuple[str, Path], searched: Path, tmp_path: Path) -> None:
    address, counter = cluster
    before = counter.read_text() if counter.exists() else ""
    path = tmp_path / "add.json"
    shutil.copy(searched, path)
    original = path.read_bytes()
    sqlite = location.sqlite_url(tmp_path / "team.sqlite")
    run = killer(tmp_path)
    proc = spawned("measure", str(path), "--run", run, "--executor", "ray", "--address",
                   address, "--db", sqlite)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "a SQLite file is this host's only" in lines[0], proc.stderr
    assert "2 hosts" in lines[0] and "PostgreSQL" in lines[0]
    # A results file of a chip no node has: refused, naming the resource a host advertises.
    other = tmp_path / "other.json"
    made = cli("search", "add", "--hw", "ascend310p3", *SHAPES[:2], "--no-db", "-q", "-o",
               str(other))
    assert made.returncode == 0, made.stderr
    proc = spawned("measure", str(other), "--run", run, "--executor", "ray", "--address",
                   address, "--no-db")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "'NPU_ascend310p3'" in lines[0], proc.stderr
    assert '"NPU": N, "NPU_ascend310p3": N' in lines[0]
    assert path.read_bytes() == original and not (tmp_path / "killed").exists()
    assert (counter.read_text() if counter.exists() else "") == before


def test_a_task_tried_again_returns_what_its_first_try_recorded(
        pg: postgres_server.Server, tmp_path: Path) -> None:
    """The node side of exactly once, on PostgreSQL: a second try of the same candidate's
    task (its worker died after recording) finds the record and does not run the command."""
    spec, hw = load_spec("add"), load_profile(CHIP)
    url = pg.create_database(f"f{uuid.uuid4().hex[:12]}")
    counter = tmp_path / "calls.txt"
    command = cmd.parse(f"{sys.executable} {STANDIN} add --shape-json {{shape_json}} "
                        "--config-json {config_json} --blob {tiling_blob} --headers "
                        "{headers_dir} --repeat {repeat}", [*spec.shape_vars, *spec.params],
                        repeat=2)
    shape, config = {"totalLength": 8192}, {"blockDim": 8, "tileLength": 512, "bufferNum": 2}
    values = {**{k: str(v) for k, v in config.items()}, "totalLength": "8192",
              "shape": "totalLength=8192", "shape_json": json.dumps(shape),
              "config_json": json.dumps(config), "block_dim": "8", "tiling_key": "0",
              "candidate": "0"}
    job = cmd.Job("totalLength=8192", 0, values, b"\0" * 8,
                  {f"op_x/{spec.snake_name}_tiling.h": "// tiling\n"})
    record = fleet.NodeRecord(url, Keys(hw.name, hw.sha256, spec.name, spec.variant,
                                        spec.sha256), Protocol("p", 0, 2, "driver"),
                              "u" * 64, shape, config, False, 1.0)
    os.environ["STANDIN_COUNTER"] = str(counter)
    try:
        first = fleet.measure_on_node(command, job, record)
        second = fleet.measure_on_node(command, job, record)
    finally:
        del os.environ["STANDIN_COUNTER"]
    assert first.error is None and first.invocations == 2
    assert second.invocations == 0 and second.time_us == first.time_us
    assert second.runs_us == first.runs_us
    assert len(counter.read_text().splitlines()) == 2  # the command ran for the first only
    assert len(rows(url)) == 1
