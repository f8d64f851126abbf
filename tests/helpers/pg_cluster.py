"""A PostgreSQL 15 cluster of a test's own (initdb in a temporary folder, its own port), for
tests that stop and start the database: the suite's shared server is never disturbed."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

from tests.helpers.otlp_server import free_port

BIN = Path("/usr/lib/postgresql/15/bin")


def _as_postgres(*command: str) -> list[str]:
    """Run as the postgres user when we are root (initdb refuses root)."""
    return ["runuser", "-u", "postgres", "--", *command] if os.getuid() == 0 else list(command)


class Cluster:
    """``port``: its own (default: a free one); ``settings``: more ``-c`` settings of the
    server (``shared_preload_libraries=citus``)."""

    def __init__(self, port: int | None = None, settings: tuple[str, ...] = ()) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="agentdocket-pg-"))
        if os.getuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self.data = self.root / "data"
        self.port = port or free_port()
        self.settings = settings
        self.log = self.root / "server.log"
        subprocess.run(
            _as_postgres(
                str(BIN / "initdb"),
                "-D",
                str(self.data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ),
            check=True,
            capture_output=True,
        )

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off"
        ) + "".join(f" -c {setting}" for setting in self.settings)
        subprocess.run(
            _as_postgres(
                str(BIN / "pg_ctl"),
                "-D",
                str(self.data),
                "-o",
                options,
                "-l",
                str(self.log),
                "-w",
                "start",
            ),
            check=True,
            capture_output=True,
        )

    def stop(self) -> None:
        subprocess.run(
            _as_postgres(str(BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"),
            check=True,
            capture_output=True,
        )

    def create_database(self, name: str) -> str:
        with psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def remove(self) -> None:
        subprocess.run(
            _as_postgres(str(BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"),
            capture_output=True,
        )
        deadline = time.monotonic() + 10
        while (self.data / "postmaster.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        shutil.rmtree(self.root, ignore_errors=True)
