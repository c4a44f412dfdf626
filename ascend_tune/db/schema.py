"""The tables of the tuning database (SQLAlchemy Core) and the schema revision they are.

Every row carries what makes it valid: the chip (profile name and digest), the CANN version
where known, the spec (name, variant, digest), the shape, the tool version, the host and when
it was recorded; ``uid`` is the record's identity across databases (``db export`` / ``db
import`` merge by it). Measurements are append-only: nothing updates or deletes a row.

A change of these tables is a new Alembic revision in ``migrations/versions`` and a new
``HEAD`` here (tests/test_db.py holds the two to each other: the migrations build exactly
these tables).
"""

from __future__ import annotations

import sqlalchemy as sa

# The newest revision this release knows, and every revision it can read (oldest first).
HEAD = "0001"
REVISIONS = ("0001",)

metadata = sa.MetaData()


def _keys() -> list[sa.Column[object]]:
    """The validity keys every record table shares."""
    return [
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uid", sa.String(64), nullable=False, unique=True),
        sa.Column("recorded_at", sa.String(32), nullable=False),  # UTC ISO 8601
        sa.Column("tool_version", sa.String(32), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("hw_name", sa.String(255), nullable=False),
        sa.Column("hw_sha256", sa.String(64), nullable=False),
        sa.Column("cann_version", sa.String(64), nullable=True),
        sa.Column("spec_name", sa.String(255), nullable=False),
        sa.Column("spec_variant", sa.String(255), nullable=True),
        sa.Column("spec_sha256", sa.String(64), nullable=False),
    ]


searches = sa.Table(
    "searches", metadata, *_keys(),
    sa.Column("shape_key", sa.Text, nullable=False),
    sa.Column("shape_json", sa.Text, nullable=False),
    # The search settings the entry answers (the results file's "search" header, as JSON).
    sa.Column("settings_json", sa.Text, nullable=False),
    sa.Column("latency_us", sa.Float, nullable=False),  # the winner's predicted latency
    sa.Column("best_json", sa.Text, nullable=False),  # the winner's configuration
    sa.Column("entry_json", sa.Text, nullable=False),  # the whole results entry
    sa.Index("ix_searches_lookup", "spec_sha256", "hw_sha256", "shape_key"),
)

measurements = sa.Table(
    "measurements", metadata, *_keys(),
    sa.Column("shape_key", sa.Text, nullable=False),
    sa.Column("shape_json", sa.Text, nullable=False),
    sa.Column("config_key", sa.Text, nullable=False),
    sa.Column("config_json", sa.Text, nullable=False),
    sa.Column("baseline", sa.Boolean, nullable=False),  # the spec's baseline configuration
    # The protocol: what was run and how (the same digest: the same protocol).
    sa.Column("protocol_sha256", sa.String(64), nullable=False),
    sa.Column("command", sa.Text, nullable=False),
    sa.Column("warmup", sa.Integer, nullable=False),
    sa.Column("repeats", sa.Integer, nullable=False),
    sa.Column("device", sa.String(64), nullable=True),
    sa.Column("time_us", sa.Float, nullable=True),  # None: the run failed (see error)
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("measured_json", sa.Text, nullable=False),  # runs, attempts, pipes
    sa.Column("predicted_us", sa.Float, nullable=True),
    sa.Index("ix_measurements_lookup", "hw_sha256", "spec_sha256", "shape_key"),
    sa.Index("ix_measurements_protocol", "protocol_sha256", "shape_key", "config_key"),
)

calibrations = sa.Table(
    "calibrations", metadata, *_keys(),
    sa.Column("rows", sa.Integer, nullable=False),
    sa.Column("profile_name", sa.String(255), nullable=False),
    sa.Column("profile_sha256", sa.String(64), nullable=True),
    sa.Column("scales_json", sa.Text, nullable=False),
    sa.Column("document_json", sa.Text, nullable=False),
)

TABLES = {"searches": searches, "measurements": measurements, "calibrations": calibrations}
