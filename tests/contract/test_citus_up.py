"""scripts/citus-up stands alone: it needs neither the tests nor the development environment,
only the system's Python and psql. It runs here from a folder holding the script and
agentdocket/store/backends/citus/cluster.py alone (no tests/, no .venv, ../shared beside
it), and the module, as citus-up runs it, with the standard library alone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from agentdocket.store.backends.citus.cluster import Cluster
from tests.helpers.db import ROOT, SHARED, require_shared

pytestmark = pytest.mark.citus
MODULE = ROOT / "agentdocket/store/backends/citus/cluster.py"


@pytest.fixture
def name(citus_cluster: Cluster) -> Iterator[str]:
    """A database name of the cluster's, dropped from every node afterwards."""
    name = f"agentdocket_citus_up_{uuid.uuid4().hex[:8]}"
    yield name
    citus_cluster.drop_database(name)


def _made(cluster: Cluster, name: str) -> None:
    """``name`` is on every node with the extension, the workers registered in it."""
    for port in cluster.ports:
        with psycopg.connect(cluster.conninfo(port, name)) as conn:
            [(version,)] = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'citus'"
            ).fetchall()
            assert version.startswith("13.")
    with psycopg.connect(cluster.conninfo(cluster.port, name)) as conn:
        workers = conn.execute(
            "SELECT nodeport FROM pg_dist_node WHERE noderole = 'primary' AND groupid > 0 "
            "ORDER BY nodeport"
        ).fetchall()
    assert [port for (port,) in workers] == cluster.ports[1:]


def _gone(cluster: Cluster, name: str) -> None:
    for port in cluster.ports:
        with psycopg.connect(cluster.conninfo(port)) as conn:
            there = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
            assert there.fetchone() is None


def test_the_module_runs_with_the_standard_library_alone(
    citus_cluster: Cluster, name: str, tmp_path: Path
) -> None:
    """-I -S: no site-packages (no psycopg, no agentdocket), so it goes through psql; -P: not
    its own folder on the path either, as citus-up runs it."""
    alone = tmp_path / "citus_cluster.py"
    shutil.copyfile(MODULE, alone)
    url = citus_cluster.url(name)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-I", "-S", "-P", str(alone), *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )

    made = run("make", url)
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == url
    _made(citus_cluster, name)
    again = run("make", url)  # refused without --exist-ok, said in a line
    assert again.returncode == 1
    assert again.stderr == f"citus-up: database {name} exists on port {citus_cluster.port}\n"
    assert run("make", url, "--exist-ok").returncode == 0
    dropped = run("drop", url)
    assert dropped.returncode == 0, dropped.stderr
    _gone(citus_cluster, name)


def _root_or_sudo() -> bool:
    if os.geteuid() == 0:
        return True
    return subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _root_or_sudo(), reason="citus-up runs as root or through sudo -n")
def test_citus_up_runs_without_the_tests_and_the_virtualenv(
    citus_cluster: Cluster, name: str, tmp_path: Path
) -> None:
    """The cluster is up (scripts/test started it): citus-up starts nothing, builds nothing,
    and makes the database it is told to, printing its URL on its last line."""
    require_shared(SHARED / "vendor" / "citus")
    clone = tmp_path / "agentdocket"
    for part in ("scripts/citus-up", "agentdocket/store/backends/citus/cluster.py"):
        (clone / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / part, clone / part)
    (tmp_path / "shared").symlink_to(SHARED)
    venv = Path(sys.prefix)
    path = [p for p in os.environ["PATH"].split(os.pathsep) if p and not p.startswith(str(venv))]
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH"}}
    env |= {
        "PATH": os.pathsep.join(path),
        "AGENTDOCKET_CITUS_PORT": str(citus_cluster.port),
        "AGENTDOCKET_PG_ROLE": citus_cluster.role,
        "AGENTDOCKET_PG_PASSWORD": citus_cluster.password,
        "AGENTDOCKET_PG_DB": name,
    }
    env.pop("PYTHON", None)
    for _ in range(2):  # idempotent
        done = subprocess.run(
            ["bash", str(clone / "scripts/citus-up")],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == citus_cluster.url(name)
        assert "Traceback" not in done.stderr
    _made(citus_cluster, name)
