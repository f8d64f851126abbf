"""A Citus cluster on one machine: the coordinator on a port, its workers on the next ports
(scripts/citus-up makes one of three PostgreSQL servers). A database of the cluster is made on
every node, with the ``citus`` extension, and the workers are registered with the coordinator
in it; dropped, it goes from every node.

scripts/citus-up runs this file with the system's Python, the package installed or not
(``python3 -P agentdocket/store/backends/citus/cluster.py make URL``), so it imports the
standard library alone: it reaches the nodes through psycopg where that is importable
(the tests, an installed agentdocket), through the ``psql`` program elsewhere, both as the
URL's role.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlsplit

try:  # run as a file (citus-up), this module is no part of a package
    from agentdocket.errors import AgentdocketError
except ImportError:  # pragma: no cover - citus-up without the package installed

    class AgentdocketError(Exception):  # type: ignore[no-redef]
        """agentdocket's root error (the package is not on the path here)."""


WORKERS = 2
DROP_WAIT_S = 60.0  # how long a drop waits for Citus's own sessions in the database to end
OBJECT_IN_USE = "55006"  # SQLSTATE: a database others are connected to

# A node's statement, run: its rows, each value as text (None for NULL).
Run = Callable[[str], list[tuple[str | None, ...]]]


class ClusterError(AgentdocketError):
    """A node refused a statement (its SQLSTATE, when it said one), or could not be reached."""

    def __init__(self, message: str, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class Via(Protocol):
    """How statements reach a node: a session on one database of one node (``conninfo``
    without the password, given apart: it is no program's argument)."""

    def session(self, conninfo: str, password: str) -> AbstractContextManager[Run]: ...


class Psycopg:
    """Through psycopg, one connection for a session (autocommit: CREATE DATABASE)."""

    @contextmanager
    def session(self, conninfo: str, password: str) -> Iterator[Run]:
        import psycopg

        try:
            conn = psycopg.connect(conninfo, password=password, autocommit=True)
        except psycopg.Error as exc:
            raise ClusterError(str(exc).strip(), exc.sqlstate) from None

        def run(statement: str) -> list[tuple[str | None, ...]]:
            try:
                cursor = conn.execute(statement)
            except psycopg.Error as exc:
                raise ClusterError(str(exc).strip(), exc.sqlstate) from None
            if cursor.description is None:
                return []
            return [tuple(None if v is None else str(v) for v in row) for row in cursor]

        with conn:
            yield run


class Psql:
    """Through the ``psql`` program, one run of it for each statement."""

    SEPARATOR = "\x1f"
    # unaligned rows, no headers, the SQLSTATE in an error (a drop retried while in use)
    COMMAND = (
        *("psql", "-X", "-q", "-A", "-t", "-F", SEPARATOR),
        *("-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose"),
    )

    @contextmanager
    def session(self, conninfo: str, password: str) -> Iterator[Run]:
        env = {**os.environ, "PGPASSWORD": password, "PGCONNECT_TIMEOUT": "10"}

        def run(statement: str) -> list[tuple[str | None, ...]]:
            done = subprocess.run(
                [*self.COMMAND, "-d", conninfo, "-c", statement],
                capture_output=True,
                text=True,
                check=False,
                env=env,
            )
            if done.returncode != 0:
                said = re.search(r"(?:ERROR|FATAL):\s+([0-9A-Z]{5}):", done.stderr)
                raise ClusterError(done.stderr.strip(), said.group(1) if said else None)
            return [tuple(line.split(self.SEPARATOR)) for line in done.stdout.splitlines()]

        yield run


def default_via() -> Via:
    """psycopg where it can be imported, psql elsewhere."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return Psql()
    return Psycopg()


def literal(value: str) -> str:
    """``value`` as an SQL string literal (standard_conforming_strings, PostgreSQL's default)."""
    return "'" + value.replace("'", "''") + "'"


def identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _conninfo_value(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


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
    """The coordinator on ``port`` of ``host``, its workers on the next ports, reached as
    ``role``."""

    role: str
    password: str
    port: int
    workers: int = WORKERS
    host: str = "127.0.0.1"
    via: Via = field(default_factory=default_via, compare=False, repr=False)

    @classmethod
    def of(cls, url: str, via: Via | None = None) -> Cluster:
        """The cluster whose coordinator ``url`` names: postgresql+psycopg://ROLE:PW@HOST:PORT/DB."""
        parts = urlsplit(url)
        if not (parts.username and parts.password is not None and parts.port and parts.hostname):
            raise ClusterError(f"{parts.scheme}://...: the URL names no role, password or port")
        return cls(
            unquote(parts.username),
            unquote(parts.password),
            parts.port,
            host=parts.hostname,
            via=via or default_via(),
        )

    @property
    def ports(self) -> list[int]:
        return [self.port + i for i in range(self.workers + 1)]

    def conninfo(self, port: int, database: str = "postgres", *, password: bool = True) -> str:
        """libpq's connection string for ``database`` on the node at ``port``."""
        parts = [f"host={self.host}", f"port={port}", f"dbname={_conninfo_value(database)}"]
        parts.append(f"user={_conninfo_value(self.role)}")
        if password:
            parts.append(f"password={_conninfo_value(self.password)}")
        return " ".join(parts)

    def url(self, database: str) -> str:
        return (
            f"postgresql+psycopg://{self.role}:{self.password}@{self.host}:{self.port}/{database}"
        )

    def _session(self, port: int, database: str = "postgres") -> AbstractContextManager[Run]:
        # notices (an extension or node already there) are no news here
        options = _conninfo_value("-c client_min_messages=warning")
        conninfo = self.conninfo(port, database, password=False)
        return self.via.session(f"{conninfo} options={options}", self.password)

    def make_database(self, name: str, *, exist_ok: bool = False) -> str:
        """Make ``name`` on every node with the extension, register the workers with the
        coordinator in it; its URL (on the coordinator). Idempotent with ``exist_ok``."""
        for port in self.ports:
            with self._session(port) as run:
                there = run(f"SELECT 1 FROM pg_database WHERE datname = {literal(name)}")
                if not there:
                    run(f"CREATE DATABASE {identifier(name)}")
                elif not exist_ok:
                    raise ClusterError(f"database {name} exists on port {port}")
            with self._session(port, name) as run:
                run("CREATE EXTENSION IF NOT EXISTS citus")
        # Registering a worker creates or alters the role there, a row of a catalog every
        # database shares: two processes registering at once fail on it ("tuple concurrently
        # updated"), so registrations on this machine take turns.
        with _registering(), self._session(self.port, name) as run:
            run(f"SELECT citus_set_coordinator_host({literal(self.host)}, {self.port})")
            known = {
                row[0]
                for row in run("SELECT nodeport FROM pg_dist_node WHERE noderole = 'primary'")
            }
            for port in self.ports[1:]:
                if str(port) not in known:
                    run(f"SELECT citus_add_node({literal(self.host)}, {port})")
        return self.url(name)

    def drop_database(self, name: str) -> None:
        """Drop ``name`` on every node. Citus's own background work (the coordinator's
        maintenance daemon, its deadlock detector's connections to the workers) can open a
        session in the database while the drop waits for the forced ones to end: the drop is
        then tried again until it goes through, for at most :data:`DROP_WAIT_S`."""
        drop = f"DROP DATABASE IF EXISTS {identifier(name)} WITH (FORCE)"
        for port in self.ports:
            deadline = time.monotonic() + DROP_WAIT_S
            while True:
                try:
                    with self._session(port) as run:
                        run(drop)
                    break
                except ClusterError as exc:
                    if exc.sqlstate != OBJECT_IN_USE or time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="cluster.py",
        description="Make (or drop) a database on every node of a local Citus cluster, the "
        "workers registered with the coordinator in it. Prints its URL.",
    )
    parser.add_argument("action", choices=["make", "drop"])
    parser.add_argument("url", help="the coordinator's: postgresql+psycopg://ROLE:PW@HOST:PORT/DB")
    parser.add_argument("--workers", type=int, default=WORKERS, help="the workers' number")
    parser.add_argument("--exist-ok", action="store_true", help="make: a database there is kept")
    parser.add_argument("--via", choices=["psycopg", "psql"], help="default: psycopg if importable")
    args = parser.parse_args(argv)
    vias: dict[str | None, Via] = {"psycopg": Psycopg(), "psql": Psql(), None: default_via()}
    via = vias[args.via]
    try:
        cluster = replace(Cluster.of(args.url, via), workers=args.workers)
        database = unquote(urlsplit(args.url).path.lstrip("/"))
        if not database:
            raise ClusterError("the URL names no database")
        if args.action == "make":
            print(cluster.make_database(database, exist_ok=args.exist_ok))
        else:
            cluster.drop_database(database)
    except ClusterError as exc:
        print(f"citus-up: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
