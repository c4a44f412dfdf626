"""Alembic's environment: the connection comes from ascend_tune.db (never from a file)."""

from __future__ import annotations

from alembic import context

from ascend_tune.db.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
