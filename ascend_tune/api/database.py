"""The API's tuning-database half: which database, what `search`, `measure`, `calibrate` and
`validate` record and read there, and `db upgrade / stats / export / import`."""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ascend_tune import db as _db
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.calibrate.measurements import LoadReport, Measurement
from ascend_tune.db import location as _location
from ascend_tune.db import records as _records
from ascend_tune.db import transfer as _transfer
from ascend_tune.db.engine import Database
from ascend_tune.db.records import Keys, Protocol, RowFilter
from ascend_tune.db.transfer import Imported
from ascend_tune.hardware import HardwareProfile
from ascend_tune.hil import candidates as _cands
from ascend_tune.hil.command import Command, Outcome
from ascend_tune.hil.run import Progress as MeasureProgress
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec import shapes as _shapes
from ascend_tune.tune.shape import Seeds

__all__ = ["Database", "Imported", "Keys", "RowFilter", "db_export", "db_import", "db_stats",
           "db_upgrade", "open_db"]


def open_db(url: str | None = None, disabled: bool = False,
            on_unusable: Callable[[str], None] | None = None) -> Database | None:
    """The tuning database a command uses, its schema checked (None with ``disabled`` or
    ``ASCEND_TUNE_DB=off``). A database named by ``url`` or ``ASCEND_TUNE_DB`` that cannot be
    used raises; the default per-user file, which nobody asked for, is left out instead and
    ``on_unusable`` hears why (a search must not fail for a data directory it cannot write)."""
    import os

    implicit = url is None and not disabled and os.environ.get(_location.ENV) is None
    try:
        database = _db.open_database(url, disabled)
        if database is None:
            return None
        database.open()
    except AscendTuneError as error:
        if not implicit:
            raise
        if on_unusable is not None:
            on_unusable(f"{error}; running without it (--db URL or {_location.ENV} to choose)")
        return None
    return database


def keys(spec: OperatorSpec, hw: HardwareProfile) -> Keys:
    return Keys(hw.name, hw.sha256, spec.name, spec.variant, spec.sha256,
                _records.cann_version())


# ---- search ---------------------------------------------------------------------------------


# Seeds of a new shape: the configurations of this many nearest recorded shapes (same spec
# and chip digests), per recorded shape its searched winner and its measured fastest.
SEED_SHAPES = 4


def _distance(a: Mapping[str, int], b: Mapping[str, int]) -> float:
    """How far two shapes are: the sum over shape variables of |log2 a - log2 b|."""
    import math

    return sum(abs(math.log2(max(1, int(a[k]))) - math.log2(max(1, int(b.get(k, 1)))))
               for k in a)


def nearest_seeds(database: Database, spec: OperatorSpec, hw: HardwareProfile,
                  shapes: Sequence[Mapping[str, int]], per_shape: int = SEED_SHAPES
                  ) -> dict[str, Seeds]:
    """Per shape to tune, the starts the tuning database offers: the searched winner and the
    measured fastest configuration of each of its ``per_shape`` nearest recorded shapes
    (never the shape itself). Shapes with nothing recorded near them are left out."""
    recorded: dict[str, tuple[dict[str, int], dict[tuple[tuple[str, int], ...], float]]] = {}
    for shape, config, latency in _records.recorded_winners(database, spec.sha256, hw.sha256):
        if set(shape) != set(spec.shape_vars):
            continue
        shape = {v: int(shape[v]) for v in spec.shape_vars}
        key = _shapes.shape_key(shape)
        held = recorded.setdefault(key, (shape, {}))[1]
        item = tuple(sorted((str(k), int(v)) for k, v in config.items()))
        held[item] = min(latency, held.get(item, float("inf")))
    out: dict[str, Seeds] = {}
    for wanted in shapes:
        key = _shapes.shape_key(wanted)
        near = sorted((k for k in recorded if k != key),
                      key=lambda k: (_distance(wanted, recorded[k][0]), k))[:per_shape]
        starts: list[tuple[tuple[str, int], ...]] = []
        for k in near:
            # The fastest two of each shape (searched winners predict, measured ones measure:
            # each list sorted on its own numbers would mix units; both are kept).
            best = sorted(recorded[k][1].items(), key=lambda t: (t[1], t[0]))[:2]
            starts += [c for c, _t in best if c not in starts]
        if starts:
            out[key] = Seeds(tuple(starts), tuple(near))
    return out


def search_hooks(database: Database, spec: OperatorSpec, hw: HardwareProfile,
                 settings: Mapping[str, Any]
                 ) -> tuple[Callable[[Sequence[str]], Mapping[str, Any]],
                            Callable[[Mapping[str, Any]], None],
                            Callable[[Sequence[dict[str, int]]], Mapping[str, Seeds]]]:
    """``known`` (exact hits: same spec, chip and shape digests and search settings),
    ``record`` (each tuned entry) and ``seeds_for`` (the nearest recorded shapes'
    configurations) for ``tune.run.run_search``."""
    key = keys(spec, hw)

    def seeds_for(shapes: Sequence[dict[str, int]]) -> Mapping[str, Seeds]:
        return nearest_seeds(database, spec, hw, shapes)

    def known(shape_keys: Sequence[str]) -> Mapping[str, Any]:
        return _records.find_searches(database, spec.sha256, hw.sha256, settings, shape_keys)

    def record(entry: Mapping[str, Any]) -> None:
        _records.record_search(database, key, settings, [entry])

    return known, record, seeds_for


# ---- measure --------------------------------------------------------------------------------


def protocol(command: Command) -> Protocol:
    """The protocol of a `measure` command: the command line with its pattern, CSV and row
    filter; `measure` runs no separate warm-up (0), ``--repeat`` runs."""
    text = shlex.join(command.argv)
    text += f" [pattern {command.pattern}]" if command.csv is None else f" [csv {command.csv}]"
    if command.where:
        text += " [where " + ",".join(f"{k}={v}" for k, v in command.where) + "]"
    return Protocol(text, 0, command.repeat)


class RecordingProgress(MeasureProgress):
    """Records each measured candidate in the database as it completes (a killed run keeps
    every finished one), then tells the caller's progress."""

    def __init__(self, database: Database, key: Keys, how: Protocol,
                 inner: MeasureProgress | None) -> None:
        self.database, self.key, self.how = database, key, how
        self.inner = inner or MeasureProgress()

    def opened(self, total: int, done: int) -> None:
        self.inner.opened(total, done)

    @contextlib.contextmanager
    def running(self, todo: int) -> Iterator[None]:
        with self.inner.running(todo):
            yield

    def candidate_done(self, outcome: Outcome, entry: Mapping[str, Any]) -> None:
        is_base = outcome.index == _cands.BASELINE
        item = entry["baseline"] if is_base else _cands.candidates(entry)[outcome.index]
        predicted = (item.get("latency_us") if is_base
                     else item.get("predicted", {}).get("latency_us"))
        _records.record_measurement(self.database, self.key, self.how, entry["shape"],
                                    item["config"], item.get("measured", {}),
                                    baseline=is_base, predicted_us=predicted,
                                    device=outcome.device)
        self.inner.candidate_done(outcome, entry)


def measure_hooks(database: Database, spec: OperatorSpec, hw: HardwareProfile,
                  command: Command, progress: MeasureProgress | None, remeasure: bool
                  ) -> tuple[Callable[[str, Mapping[str, int]], Mapping[str, Any] | None] | None,
                             MeasureProgress]:
    """``prior`` (what this host measured the same way already; None with ``remeasure``) and a
    progress that records each candidate, for ``hil.run.run_measure``."""
    key, how = keys(spec, hw), protocol(command)
    done = {} if remeasure else _records.measured_under(database, key, how)

    def prior(shape_key: str, config: Mapping[str, int]) -> Mapping[str, Any] | None:
        return done.get((shape_key, _records.config_text(config)))

    return (None if remeasure else prior), RecordingProgress(database, key, how, progress)


# ---- emit --from-db -------------------------------------------------------------------------


def results_from_db(database: Database, spec: OperatorSpec, hw: HardwareProfile,
                    shapes: Sequence[Mapping[str, int]]) -> dict[str, Any]:
    """A results document of the database's latest tuned entry of each shape (this spec and
    chip by digest), for `emit --from-db`; a shape it does not hold is an error."""
    from ascend_tune.results import format as results

    wanted = [_shapes.shape_key(s) for s in shapes]
    found = _records.latest_searches(database, spec.sha256, hw.sha256, wanted)
    missing = [k for k in wanted if k not in found]
    if missing:
        shown = " ".join(missing[:4]) + (f" and {len(missing) - 4} more"
                                         if len(missing) > 4 else "")
        raise AscendTuneError(f"database {database.shown}: {len(missing)} shape(s) of "
                              f"{spec.display_name} on {hw.name} not tuned there: {shown}; "
                              "run `ascend-tune search` with it first")
    settings = found[wanted[-1]][0]
    head = results.header(spec.name, spec.sha256, spec.source_text, hw.name, hw.sha256,
                          hw.data, str(settings.get("strategy", "auto")),
                          int(settings.get("seed", 0)), int(settings.get("budget", 0)),
                          spec.variant, top_k=int(settings.get("top_k", 1)))
    entries = sorted((found[k][1] for k in dict.fromkeys(wanted)), key=results.sort_key)
    return {**head, "shapes": entries}


def write_results_from_db(database: Database, spec: OperatorSpec, hw: HardwareProfile,
                          shapes: Sequence[Mapping[str, int]], path: Path) -> Path:
    """``results_from_db`` written as a results file at ``path``."""
    from ascend_tune.results import format as results

    results.write_atomic(path, results.to_text(results_from_db(database, spec, hw, shapes)))
    return path


# ---- report --------------------------------------------------------------------------------


def report_knowledge(database: Database | None
                     ) -> tuple[Callable[[Sequence[tuple[str, str]]], list[dict[str, Any]]] | None,
                                str]:
    """What ``report.build`` asks the database: per (spec, chip digest) what it holds."""
    if database is None:
        return None, ""
    return (lambda pairs: _records.knowledge(database, pairs)), database.shown


# ---- calibrate / validate -------------------------------------------------------------------


def rows_filter(spec: OperatorSpec, hw: HardwareProfile, shapes: Sequence[Mapping[str, int]] = (),
                host: str | None = None, since: str | None = None, until: str | None = None
                ) -> RowFilter:
    """Measurements of this chip and spec (digests), optionally of these shapes, this host,
    recorded from ``since`` (inclusive) until ``until`` (exclusive; ISO dates)."""
    for name, value in (("--since", since), ("--until", until)):
        if value is not None:
            _iso(name, value)
    return RowFilter(hw.sha256, spec.sha256, None,
                     tuple(_shapes.shape_key(s) for s in shapes), host, since, until)


def _iso(name: str, value: str) -> None:
    from datetime import datetime

    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise AscendTuneError(f"{name} {value!r:.40}: not an ISO date (YYYY-MM-DD) or "
                              "time") from None


def extend_from_db(report: LoadReport, database: Database, spec: OperatorSpec,
                   hw: HardwareProfile, where: RowFilter) -> int:
    """Add the database's measurements matching ``where`` to loaded rows; a row the model
    rejects on ``hw`` is skipped with its reason. Returns the rows added."""
    from ascend_tune.calibrate.fit import split_valid

    found = [Measurement(f"{database.shown}: {_shapes.shape_key(r['shape'])} {r['host']} "
                         f"{r['recorded_at']}", r["shape"], r["config"], (), r["time_us"],
                         runs_us=tuple(r["runs_us"] or ()))
             for r in _records.measured_rows(database, where)]
    rows, invalid = split_valid(spec, hw, found)
    report.rows += rows
    report.skipped += invalid
    report.files.append(database.shown)
    return len(rows)


def record_calibration(database: Database, spec: OperatorSpec, hw: HardwareProfile, rows: int,
                       profile_name: str, profile_path: Path, scales: Mapping[str, float],
                       document: Mapping[str, Any]) -> None:
    import hashlib

    try:
        digest: str | None = hashlib.sha256(profile_path.read_bytes()).hexdigest()
    except OSError:
        digest = None
    _records.record_calibration(database, keys(spec, hw), rows, profile_name, digest, scales,
                                document)


# ---- db commands ----------------------------------------------------------------------------


def db_upgrade(url: str | None = None) -> tuple[str, str | None, str]:
    """Bring the database's schema to this release's: (URL shown, revision before, after)."""
    database = _db.open_database(url)
    if database is None:
        raise AscendTuneError(f"db upgrade needs a tuning database: {_location.ENV} is off; "
                              "give --db URL")
    before, after = database.upgrade()
    return database.shown, before, after


def db_stats(database: Database) -> list[tuple[str, str, str, str, int, str | None]]:
    """(table, chip, spec, host, records, latest) of what the database holds."""
    return _transfer.stats(database)


def db_export(database: Database, out: IO[str]) -> int:
    return _transfer.export(database, out)


def _digest_here(kind: str, name: str, variant: str | None) -> str | None:
    """This site's digest of a built-in profile or spec of that name (None: not built in)."""
    from ascend_tune.hardware import load_profile
    from ascend_tune.spec import load_spec

    try:
        if kind == "hw":
            return load_profile(name).sha256
        return load_spec(f"{name}:{variant}" if variant else name).sha256
    except (AscendTuneError, OSError, ValueError):
        return None


def db_import(database: Database, lines: Iterator[str] | Sequence[str], origin: str,
              allow_mismatch: bool = False) -> Imported:
    return _transfer.import_lines(database, lines, origin, _digest_here, allow_mismatch)
