"""What a release ships says the same as the code: the version the command prints is the
package's and the changelog's newest release, the docs' changelog page is CHANGELOG.md, the
upgrading page lists every schema revision, and the files in deploy/ run what they say.

The deployment files are run here without what they are for (no systemd as init, no Docker
engine): the unit is checked by ``systemd-analyze verify`` and its command run with its
environment; the container file's entry point and health check are run outside a container,
with this virtualenv in place of the image's. Installing the wheel with the ``serve`` extra
into a fresh virtualenv, as the image does, is ``scripts/wheel-check``'s.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tomllib
from datetime import date
from pathlib import Path
from types import ModuleType

import httpx
import pytest

import agentdocket
from tests.helpers.otlp_server import free_port
from tests.helpers.waiting import until

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent  # this virtualenv's, standing in for /opt/agentdocket/bin
DEPLOY = ROOT / "deploy"
RELEASE = re.compile(r"(\d+)\.(\d+)\.(\d+) \((\d{4}-\d{2}-\d{2})\)")


def _changelog_headings() -> list[str]:
    return re.findall(r"^## (.+)$", (ROOT / "CHANGELOG.md").read_text(), re.M)


# --- the version and the changelog ----------------------------------------------------------


def test_the_version_is_the_package_s_and_the_changelog_s_newest_release(tmp_path: Path) -> None:
    """As a user runs them: outside the clone, whose agentdocket.egg-info (a wheel build's
    leftover) would otherwise stand for the installed metadata."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def run(*command: str) -> str:
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    printed = run(str(BIN / "agentdocket"), "--version")
    code = "import importlib.metadata as m; print(m.version('agentdocket'))"
    installed = run(sys.executable, "-c", code)
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    released = next(h for h in _changelog_headings() if RELEASE.fullmatch(h)).split()[0]
    assert installed == declared, (
        f"the installed metadata says {installed}, pyproject.toml {declared}: install the "
        "package again (scripts/setup)"
    )
    assert printed == f"agentdocket {installed}"
    assert agentdocket.__version__ == installed
    assert released == installed, f"CHANGELOG.md's newest release is {released}"


def test_the_changelog_has_unreleased_changes_first_then_releases_newest_first() -> None:
    headings = _changelog_headings()
    assert headings[0] == "Unreleased"
    releases = [RELEASE.fullmatch(h) for h in headings[1:]]
    assert releases and all(releases), f"not 'X.Y.Z (YYYY-MM-DD)': {headings[1:]}"
    versions = [tuple(int(m.group(i)) for i in (1, 2, 3)) for m in releases if m]
    dates = [date.fromisoformat(m.group(4)) for m in releases if m]
    assert versions == sorted(set(versions), reverse=True)
    assert dates == sorted(dates, reverse=True)


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "mkdocs_changelog", ROOT / "scripts/mkdocs_changelog.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_changelog_page_is_changelog_md_with_its_links_made_relative() -> None:
    """The page is made at every build by a hook; here its links are followed without one."""
    hook = _hook()
    config = (ROOT / "mkdocs.yml").read_text()
    assert "scripts/mkdocs_changelog.py" in config and "changelog.md" in config
    assert not (ROOT / "docs" / hook.PAGE).exists(), "the hook makes the page: no file of it"
    text = (ROOT / "CHANGELOG.md").read_text()
    page = hook.page(text)
    pairs = list(zip(text.splitlines(), page.splitlines(), strict=True))
    assert all(a == b or a.replace("](docs/", "](") == b for a, b in pairs)
    targets = re.findall(r"\]\((?![a-z][a-z0-9+.-]*:|#)([^)\s#]+)", page)
    assert targets and all((ROOT / "docs" / t).is_file() for t in targets), targets
    with pytest.raises(ValueError, match="scripts/test"):
        hook.page("see [the suite](scripts/test)")


def test_the_upgrading_page_has_a_row_for_every_schema_revision() -> None:
    versions = ROOT / "agentdocket" / "migrations" / "versions"
    revisions = {
        m.group(1)
        for path in versions.glob("*.py")
        if (m := re.search(r'^revision = "([^"]+)"', path.read_text(), re.M))
    }
    page = (ROOT / "docs" / "upgrading.md").read_text()
    rows = set(re.findall(r"^\| (\d{4}) \|", page, re.M))
    assert revisions and rows == revisions, (sorted(revisions - rows), sorted(rows - revisions))


# --- deploy/ --------------------------------------------------------------------------------


def _unit() -> dict[str, list[str]]:
    """deploy/agentdocket-serve.service's [Service] settings, each key's values in order."""
    settings: dict[str, list[str]] = {}
    section = None
    for line in (DEPLOY / "agentdocket-serve.service").read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[Service]" and line and not line.startswith("#"):
            key, _, value = line.partition("=")
            settings.setdefault(key, []).append(value)
    return settings


def _env_file(path: Path) -> dict[str, str]:
    pairs = (
        line.partition("=")
        for line in path.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    )
    return {key: value for key, _, value in pairs}


def _serve(
    command: list[str], env: dict[str, str], cwd: Path, log: Path
) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(command, env=env, cwd=cwd, stdout=out, stderr=out)


def _answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _stops(proc: subprocess.Popen[bytes], log: Path) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0, log.read_text()


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_the_systemd_unit_verifies(tmp_path: Path) -> None:
    """``systemd-analyze verify`` exits 0 on unknown keys and bad values, naming them: any
    line about the unit fails the test. The binary must exist: this virtualenv's stands in."""
    text = (DEPLOY / "agentdocket-serve.service").read_text()
    assert "/opt/agentdocket/bin/agentdocket" in text
    unit = tmp_path / "agentdocket-serve.service"
    unit.write_text(text.replace("/opt/agentdocket/bin", str(BIN)))
    done = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    said = [line for line in (done.stdout + done.stderr).splitlines() if unit.name in line]
    assert done.returncode == 0 and said == [], done.stdout + done.stderr


def test_the_systemd_unit_s_command_serves_with_its_environment(
    tmp_path: Path, sqlite_url: str
) -> None:
    """ExecStart with the environment systemd gives it: the template's variables (this test's
    database in place of the URL), the unit's own, and no HOME to write to. It answers, takes
    the template's token, writes nothing outside its state directory, and stops on SIGTERM."""
    unit = _unit()
    (start,) = unit["ExecStart"]
    (env_file,) = unit["EnvironmentFile"]
    assert env_file == "/etc/agentdocket/serve.env"
    assert unit["StateDirectory"] == ["agentdocket"]
    state, cwd, home = tmp_path / "state", tmp_path / "cwd", tmp_path / "home"
    cwd.mkdir()
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    env |= _env_file(DEPLOY / "serve.env") | {"AGENTDOCKET_DATABASE_URL": sqlite_url}
    for value in unit.get("Environment", []):
        key, _, setting = value.partition("=")
        env[key] = setting.replace("%S", str(state))  # %S: /var/lib for a system unit
    port = free_port()
    command = shlex.split(start.replace("/opt/agentdocket/bin", str(BIN)))
    log = tmp_path / "serve.log"
    proc = _serve([*command, "--port", str(port), "--grpc-port", "0"], env, cwd, log)
    try:
        until(lambda: _answers(port), "serve answers /healthz", seconds=120, detail=log.read_text)
        body: dict[str, list[object]] = {"resourceSpans": []}
        endpoint = f"http://127.0.0.1:{port}/v1/traces"
        assert httpx.post(endpoint, json=body, timeout=10).status_code == 401
        token = {"Authorization": f"Bearer {env['AGENTDOCKET_SERVE_TOKEN']}"}
        assert httpx.post(endpoint, json=body, headers=token, timeout=10).status_code == 200
    finally:
        _stops(proc, log)
    assert not home.exists() and list(cwd.iterdir()) == [], "written outside the state directory"


def _containerfile() -> dict[str, list[str]]:
    """deploy/Containerfile's instructions, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (DEPLOY / "Containerfile").read_text())
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.setdefault(word, []).append(rest.strip())
    return out


def test_the_container_file_installs_the_serve_extra_and_exposes_serve_s_ports() -> None:
    from agentdocket.commands.serve import serve

    image = _containerfile()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    (run,) = image["RUN"]
    assert "python -m venv /opt/agentdocket" in run and '"$1[serve]"' in run and "serve" in extras
    defaults = {p.name: p.default for p in serve.params}
    assert image["EXPOSE"] == [f"{defaults['port']} {defaults['grpc_port']}"]
    (check,) = image["HEALTHCHECK"]
    assert f"127.0.0.1:{defaults['port']}/healthz" in check
    (user,) = image["USER"]
    assert user != "0" and user != "root"


def test_the_container_s_entry_point_serves_and_refuses_to_without_a_token(
    tmp_path: Path, sqlite_url: str
) -> None:
    """ENTRYPOINT with the image's ENV, as ``docker run -e AGENTDOCKET_DATABASE_URL -e
    AGENTDOCKET_SERVE_TOKEN IMAGE --port P --grpc-port 0`` would run it; then its HEALTHCHECK
    (on that port). Without a token it must not start: it listens on every interface."""
    image = _containerfile()
    paths = {"/opt/agentdocket/bin": str(BIN), "/var/lib/agentdocket": str(tmp_path / "volume")}

    def here(text: str) -> str:
        for theirs, ours in paths.items():
            text = text.replace(theirs, ours)
        return text

    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    for value in image["ENV"]:
        key, _, setting = value.partition("=")
        env[key] = here(setting)
    env["AGENTDOCKET_DATABASE_URL"] = sqlite_url
    (entry,) = image["ENTRYPOINT"]
    command = [here(arg) for arg in json.loads(entry)]
    assert command[1:] == ["serve", "--host", "0.0.0.0"]
    port = free_port()
    args = ["--port", str(port), "--grpc-port", "0"]
    refused = subprocess.run(
        [*command, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert refused.returncode != 0 and "token" in refused.stderr.lower(), refused.stderr
    log = tmp_path / "serve.log"
    proc = _serve([*command, *args], env | {"AGENTDOCKET_SERVE_TOKEN": "t0ken"}, tmp_path, log)
    try:
        until(lambda: _answers(port), "serve answers /healthz", seconds=120, detail=log.read_text)
        (check,) = image["HEALTHCHECK"]
        health = json.loads(here(check.removeprefix("CMD ")).replace(":4318/", f":{port}/"))
        assert subprocess.run(health, env=env, timeout=60).returncode == 0
    finally:
        _stops(proc, log)
