"""A database of the local Citus cluster (scripts/citus-up): made on the coordinator and on
every worker, with the extension and the workers registered, and dropped again."""

from __future__ import annotations

import fcntl
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

WORKERS = 2
# the coordinator's URL, exported by scripts/test when scripts/citus-up made the cluster
CITUS_ENV = "AGENTDOCKET_TEST_CITUS_URL"


@contextmanager
def _registering() -> Iterator[None]:
    """An exclusive lock, for every process of this machine, held while inside."""
    with open(Path(tempfile.gettempdir()) / "agentdocket-citus-nodes.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@dataclass(frozen=True)
class Cluster:
    """The coordinator on ``port``, its workers on the next ports."""

    role: str
    password: str
    port: int

    @classmethod
    def of(cls, url: str) -> Cluster:
        from agentdocket.store.config import parse_url

        parsed = parse_url(url)
        assert parsed.username and parsed.password and parsed.port
        return cls(parsed.username, parsed.password, parsed.port)

    @property
    def ports(self) -> list[int]:
        return [self.port + i for i in range(WORKERS + 1)]

    def conninfo(self, port: int, database: str = "postgres") -> str:
        return (
            f"host=127.0.0.1 port={port} dbname={database} user={self.role} "
            f"password={self.password}"
        )

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{self.role}:{self.password}@127.0.0.1:{self.port}/{database}"

    def make_database(self, name: str, *, exist_ok: bool = False) -> str:
        """Make ``name`` on every node with the extension, register the workers with the
        coordinator in it; its URL (on the coordinator)."""
        for port in self.ports:
            with psycopg.connect(self.conninfo(port), autocommit=True) as conn:
                there = conn.execute(
                    "SELECT 1 FROM pg_database WHERE datname = %s", [name]
                ).fetchone()
                if there is None:
                    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
                elif not exist_ok:
                    raise RuntimeError(f"database {name} exists on port {port}")
            with psycopg.connect(self.conninfo(port, name), autocommit=True) as conn:
                conn.execute("SET client_min_messages = warning")
                conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
        # Registering a worker creates or alters the role there, a row of a catalog every
        # database shares: two test processes registering at once fail on it ("tuple
        # concurrently updated"), so registrations on this machine take turns.
        with (
            _registering(),
            psycopg.connect(self.conninfo(self.port, name), autocommit=True) as conn,
        ):
            conn.execute("SELECT citus_set_coordinator_host('127.0.0.1', %s)", [self.port])
            known = {
                r[0]
                for r in conn.execute(
                    "SELECT nodeport FROM pg_dist_node WHERE noderole = 'primary'"
                ).fetchall()
            }
            for port in self.ports[1:]:
                if port not in known:
                    conn.execute("SELECT citus_add_node('127.0.0.1', %s)", [port])
        return self.url(name)

    def drop_database(self, name: str) -> None:
        """Drop ``name`` on every node. Citus's own background work (the coordinator's
        maintenance daemon, its deadlock detector's connections to the workers) can open a
        session in the database while the drop waits for the forced ones to end: the drop is
        then tried again until it goes through, for at most a minute."""
        drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        for port in self.ports:
            deadline = time.monotonic() + 60.0
            while True:
                try:
                    with psycopg.connect(self.conninfo(port), autocommit=True) as conn:
                        conn.execute(drop)
                    break
                except psycopg.errors.ObjectInUse:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
