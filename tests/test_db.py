"""The tuning database on both backends (a SQLite file and a throwaway PostgreSQL server,
tests/postgres_server.py): the schema and its migrations, what `search` and `measure` record
and serve, export / import, parallel writers, and the one-line refusals."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from ascend_tune.db import Database, location, schema
from ascend_tune.db.records import Keys, Protocol, measured_under, record_measurement
from ascend_tune.model.engine import ShapeModel
from ascend_tune.results import format as results
from tests import cli_process, postgres_server
from tests.conftest import ROOT
from tests.npu_standin import standin

STANDIN = Path(standin.__file__)
SHAPES = ("--shape", "totalLength=65536", "--shape", "totalLength=1048576")


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return location.sqlite_url(tmp_path / "team.sqlite")
    server: postgres_server.Server = request.getfixturevalue("pg")
    return server.create_database(f"t{uuid.uuid4().hex[:12]}")


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return cli_process.run(args, cwd=ROOT, env={**os.environ, "COLUMNS": "200", **(env or {})})


def one_line_error(proc: subprocess.CompletedProcess[str], contains: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and contains in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def _columns(url: str) -> dict[str, list[tuple[str, bool]]]:
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        return {t: [(c["name"], bool(c["nullable"])) for c in inspector.get_columns(t)]
                for t in sorted(inspector.get_table_names())}
    finally:
        engine.dispose()


# ---- schema ---------------------------------------------------------------------------------


def test_the_migrations_build_exactly_the_tables_a_new_database_gets(db_url: str,
                                                                    tmp_path: Path) -> None:
    migrated = Database(db_url)
    assert migrated.upgrade() == (None, schema.HEAD)  # Alembic's migrations, from nothing
    created = Database(location.sqlite_url(tmp_path / "created.sqlite"))
    created.open()  # create_all, stamped at HEAD
    assert created.revision() == migrated.revision() == schema.HEAD
    migrated.dispose()
    created.dispose()
    got, want = _columns(db_url), _columns(created.url)
    assert {t: [n for n, _ in cols] for t, cols in got.items()} == {
        t: [n for n, _ in cols] for t, cols in want.items()}
    assert got["measurements"] == want["measurements"]


def test_head_is_the_newest_migration() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location",
                           str(ROOT / "ascend_tune" / "db" / "migrations"))
    script = ScriptDirectory.from_config(config)
    assert script.get_current_head() == schema.HEAD
    assert [r.revision for r in reversed(list(script.walk_revisions()))] == list(
        schema.REVISIONS)


def test_a_newer_schema_is_refused_in_one_line_and_upgrade_keeps_a_current_one(
        db_url: str) -> None:
    assert cli("db", "upgrade", "--db", db_url).returncode == 0
    again = cli("db", "upgrade", "--db", db_url)
    assert again.returncode == 0 and "up to date" in again.stdout
    engine = sa.create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    proc = cli("search", "add", "--hw", "ascend910b3", "--shape", "totalLength=4096",
               "--db", db_url)
    one_line_error(proc, "schema revision 9999 was written by a newer ascend-tune")
    one_line_error(cli("db", "upgrade", "--db", db_url), "newer ascend-tune")
    off = {location.ENV: "off"}
    one_line_error(cli("db", "upgrade", env=off), "ASCEND_TUNE_DB is off")
    one_line_error(cli("db", "stats", env=off), "ASCEND_TUNE_DB is off")


def test_a_database_of_another_tool_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE users (id INTEGER)")
    proc = cli("search", "add", "--hw", "ascend910b3", "--shape", "totalLength=4096",
               "--db", str(other))
    one_line_error(proc, "not an ascend-tune tuning database")


def test_unusable_databases_are_one_line_and_exit_2(tmp_path: Path,
                                                    pg: postgres_server.Server) -> None:
    search = ("search", "add", "--hw", "ascend910b3", "--shape", "totalLength=4096")
    one_line_error(cli(*search, "--db", pg.url(password="wrong")), "password authentication")
    assert "wrong" not in cli(*search, "--db", pg.url(password="wrong")).stderr
    free = postgres_server._free_port()
    one_line_error(cli(*search, "--db", f"postgresql://u@127.0.0.1:{free}/x"),
                   f"127.0.0.1:{free}")
    one_line_error(cli(*search, "--db", "mysql://u@h/x"), "not a SQLite or PostgreSQL URL")
    one_line_error(cli(*search, "--db", "x.sqlite", "--no-db"), "contradict")
    if os.geteuid() != 0:  # root writes read-only files
        ro = tmp_path / "ro.sqlite"
        made = Database(location.sqlite_url(ro))
        made.open()
        made.dispose()
        ro.chmod(stat.S_IRUSR)
        one_line_error(cli(*search, "--db", str(ro)), "readonly")


def test_the_default_database_lives_in_the_user_data_folder(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != location.ENV}
    env.update(XDG_DATA_HOME=str(tmp_path / "data"), COLUMNS="200")
    proc = cli_process.run(["search", "add", "--hw", "ascend910b3", "--shape",
                            "totalLength=4096", "-q"], cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / "data" / "ascend-tune" / location.FILE_NAME
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM searches").fetchone() == (1,)
    # A data folder that cannot be written: the search runs without a database, and says so.
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the folder would be")
    env["XDG_DATA_HOME"] = str(blocked)
    proc = cli_process.run(["search", "add", "--hw", "ascend910b3", "--shape",
                            "totalLength=4096"], cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "running without it" in proc.stderr
    quiet = cli_process.run(["search", "add", "--hw", "ascend910b3", "--shape",
                             "totalLength=4096", "-q"], cwd=ROOT, env=env)
    assert quiet.returncode == 0 and quiet.stderr == ""


# ---- search ---------------------------------------------------------------------------------


def test_search_records_and_serves_exact_hits(db_url: str, tmp_path: Path) -> None:
    base = ("search", "add", "--hw", "ascend910b3", *SHAPES, "--budget", "300", "--db", db_url)
    first = cli(*base, "--json")
    assert first.returncode == 0, first.stderr
    second = cli(*base, "--json", "-o", str(tmp_path / "r.json"))
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["shapes"] == json.loads(first.stdout)["shapes"]
    noted = cli(*base)
    assert "2 of 2 shape(s) to tune served from the tuning database" in noted.stderr
    # Other settings are another question: tuned, not served.
    other = cli(*base[:-4], "--budget", "301", "--db", db_url)
    assert "served" not in other.stderr and "[2/2]" in other.stderr
    # --no-db: nothing read, nothing recorded; quiet runs print no note.
    assert "served" not in cli(*base[:-2], "--no-db").stderr
    assert cli(*base, "-q").stderr == ""
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT shape_key, settings_json FROM searches")).all()
    engine.dispose()
    assert len(rows) == 4  # two shapes at budget 300, two at 301


def test_a_changed_spec_is_not_served_the_old_answer(tmp_path: Path) -> None:
    spec = tmp_path / "add.yaml"
    spec.write_text((ROOT / "operator_specs" / "add.yaml").read_text())
    base = ("search", str(spec), "--hw", "ascend910b3", "--shape", "totalLength=65536",
            "--budget", "200")
    assert cli(*base).returncode == 0
    assert "served" in cli(*base).stderr
    spec.write_text(spec.read_text() + "\n# a comment changes nothing it means\n")
    assert "served" in cli(*base).stderr
    spec.write_text(spec.read_text().replace("bufferNum: {values: [1, 2]",
                                             "bufferNum: {values: [1, 2, 3]"))
    assert "served" not in cli(*base).stderr


# ---- measure --------------------------------------------------------------------------------


def _standin() -> str:
    return (f"{sys.executable} {STANDIN} add --shape-json {{shape_json}} --config-json "
            "{config_json} --blob {tiling_blob} --headers {headers_dir} --repeat {repeat}")


def test_measure_records_each_candidate_and_skips_what_was_measured(db_url: str,
                                                                   tmp_path: Path) -> None:
    search = ("search", "add", "--hw", "ascend910b3", *SHAPES, "--budget", "300", "--top-k",
              "3", "--db", db_url, "-q")
    assert cli(*search, "-o", str(tmp_path / "a.json")).returncode == 0
    counter = tmp_path / "calls.txt"
    env = {"STANDIN_COUNTER": str(counter)}
    measure = ("--run", _standin(), "--repeat", "1", "--db", db_url)
    first = cli("measure", str(tmp_path / "a.json"), *measure, "-q", env=env)
    assert first.returncode == 0, first.stderr
    ran = len(counter.read_text().splitlines())
    assert ran >= 6  # three candidates per shape, and baselines that are not among them
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        recorded = conn.execute(sa.text("SELECT count(*), count(time_us) FROM measurements"
                                        )).one()
    assert tuple(recorded) == (ran, ran)
    # The same candidates in another results file: taken from the database, nothing runs.
    assert cli(*search, "-o", str(tmp_path / "b.json")).returncode == 0
    second = cli("measure", str(tmp_path / "b.json"), *measure, env=env)
    assert second.returncode == 0, second.stderr
    assert len(counter.read_text().splitlines()) == ran
    assert f"{ran} candidate(s) taken from the tuning database" in second.stderr
    a, b = (results.read_all(tmp_path / n)["shapes"] for n in ("a.json", "b.json"))
    assert [e["measured"] for e in a] == [e["measured"] for e in b]
    # --remeasure runs them again, and the database keeps both (append-only).
    shutil.copy(tmp_path / "a.json", tmp_path / "c.json")
    third = cli("measure", str(tmp_path / "c.json"), *measure, "--fresh", "-q", env=env)
    assert third.returncode == 0 and len(counter.read_text().splitlines()) == 2 * ran
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM measurements")).scalar() == 2 * ran
    engine.dispose()


# ---- export / import ------------------------------------------------------------------------


def test_export_then_import_merges_without_duplicates(db_url: str, tmp_path: Path) -> None:
    search = ("search", "add", "--hw", "ascend910b3", *SHAPES, "--budget", "200", "-q")
    assert cli(*search, "--db", db_url).returncode == 0
    keys = Keys("ascend910b3", "f" * 64, "AddCustom", None, "e" * 64)
    source = Database(db_url)
    record_measurement(source, keys, Protocol("run", 0, 3), {"totalLength": 8},
                       {"tileLength": 8}, {"time_us": 1.5, "runs_us": [1.5]})
    source.dispose()
    dump = tmp_path / "dump.jsonl"
    assert cli("db", "export", "--db", db_url, "-o", str(dump)).returncode == 0
    lines = dump.read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(line)["table"] for line in lines)
    target = location.sqlite_url(tmp_path / "site2.sqlite")
    # The measurement's chip digest is not this site's ascend910b3: refused unless asked.
    proc = cli("db", "import", str(dump), "--db", target)
    assert proc.returncode == 0, proc.stderr
    assert "added 2 searches; skipped 0 already held, 1 of another digest" in proc.stdout
    proc = cli("db", "import", str(dump), "--db", target, "--allow-mismatch")
    assert "added 1 measurements; skipped 2 already held, 0 of another digest" in proc.stdout
    stats = cli("db", "stats", "--db", target)
    assert stats.returncode == 0 and "3 record(s)" in stats.stdout
    served = cli(*search[:-1], "--db", target)
    assert "2 of 2 shape(s) to tune served" in served.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines[0] + "\n{\"table\": \"users\"}\n")
    one_line_error(cli("db", "import", str(bad), "--db", target), "bad.jsonl:2")


# ---- parallel writers -----------------------------------------------------------------------


def _writer(url: str, worker: int, count: int) -> None:
    database = Database(url)
    keys = Keys("ascend910b3", "a" * 64, "AddCustom", None, "b" * 64, host=f"h{worker}")
    for i in range(count):
        record_measurement(database, keys, Protocol("run", 0, 1, f"h{worker}"),
                           {"totalLength": i}, {"tileLength": worker}, {"time_us": 1.0 + i})
    database.dispose()


@pytest.mark.parametrize("count", [pytest.param(150, id="8x150"),
                                   pytest.param(1000, id="8x1000", marks=pytest.mark.slow)])
def test_eight_processes_record_at_once(db_url: str, count: int) -> None:
    made = Database(db_url)
    made.open()
    made.dispose()
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=_writer, args=(db_url, w, count)) for w in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
    assert [p.exitcode for p in procs] == [0] * 8
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        total, distinct = conn.execute(sa.text(
            "SELECT count(*), count(DISTINCT uid) FROM measurements")).one()
        per_host = dict(conn.execute(sa.text(
            "SELECT host, count(*) FROM measurements GROUP BY host")).all())
    engine.dispose()
    assert total == distinct == 8 * count
    assert per_host == {f"h{w}": count for w in range(8)}


def test_a_measurement_recorded_on_one_host_is_seen_on_another(pg: postgres_server.Server
                                                               ) -> None:
    url = pg.create_database(f"t{uuid.uuid4().hex[:12]}")
    context = multiprocessing.get_context("spawn")
    writer = context.Process(target=_writer, args=(url, 1, 3))
    writer.start()
    writer.join(120)
    assert writer.exitcode == 0
    keys = Keys("ascend910b3", "a" * 64, "AddCustom", None, "b" * 64, host="h1")
    reader = Database(url)
    seen = measured_under(reader, keys, Protocol("run", 0, 1, "h1"))
    reader.dispose()
    assert sorted(k[0] for k in seen) == ["totalLength=0", "totalLength=1", "totalLength=2"]


# ---- calibrate / validate --from-db ---------------------------------------------------------


def test_calibrate_and_validate_take_the_measurements_from_the_database(db_url: str,
                                                                       tmp_path: Path) -> None:
    results_file = tmp_path / "a.json"
    assert cli("search", "add", "--hw", "ascend910b3", *SHAPES, "--budget", "300", "--top-k",
               "4", "--db", db_url, "-q", "-o", str(results_file)).returncode == 0
    assert cli("measure", str(results_file), "--run", _standin(), "--repeat", "1", "--db",
               db_url, "-q").returncode == 0
    common = ("--spec", "add", "--hw", "ascend910b3", "--json")
    from_file = cli("validate", "--from-results", str(results_file), *common)
    from_db = cli("validate", "--from-db", "--db", db_url, *common)
    assert from_db.returncode == 0, from_db.stderr
    file_points, db_points = (sorted((json.dumps(p["shape"]), p["measured_us"])
                                     for p in json.loads(out.stdout)["points"])
                              for out in (from_file, from_db))
    assert db_points == file_points and len(db_points) >= 8
    one = cli("validate", "--from-db", "--db", db_url, "--db-shape", "totalLength=65536",
              *common)
    assert {p["shape"]["totalLength"] for p in json.loads(one.stdout)["points"]} == {65536}
    nothing = cli("validate", "--from-db", "--db", db_url, "--since", "2999-01-01", *common)
    one_line_error(nothing, "no usable measurement row")
    one_line_error(cli("validate", "--from-db", "--db", db_url, "--since", "May", *common),
                   "not an ISO date")
    one_line_error(cli("validate", "--db-host", "x", *common), "needs --from-db")
    # Another chip's digest: none of these rows.
    one_line_error(cli("validate", "--from-db", "--db", db_url, "--spec", "add", "--hw",
                       "ascend910b4"), "no usable measurement row")
    out = tmp_path / "cal.yaml"
    cal = cli("calibrate", "--from-db", "--db", db_url, "--spec", "add", "--hw", "ascend910b3",
              "--holdout", "0", "--force", "-o", str(out), "-q")
    assert cal.returncode == 0, cal.stderr
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        rows, name = conn.execute(sa.text("SELECT rows, profile_name FROM calibrations")).one()
    engine.dispose()
    assert rows == len(db_points) and name == "ascend910b3_calibrated"


# ---- experience: seeding a new shape's search -----------------------------------------------


def test_a_new_shape_starts_from_its_nearest_recorded_shapes(tmp_path: Path) -> None:
    base = ("search", "matmul", "--hw", "ascend910b3", "--budget", "300", "--strategy", "ga")
    assert cli(*base, "--shape", "M=1024,N=4096,K=4096", "--shape", "M=4096,N=4096,K=4096",
               "--shape", "M=128,N=128,K=128", "-q").returncode == 0
    new = cli(*base, "--shape", "M=2048,N=4096,K=4096", "--json")
    entry = json.loads(new.stdout)["shapes"][0]
    # The two nearest recorded shapes (log distance), then the far one.
    assert entry["seeded"]["from"][:2] in (["M=1024,N=4096,K=4096", "M=4096,N=4096,K=4096"],
                                           ["M=4096,N=4096,K=4096", "M=1024,N=4096,K=4096"])
    assert entry["seeded"]["configurations"] >= 1
    noted = cli(*base, "--shape", "M=3000,N=4096,K=4096")
    assert "1 of 1 shape(s) start from" in noted.stderr and "tuning database" in noted.stderr
    alone = cli(*base, "--shape", "M=2048,N=4096,K=4096", "--json", "--no-db")
    assert "seeded" not in json.loads(alone.stdout)["shapes"][0]


def test_seeds_are_repaired_to_the_new_shapes_constraints() -> None:
    import numpy as np

    from ascend_tune.hardware import load_profile
    from ascend_tune.spec import load_spec
    from ascend_tune.tune.shape import Seeds, search_problem, seed_genomes

    spec, hw = load_spec("add"), load_profile("ascend910b3")
    model = ShapeModel(spec, hw, {"totalLength": 4096})
    problem = search_problem(model, "ga")
    # The winner of a large shape: 48 cores and 32768-element tiles break every_core_busy and
    # tile_not_oversized on 4096 elements.
    big = (("blockDim", 48), ("tileLength", 32768), ("bufferNum", 2))
    assert not np.isfinite(model.objective(model.nearest_indices(dict(big))[None, :])).all()
    genomes = seed_genomes(model, problem, Seeds((big,), ("totalLength=1048576",)), 0)
    assert len(genomes) == 1
    assert np.isfinite(model.objective(genomes)).all()
    # Repair changes only what the broken checks read: bufferNum stays.
    assert model.values(genomes)[0][spec.params.index("bufferNum")] == 2


# ---- emit --from-db -------------------------------------------------------------------------


def test_emit_from_the_database_writes_what_emit_of_the_results_file_writes(
        tmp_path: Path) -> None:
    results_file = tmp_path / "add.json"
    assert cli("search", "add", "--hw", "ascend910b3", *SHAPES, "--budget", "200", "-q", "-o",
               str(results_file)).returncode == 0
    assert cli("emit", str(results_file), "-o", str(tmp_path / "a"), "--op-host",
               "-q").returncode == 0
    proc = cli("emit", "--from-db", "add", "--hw", "ascend910b3", *SHAPES, "-o",
               str(tmp_path / "b"), "--op-host", "-q")
    assert proc.returncode == 0, proc.stderr
    a = {p.relative_to(tmp_path / "a"): p.read_text() for p in (tmp_path / "a").rglob("*")
         if p.is_file()}
    b = {p.relative_to(tmp_path / "b"): p.read_text() for p in (tmp_path / "b").rglob("*")
         if p.is_file()}
    assert a == b and a
    one_line_error(cli("emit", "--from-db", "add", "--hw", "ascend910b3", "--shape",
                       "totalLength=12345", "-o", str(tmp_path / "c")),
                   "1 shape(s) of AddCustom on ascend910b3 not tuned there: totalLength=12345")
    one_line_error(cli("emit", "--from-db", "add", "--shape", "totalLength=65536", "-o",
                       str(tmp_path / "c")), "--from-db needs --hw")
    one_line_error(cli("emit", "-o", str(tmp_path / "c")), "give RESULTS files")


# ---- report ---------------------------------------------------------------------------------


def test_report_shows_what_the_database_holds_of_its_operators(tmp_path: Path) -> None:
    results_file = tmp_path / "add.json"
    assert cli("search", "add", "--hw", "ascend910b3", *SHAPES, "--budget", "200", "-q", "-o",
               str(results_file)).returncode == 0
    page = tmp_path / "r.html"
    common = (str(results_file), "-o", str(page), "--charts", "0", "--dispatch-shapes", "0",
              "-q")
    assert cli("report", *common).returncode == 0
    html = page.read_text()
    section = html[html.index('<section id="database">'):]
    section = section[:section.index("</section>")]
    assert "<td>AddCustom</td><td>ascend910b3</td><td class=\"num\">2</td>" in section
    assert cli("report", *common, "--no-db").returncode == 0
    assert 'id="database"' not in page.read_text()


# ---- a killed writer ------------------------------------------------------------------------


def test_a_search_killed_mid_run_leaves_the_database_consistent(db_url: str) -> None:
    import signal
    import time

    shapes = [f"M={m},N=4096,K=4096" for m in (128, 256, 512, 1024, 2048, 4096)]
    argv = [sys.executable, "-m", "ascend_tune", "search", "matmul", "--hw", "ascend910b3",
            *[a for s in shapes for a in ("--shape", s)], "--budget", "800", "--db", db_url,
            "-q"]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    engine = sa.create_engine(db_url)
    try:
        deadline = time.monotonic() + 120
        count = 0
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(sa.exc.OperationalError, sa.exc.ProgrammingError), \
                    engine.connect() as conn:
                count = conn.execute(sa.text("SELECT count(*) FROM searches")).scalar() or 0
            if count >= 1:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert 1 <= count < len(shapes)
        again = cli(*argv[3:])
        assert again.returncode == 0, again.stderr
        with engine.connect() as conn:
            keys = conn.execute(sa.text("SELECT shape_key FROM searches")).scalars().all()
            if engine.dialect.name == "sqlite":
                assert conn.execute(sa.text("PRAGMA integrity_check")).scalar() == "ok"
        assert sorted(keys) == sorted(shapes)  # each once: nothing lost, nothing twice
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        engine.dispose()
