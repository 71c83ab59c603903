"""Alembic migrations of the fleet schema (env.py runs them; versions/ is the history)."""
