"""What the commands write into the tuning database and read back. Nothing here prints.

Searches are keyed by spec, chip, shape and the search settings (one row each: the same key
always gives the same entry); measurements and calibrations are events, appended, never
updated: each has its own ``uid``.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc

from ascend_tune import __version__
from ascend_tune.db.engine import Database
from ascend_tune.db.schema import calibrations, measurements, searches


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _ordered(value: Mapping[str, Any]) -> str:
    """A shape or configuration as JSON in its own order (the spec's)."""
    return json.dumps(dict(value), separators=(",", ":"))


def shape_text(shape: Mapping[str, int]) -> str:
    """The shape key results files use (``M=128,N=256``)."""
    return ",".join(f"{k}={v}" for k, v in shape.items())


def config_text(config: Mapping[str, int]) -> str:
    return _json(dict(config))


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def host_name() -> str:
    return os.environ.get("ASCEND_TUNE_HOST") or socket.gethostname()


def cann_version() -> str | None:
    """The CANN toolkit version where an installed toolkit says it
    (``$ASCEND_TOOLKIT_HOME/version.cfg`` or ``.../ascend_toolkit_install.info``)."""
    for var in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"):
        home = os.environ.get(var)
        if not home:
            continue
        for name in ("version.cfg", "ascend_toolkit_install.info"):
            try:
                text = (Path(home) / name).read_text(errors="replace")
            except OSError:
                continue
            for line in text.splitlines():
                key, _, value = line.partition("=")
                if key.strip().lower() in ("version", "toolkit_version") and value.strip():
                    return value.strip().strip('"[]')[:64]
    return None


@dataclass(frozen=True)
class Keys:
    """What makes a record valid: the chip, the spec, the tool and where it was made."""

    hw_name: str
    hw_sha256: str
    spec_name: str
    spec_variant: str | None
    spec_sha256: str
    cann_version: str | None = None
    tool_version: str = __version__
    host: str = ""

    def row(self) -> dict[str, Any]:
        out = asdict(self)
        out["host"] = self.host or host_name()
        return out


# ---- searches -------------------------------------------------------------------------------


def search_uid(keys: Keys, settings: Mapping[str, Any], key: str) -> str:
    return hashlib.sha256(_json([keys.spec_sha256, keys.hw_sha256, key, dict(settings)])
                          .encode()).hexdigest()


def record_search(db: Database, keys: Keys, settings: Mapping[str, Any],
                  entries: Iterable[Mapping[str, Any]]) -> int:
    """Record tuned entries (one row per spec, chip, shape and settings; a key already held is
    left as it is). Returns how many rows were added."""
    rows = [{**keys.row(), "uid": search_uid(keys, settings, shape_text(e["shape"])),
             "recorded_at": now(), "shape_key": shape_text(e["shape"]),
             "shape_json": _ordered(e["shape"]), "settings_json": _json(dict(settings)),
             "latency_us": float(e["predicted"]["latency_us"]),
             "best_json": _ordered(e["best"]),
             "entry_json": json.dumps(e, separators=(",", ":"))} for e in entries]
    return _insert_new(db, searches, rows)


def _insert_new(db: Database, table: sa.Table, rows: Sequence[dict[str, Any]]) -> int:
    """Insert the rows whose uid the table does not hold; a uid another writer adds at the
    same time is skipped, not an error."""
    if not rows:
        return 0
    added = 0
    with db.connect() as conn:
        held = set(conn.execute(sa.select(table.c.uid).where(
            table.c.uid.in_([r["uid"] for r in rows]))).scalars())
        for row in rows:
            if row["uid"] in held:
                continue
            try:
                with conn.begin_nested():
                    conn.execute(table.insert().values(**row))
                added += 1
            except exc.IntegrityError:
                pass
            held.add(row["uid"])
    return added


def find_searches(db: Database, spec_sha256: str, hw_sha256: str,
                  settings: Mapping[str, Any], keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The recorded entries of these shape keys under exactly these settings."""
    out: dict[str, dict[str, Any]] = {}
    settings_json = _json(dict(settings))
    with db.reading() as conn:
        for start in range(0, len(keys), 500):
            chunk = list(keys[start:start + 500])
            for shape_key, entry in conn.execute(
                    sa.select(searches.c.shape_key, searches.c.entry_json).where(
                        searches.c.spec_sha256 == spec_sha256,
                        searches.c.hw_sha256 == hw_sha256,
                        searches.c.settings_json == settings_json,
                        searches.c.shape_key.in_(chunk))):
                out[shape_key] = json.loads(entry)
    return out


def latest_searches(db: Database, spec_sha256: str, hw_sha256: str, keys: Sequence[str]
                    ) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Per shape key, the most recently recorded (settings, entry) under any settings."""
    out: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    with db.reading() as conn:
        for start in range(0, len(keys), 500):
            for shape_key, settings, entry in conn.execute(
                    sa.select(searches.c.shape_key, searches.c.settings_json,
                              searches.c.entry_json).where(
                        searches.c.spec_sha256 == spec_sha256,
                        searches.c.hw_sha256 == hw_sha256,
                        searches.c.shape_key.in_(list(keys[start:start + 500])))
                    .order_by(searches.c.id)):
                out[shape_key] = (json.loads(settings), json.loads(entry))
    return out


def recorded_winners(db: Database, spec_sha256: str, hw_sha256: str
                     ) -> list[tuple[dict[str, int], dict[str, int], float]]:
    """Every recorded (shape, configuration, latency us) of a spec on a chip: searched winners
    (predicted) and measured configurations (measured), for seeding a new shape's search."""
    out: list[tuple[dict[str, int], dict[str, int], float]] = []
    with db.reading() as conn:
        for shape, best, latency in conn.execute(
                sa.select(searches.c.shape_json, searches.c.best_json, searches.c.latency_us)
                .where(searches.c.spec_sha256 == spec_sha256,
                       searches.c.hw_sha256 == hw_sha256).order_by(searches.c.id)):
            out.append((json.loads(shape), json.loads(best), float(latency)))
        for shape, config, time_us in conn.execute(
                sa.select(measurements.c.shape_json, measurements.c.config_json,
                          measurements.c.time_us)
                .where(measurements.c.spec_sha256 == spec_sha256,
                       measurements.c.hw_sha256 == hw_sha256,
                       measurements.c.time_us.is_not(None)).order_by(measurements.c.id)):
            out.append((json.loads(shape), json.loads(config), float(time_us)))
    return out


# ---- measurements ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Protocol:
    """How a candidate was measured: the same command, warm-up and repeats on the same host
    and chip is the same protocol (the device it ran on is recorded, not part of it)."""

    command: str  # the command line with its pattern or CSV and row filter
    warmup: int
    repeats: int
    host: str = ""

    @property
    def sha256(self) -> str:
        return hashlib.sha256(_json([self.command, self.warmup, self.repeats,
                                     self.host or host_name()]).encode()).hexdigest()


def record_measurement(db: Database, keys: Keys, protocol: Protocol, shape: Mapping[str, int],
                       config: Mapping[str, int], measured: Mapping[str, Any], *,
                       baseline: bool = False, predicted_us: float | None = None,
                       device: str | None = None, uid: str | None = None) -> bool:
    """Append one measured candidate (``measured``: time_us, runs_us, attempts; or error).
    ``uid`` (default: a fresh one) names the record: a uid the database holds already is
    not written again (a retried task's second try). False when it was held."""
    time_us = measured.get("time_us")
    row = {**keys.row(), "uid": uid or uuid.uuid4().hex, "recorded_at": now(),
           "shape_key": shape_text(shape), "shape_json": _ordered(shape),
           "config_key": config_text(config), "config_json": _ordered(config),
           "baseline": baseline, "protocol_sha256": protocol.sha256,
           "command": protocol.command, "warmup": protocol.warmup,
           "repeats": protocol.repeats, "device": device,
           "time_us": float(time_us) if isinstance(time_us, (int, float)) else None,
           "error": None if time_us is not None else str(measured.get("error", "failed")),
           "measured_json": _json(dict(measured)), "predicted_us": predicted_us}
    if uid is not None:
        return _insert_new(db, measurements, [row]) == 1
    with db.connect() as conn:
        conn.execute(measurements.insert().values(**row))
    return True


def measurement_by_uid(db: Database, uid: str) -> tuple[dict[str, Any], str | None] | None:
    """(measured, device) of the measurement recorded under ``uid``; None when none is."""
    with db.reading() as conn:
        row = conn.execute(sa.select(measurements.c.measured_json, measurements.c.device)
                           .where(measurements.c.uid == uid)).first()
    return None if row is None else (json.loads(row[0]), row[1])


def measured_under(db: Database, keys: Keys, protocol: Protocol
                   ) -> dict[tuple[str, str], dict[str, Any]]:
    """(shape key, config key) -> the latest successful measurement under ``protocol`` of
    this spec on this chip (what ``measure`` need not run again)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    with db.reading() as conn:
        for shape_key, config_key, measured in conn.execute(
                sa.select(measurements.c.shape_key, measurements.c.config_key,
                          measurements.c.measured_json).where(
                    measurements.c.protocol_sha256 == protocol.sha256,
                    measurements.c.spec_sha256 == keys.spec_sha256,
                    measurements.c.hw_sha256 == keys.hw_sha256,
                    measurements.c.time_us.is_not(None)).order_by(measurements.c.id)):
            out[(shape_key, config_key)] = json.loads(measured)
    return out


@dataclass(frozen=True)
class RowFilter:
    """Which measurements ``calibrate`` / ``validate --from-db`` take."""

    hw_sha256: str
    spec_sha256: str | None = None
    spec_name: str | None = None
    shapes: tuple[str, ...] = ()
    host: str | None = None
    since: str | None = None  # ISO date or time, inclusive
    until: str | None = None  # ISO date or time, exclusive


def measured_rows(db: Database, where: RowFilter) -> Iterator[dict[str, Any]]:
    """Successful measurements matching ``where``, oldest first: shape, config, time_us,
    runs_us, host, recorded_at."""
    m = measurements.c
    query = sa.select(m.shape_json, m.config_json, m.time_us, m.measured_json, m.host,
                      m.recorded_at, m.spec_name).where(m.hw_sha256 == where.hw_sha256,
                                                        m.time_us.is_not(None))
    if where.spec_sha256 is not None:
        query = query.where(m.spec_sha256 == where.spec_sha256)
    if where.spec_name is not None:
        query = query.where(m.spec_name == where.spec_name)
    if where.shapes:
        query = query.where(m.shape_key.in_(list(where.shapes)))
    if where.host is not None:
        query = query.where(m.host == where.host)
    if where.since is not None:
        query = query.where(m.recorded_at >= where.since)
    if where.until is not None:
        query = query.where(m.recorded_at < where.until)
    with db.reading() as conn:
        for shape, config, time_us, measured, host, at, spec in conn.execute(
                query.order_by(m.id)).yield_per(10_000):
            yield {"shape": json.loads(shape), "config": json.loads(config),
                   "time_us": float(time_us),
                   "runs_us": json.loads(measured).get("runs_us"), "host": host,
                   "recorded_at": at, "spec": spec}


# ---- calibrations ---------------------------------------------------------------------------


def record_calibration(db: Database, keys: Keys, rows: int, profile_name: str,
                       profile_sha256: str | None, scales: Mapping[str, float],
                       document: Mapping[str, Any]) -> None:
    with db.connect() as conn:
        conn.execute(calibrations.insert().values(
            **keys.row(), uid=uuid.uuid4().hex, recorded_at=now(), rows=rows,
            profile_name=profile_name, profile_sha256=profile_sha256,
            scales_json=_json(dict(scales)), document_json=_json(dict(document))))


def knowledge(db: Database, pairs: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """Per (spec digest, chip digest): searched shapes, measurements (successful), calibrations,
    hosts and the latest record time the database holds."""
    out = []
    with db.reading() as conn:
        for spec_sha, hw_sha in dict.fromkeys(pairs):
            row: dict[str, Any] = {"spec_sha256": spec_sha, "hw_sha256": hw_sha, "hosts": set(),
                                   "latest": ""}
            for name, table in (("searches", searches), ("measurements", measurements),
                                ("calibrations", calibrations)):
                c = table.c
                where = [c.spec_sha256 == spec_sha, c.hw_sha256 == hw_sha]
                if name == "measurements":
                    where.append(c.time_us.is_not(None))
                count, latest = conn.execute(sa.select(sa.func.count(), sa.func.max(
                    c.recorded_at)).where(*where)).one()
                row[name] = int(count)
                row["latest"] = max(row["latest"], latest or "")
                row["hosts"] |= set(conn.execute(sa.select(c.host).where(*where).distinct())
                                    .scalars())
            row["hosts"] = sorted(row["hosts"])
            out.append(row)
    return out
