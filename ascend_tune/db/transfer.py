"""Moving experience between sites: ``db export`` (JSON lines, one record a line), ``db
import`` (merge by uid: nothing duplicated; records whose chip or spec digest differs from
this site's of the same name refused unless asked) and ``db stats``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import sqlalchemy as sa

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.db.engine import Database
from ascend_tune.db.records import _insert_new
from ascend_tune.db.schema import TABLES

# kind ("hw" | "spec"), name, variant -> this site's digest of that name (None: unknown here).
Digest = Callable[[str, str, "str | None"], "str | None"]


def export(db: Database, out: IO[str]) -> int:
    """Every record as one JSON line (``{"table": ..., column: value, ...}``, without the
    local row id), table by table, oldest first. Returns the number of lines."""
    count = 0
    with db.reading() as conn:
        for name, table in TABLES.items():
            columns = [c for c in table.c if c.name != "id"]
            for row in conn.execute(sa.select(*columns).order_by(table.c.id)).yield_per(5000):
                out.write(json.dumps({"table": name, **row._asdict()}, sort_keys=True,
                                     separators=(",", ":")) + "\n")
                count += 1
    return count


@dataclass
class Imported:
    added: dict[str, int] = field(default_factory=dict)  # table -> records added
    duplicates: int = 0  # already held (same uid)
    mismatched: list[str] = field(default_factory=list)  # refused: digest differs here


def _records(lines: Iterable[str], origin: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise AscendTuneError(f"{origin}:{number}: not JSON ({error.msg})") from None
        table = record.pop("table", None) if isinstance(record, dict) else None
        if table not in TABLES:
            raise AscendTuneError(f"{origin}:{number}: not a record of `ascend-tune db export` "
                                  f"(table {table!r:.40})")
        known = {c.name for c in TABLES[table].c} - {"id"}
        missing = sorted(c.name for c in TABLES[table].c
                         if c.name in known and not c.nullable and c.name not in record)
        unknown = sorted(set(record) - known)
        if missing or unknown:
            raise AscendTuneError(f"{origin}:{number}: {table} record "
                                  + (f"lacks {', '.join(missing)}" if missing
                                     else f"has unknown field(s) {', '.join(unknown)}"))
        yield number, table, record


def import_lines(db: Database, lines: Iterable[str], origin: str, digest: Digest,
                 allow_mismatch: bool = False) -> Imported:
    """Merge exported records: a uid already held is skipped; a record whose chip (or spec) is
    known here by name with another digest is refused unless ``allow_mismatch``. Every line is
    checked before anything is written."""
    out = Imported()
    batches: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
    for number, table, record in _records(lines, origin):
        for kind, name, variant, sha in (
                ("hw", record["hw_name"], None, record["hw_sha256"]),
                ("spec", record["spec_name"], record.get("spec_variant"),
                 record["spec_sha256"])):
            here = digest(kind, name, variant)
            if here is not None and here != sha and not allow_mismatch:
                out.mismatched.append(f"{origin}:{number}: {kind} {name} has digest "
                                      f"{str(sha)[:12]} there, {here[:12]} here")
                break
        else:
            batches[table].append(record)
    for table, rows in batches.items():
        added = 0
        for start in range(0, len(rows), 1000):
            added += _insert_new(db, TABLES[table], rows[start:start + 1000])
        out.added[table] = added
        out.duplicates += len(rows) - added
    return out


def stats(db: Database) -> list[tuple[str, str, str, str, int, str | None]]:
    """(table, chip, spec, host, records, latest record time) for what the database holds."""
    rows: list[tuple[str, str, str, str, int, str | None]] = []
    with db.reading() as conn:
        for name, table in TABLES.items():
            c = table.c
            for hw, spec, host, n, latest in conn.execute(
                    sa.select(c.hw_name, c.spec_name, c.host, sa.func.count(),
                              sa.func.max(c.recorded_at))
                    .group_by(c.hw_name, c.spec_name, c.host)
                    .order_by(c.hw_name, c.spec_name, c.host)):
                rows.append((name, hw, spec, host, int(n), latest))
    return rows
