"""Alembic migrations of the schema, for PostgreSQL and SQLite: ``agentdocket migrate``."""
