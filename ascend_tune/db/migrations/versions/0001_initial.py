"""The first schema: searches, measurements, calibrations.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _keys() -> list[sa.Column[object]]:
    return [
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uid", sa.String(64), nullable=False, unique=True),
        sa.Column("recorded_at", sa.String(32), nullable=False),
        sa.Column("tool_version", sa.String(32), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("hw_name", sa.String(255), nullable=False),
        sa.Column("hw_sha256", sa.String(64), nullable=False),
        sa.Column("cann_version", sa.String(64), nullable=True),
        sa.Column("spec_name", sa.String(255), nullable=False),
        sa.Column("spec_variant", sa.String(255), nullable=True),
        sa.Column("spec_sha256", sa.String(64), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "searches", *_keys(),
        sa.Column("shape_key", sa.Text, nullable=False),
        sa.Column("shape_json", sa.Text, nullable=False),
        sa.Column("settings_json", sa.Text, nullable=False),
        sa.Column("latency_us", sa.Float, nullable=False),
        sa.Column("best_json", sa.Text, nullable=False),
        sa.Column("entry_json", sa.Text, nullable=False))
    op.create_index("ix_searches_lookup", "searches", ["spec_sha256", "hw_sha256", "shape_key"])
    op.create_table(
        "measurements", *_keys(),
        sa.Column("shape_key", sa.Text, nullable=False),
        sa.Column("shape_json", sa.Text, nullable=False),
        sa.Column("config_key", sa.Text, nullable=False),
        sa.Column("config_json", sa.Text, nullable=False),
        sa.Column("baseline", sa.Boolean, nullable=False),
        sa.Column("protocol_sha256", sa.String(64), nullable=False),
        sa.Column("command", sa.Text, nullable=False),
        sa.Column("warmup", sa.Integer, nullable=False),
        sa.Column("repeats", sa.Integer, nullable=False),
        sa.Column("device", sa.String(64), nullable=True),
        sa.Column("time_us", sa.Float, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("measured_json", sa.Text, nullable=False),
        sa.Column("predicted_us", sa.Float, nullable=True))
    op.create_index("ix_measurements_lookup", "measurements",
                    ["hw_sha256", "spec_sha256", "shape_key"])
    op.create_index("ix_measurements_protocol", "measurements",
                    ["protocol_sha256", "shape_key", "config_key"])
    op.create_table(
        "calibrations", *_keys(),
        sa.Column("rows", sa.Integer, nullable=False),
        sa.Column("profile_name", sa.String(255), nullable=False),
        sa.Column("profile_sha256", sa.String(64), nullable=True),
        sa.Column("scales_json", sa.Text, nullable=False),
        sa.Column("document_json", sa.Text, nullable=False))


def downgrade() -> None:
    for table in ("calibrations", "measurements", "searches"):
        op.drop_table(table)
