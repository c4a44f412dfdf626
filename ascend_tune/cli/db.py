"""`ascend-tune db upgrade | stats | export | import`, and the --db / --no-db options every
command that reads or records experience takes."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from ascend_tune import api
from ascend_tune.api import database as dbapi
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.cli import console
from ascend_tune.cli.app import app

DB_HELP = ("Tuning database: a URL (postgresql://USER@HOST/DB, sqlite:///PATH) or a SQLite "
           "file. (default: $ASCEND_TUNE_DB, else tuning.sqlite in the user's data folder)")
NO_DB_HELP = "Use no tuning database: read nothing from it, record nothing."


def db_option() -> str | None:
    return typer.Option(None, "--db", metavar="URL", help=DB_HELP)  # type: ignore[no-any-return]


def no_db_option() -> bool:
    return typer.Option(False, "--no-db", help=NO_DB_HELP)  # type: ignore[no-any-return]


# calibrate's and validate's --from-db and the filters that go with it (one definition, so the
# two commands cannot drift apart).
def from_db_option() -> bool:
    return typer.Option(  # type: ignore[no-any-return]
        False, "--from-db", help="Also every measurement the tuning database holds of this "
                                 "chip and spec (--hw and --spec digests).")


def db_shape_option() -> list[str] | None:
    return typer.Option(  # type: ignore[no-any-return]
        None, "--db-shape", metavar="SHAPE",
        help="With --from-db: only this shape (K=V,...; repeatable).")


def db_host_option() -> str | None:
    return typer.Option(  # type: ignore[no-any-return]
        None, "--db-host", metavar="HOST", help="With --from-db: only rows measured on HOST.")


def since_option() -> str | None:
    return typer.Option(  # type: ignore[no-any-return]
        None, "--since", metavar="DATE",
        help="With --from-db: rows recorded on or after DATE (YYYY-MM-DD or an ISO time, UTC).")


def until_option() -> str | None:
    return typer.Option(  # type: ignore[no-any-return]
        None, "--until", metavar="DATE", help="With --from-db: rows recorded before DATE.")


def database(url: str | None, no_db: bool, quiet: bool = False) -> api.Database | None:
    """The command's database, its schema checked (None: --no-db); the default file that
    cannot be used is a warning (unless quiet), a chosen one an error."""
    return api.open_db(url, no_db, on_unusable=None if quiet else console.warn)


def required(url: str | None, what: str) -> api.Database:
    found = api.open_db(url)
    if found is None:
        raise AscendTuneError(f"{what} needs a tuning database: ASCEND_TUNE_DB is off; give "
                              "--db URL")
    return found


def results_for_emit(spec_ref: str, hw_ref: str | None, shapes_files: list[Path],
                     shape: list[str], url: str | None, folder: Path) -> Path:
    """`emit --from-db SPEC`: a results file in ``folder`` of the database's winners of the
    shapes asked for, on --hw."""
    if hw_ref is None:
        raise AscendTuneError("--from-db needs --hw: the chip whose winners to emit")
    spec, hw = api.load_spec(spec_ref), api.load_profile(hw_ref)
    shapes = api.collect_shapes(spec, shapes_files, shape)
    if not shapes:
        raise AscendTuneError("--from-db needs the shapes: --shapes FILE or --shape K=V,...")
    return dbapi.write_results_from_db(required(url, "--from-db"), spec, hw, shapes,
                                       folder / f"{spec.snake_name}.results.json")


db_app = typer.Typer(no_args_is_help=True,
                     help="The tuning database: upgrade its schema, list, export, import.")
app.add_typer(db_app, name="db")


@db_app.command("upgrade")
def db_upgrade(url: str | None = db_option()) -> None:
    """Bring the database's schema to this release's (an empty database is created)."""
    shown, before, after = dbapi.db_upgrade(url)
    if before == after:
        console.line(f"{shown}: schema revision {after}, up to date")
    else:
        console.line(f"{shown}: schema revision {before or 'none (created)'} -> {after}")


@db_app.command("stats")
def db_stats(url: str | None = db_option()) -> None:
    """What the database holds: records by table, chip, spec and host."""
    found = required(url, "db stats")
    rows = dbapi.db_stats(found)
    console.table(f"{found.shown}: {sum(r[4] for r in rows)} record(s)",
                  ["records", "chip", "spec", "host", "count", "latest"],
                  [[t, hw, spec, host, str(n), latest or ""] for t, hw, spec, host, n, latest
                   in rows], right=(4,))


@db_app.command("export")
def db_export(output: Path | None = typer.Option(None, "-o", "--output", metavar="FILE",
                                                 help="JSON lines file (default: stdout)."),
              url: str | None = db_option()) -> None:
    """Every record as JSON lines (one record a line), for `db import` elsewhere."""
    found = required(url, "db export")
    if output is None:
        dbapi.db_export(found, sys.stdout)
        return
    api.check_writable(output)
    tmp = output.with_name(f".{output.name}.partial")
    with tmp.open("w") as out:
        count = dbapi.db_export(found, out)
    tmp.replace(output)
    console.note(f"exported {count} record(s) to {output}")


@db_app.command("import")
def db_import(source: Path = typer.Argument(..., metavar="FILE",
                                            help="JSON lines of `db export`."),
              allow_mismatch: bool = typer.Option(
                  False, "--allow-mismatch",
                  help="Also import records whose chip or spec digest differs from this "
                       "site's built-in of the same name."),
              url: str | None = db_option()) -> None:
    """Merge exported records: nothing duplicated; records of a chip or spec whose digest
    differs here refused unless --allow-mismatch."""
    found = required(url, "db import")
    try:
        with source.open(errors="replace") as lines:
            result = dbapi.db_import(found, lines, str(source), allow_mismatch)
    except OSError as error:
        raise AscendTuneError(f"{source}: cannot read: {error.strerror}") from None
    added = ", ".join(f"{n} {t}" for t, n in result.added.items() if n) or "nothing"
    console.line(f"{source}: added {added}; skipped {result.duplicates} already held, "
                 f"{len(result.mismatched)} of another digest")
    for line in result.mismatched[:5]:
        console.warn(f"refused {line} (--allow-mismatch imports it)")
