"""Alembic migrations of the tuning database (``ascend-tune db upgrade`` runs them)."""
