"""What the benchmarks share: finding the PostgreSQL server, and throwaway databases on it."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql

from agentdocket.store.config import parse_url, psycopg_conninfo


def postgres_url(given: str | None) -> str:
    """``given``, else the local cluster's URL from scripts/pg-up (which starts it if down)."""
    if given:
        return given
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [str(root / "scripts" / "pg-up")], check=True, text=True, capture_output=True
    ).stdout
    return out.strip().splitlines()[-1]


@contextmanager
def fresh_database(url: str) -> Iterator[str]:
    """A new empty database on ``url``'s server, dropped afterwards (even while autovacuum
    works on it); yields its URL."""
    admin = psycopg_conninfo(parse_url(url))
    name = f"agentdocket_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield parse_url(url).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
            conn.execute(drop.format(sql.Identifier(name)))
