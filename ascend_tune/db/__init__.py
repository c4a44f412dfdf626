"""The tuning database: what every search, measurement and calibration learnt, kept for the
next run (SQLAlchemy Core; an embedded SQLite file by default, PostgreSQL for a team).

* :mod:`location` - which database (``--db URL``, ``ASCEND_TUNE_DB``, the per-user file).
* :mod:`engine` - opening it: connection, schema revision check, creation, ``db upgrade``.
* :mod:`schema` - the tables; :mod:`migrations` - their Alembic history.
* :mod:`records` - what the commands record and read back.
* :mod:`transfer` - ``db export`` / ``db import`` / ``db stats``.

Imports only ``base`` of ascend-tune: the API passes it plain values.
"""

from __future__ import annotations

from ascend_tune.db.engine import Database
from ascend_tune.db.location import resolve

__all__ = ["Database", "open_database"]


def open_database(option: str | None = None, disabled: bool = False) -> Database | None:
    """The database a command uses (None: ``--no-db`` or ``ASCEND_TUNE_DB=off``); not yet
    connected (the first use checks the schema)."""
    url = resolve(option, disabled)
    return Database(url) if url is not None else None
