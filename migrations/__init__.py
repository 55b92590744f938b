"""Alembic environment for the Placement schema (installed as placement.migrations)."""
