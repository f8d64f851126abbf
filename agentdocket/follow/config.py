"""The scoring config file: which scorers follow live traffic, on which runs, at what cost.

A TOML file (``--config FILE``)::

    [follow]
    name = "production"     # followers of one name share the work and one cursor
    poll_seconds = 1.0      # how long an idle follower waits before looking again
    batch = 500             # runs read and judged per round
    prices = "prices.toml"  # optional: a price file over genai-prices, for usd_per_hour
    session_idle_seconds = 300  # session scorers judge a session idle this long

    [[scorer]]
    name = "tools.procedural"       # a scorer, or a prefix naming those under it
    agents = ["support-bot"]         # filters, each optional: agents, agent_versions,
    datasets = ["support-cases"]     # datasets, statuses ("ok", "error"), attributes
    attributes = { env = "prod" }    # (every key must match the run's attribute)
    sample = 0.1                     # judge 10% of the runs that pass the filters

    [[scorer]]
    name = "answer.reference"
    judge = "openai:gpt-4o"          # the judge model (LLM judges)
    options = { retries = 3 }        # the scorer's options (`agentdocket scorers` lists them)
    calls_per_minute = 60            # judge budget: runs past it wait, none are dropped
    usd_per_hour = 2.50              # and in money: what its calls cost, priced at their time
    concurrency = 4                  # judge calls in flight at once

    [export]                         # optional: send each new verdict as it is stored
    otlp = "http://tempo:4318"       # as gen_ai.evaluation.result log records (otlp extra)
    protocol = "http/protobuf"       # or "grpc" (then otlp = "host:port")
    headers = { authorization = "Bearer ..." }
    insecure = false                 # grpc without TLS
    timeout_seconds = 10             # how long one request may take
    batch = 500                      # records per request

A relative ``prices`` path is read from the config file's folder.

Sampling is deterministic by trace id: a run is in or out for every follower, every restart
and every scorer with the same rate (a 5% sample is inside the 10% one).
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentdocket.costs.overrides import Overrides, PriceFileError, read_prices
from agentdocket.errors import AgentdocketError
from agentdocket.store.arrivals import FinishedRun

FOLLOW_KEYS = {"name", "poll_seconds", "batch", "prices", "session_idle_seconds"}
SESSION_IDLE_S = 300.0  # a session quiet this long is judged by the session scorers
SCORER_KEYS = {
    "name",
    "version",
    "agents",
    "agent_versions",
    "datasets",
    "statuses",
    "attributes",
    "sample",
    "judge",
    "calls_per_minute",
    "usd_per_hour",
    "concurrency",
    "options",
}
LIST_KEYS = ("agents", "agent_versions", "datasets", "statuses")
EXPORT_KEYS = {"otlp", "protocol", "headers", "insecure", "timeout_seconds", "batch"}
EXPORT_PROTOCOLS = ("http/protobuf", "grpc")


class ConfigFileError(AgentdocketError, ValueError):
    """A scoring config that cannot be used; the message names the file and the place."""


def sample_point(trace_id: str) -> float:
    """Where a run falls in [0, 1): a digest of its trace id, the same everywhere."""
    return int(hashlib.sha256(trace_id.encode()).hexdigest()[:15], 16) / 16**15


@dataclass(frozen=True)
class Rule:
    """Which finished runs one scorer judges, and its judge budget."""

    name: str
    version: str | None = None
    agents: frozenset[str] | None = None
    agent_versions: frozenset[str] | None = None
    datasets: frozenset[str] | None = None
    statuses: frozenset[str] | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    sample: float = 1.0
    judge: str | None = None
    calls_per_minute: float | None = None
    usd_per_hour: float | None = None  # US dollars an hour the judge's calls may cost
    concurrency: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)  # the scorer's, typed

    def admits(self, run: FinishedRun) -> bool:
        """Whether ``run`` passes the filters and falls in the sample."""
        for allowed, value in (
            (self.agents, run.agent),
            (self.agent_versions, run.agent_version),
            (self.datasets, run.dataset),
            (self.statuses, run.status),
        ):
            if allowed is not None and value not in allowed:
                return False
        for key, wanted in self.attributes.items():
            if run.attributes.get(key) != wanted:
                return False
        return self.sample >= 1.0 or sample_point(run.trace_id) < self.sample

    def describe(self) -> dict[str, Any]:
        """The rule as plain data (for digests and JSON)."""
        out: dict[str, Any] = {"name": self.name, "version": self.version}
        for key in LIST_KEYS:
            value = getattr(self, key)
            out[key] = None if value is None else sorted(value)
        out.update(
            attributes=dict(sorted(self.attributes.items())),
            sample=self.sample,
            judge=self.judge,
        )
        if self.options:
            out["options"] = dict(sorted(self.options.items()))
        return out


@dataclass(frozen=True)
class ExportConfig:
    """Where a follower sends each new verdict (``[export]``)."""

    otlp: str
    protocol: str = "http/protobuf"
    headers: Mapping[str, str] = field(default_factory=dict)
    insecure: bool = False
    timeout_seconds: float = 10.0
    batch: int = 500


@dataclass(frozen=True)
class FollowConfig:
    """A follower's name, pace and rules (one per scorer name or prefix)."""

    rules: tuple[Rule, ...]
    name: str = "default"
    poll_seconds: float = 1.0
    batch: int = 500
    typed: bool = True  # the rules' options are typed values (TOML), else text (a command line)
    prices: Overrides | None = None  # a price file over genai-prices (judges' money budgets)
    session_idle_seconds: float = SESSION_IDLE_S
    export: ExportConfig | None = None  # where each new verdict is sent, if anywhere


def _where(path: str | None, place: str) -> str:
    return f"{path}: {place}" if path else place


def _strings(value: Any, where: str) -> frozenset[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigFileError(f"{where}: expected a string or a list of strings, got {value!r}")
    return frozenset(value)


def _number(value: Any, where: str, *, low: float, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigFileError(f"{where}: expected a number, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ConfigFileError(f"{where}: {value} is out of range (must be {bound})")
    return float(value)


def _rule(table: Any, where: str) -> Rule:
    if not isinstance(table, dict):
        raise ConfigFileError(f"{where}: expected a table")
    unknown = sorted(set(table) - SCORER_KEYS)
    if unknown:
        raise ConfigFileError(
            f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(SCORER_KEYS))})"
        )
    name = table.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigFileError(f"{where}: 'name' (the scorer) is required")
    version = table.get("version")
    if version is not None and not isinstance(version, str | int):
        raise ConfigFileError(f"{where}.version: expected a string, got {version!r}")
    lists = {k: _strings(table[k], f"{where}.{k}") for k in LIST_KEYS if k in table}
    attributes = table.get("attributes", {})
    if not isinstance(attributes, dict):
        raise ConfigFileError(f"{where}.attributes: expected a table, got {attributes!r}")
    judge = table.get("judge")
    if judge is not None and not isinstance(judge, str):
        raise ConfigFileError(f"{where}.judge: expected a model name, got {judge!r}")
    rate = table.get("calls_per_minute")
    money = table.get("usd_per_hour")
    concurrency = table.get("concurrency")
    options = table.get("options", {})
    if not isinstance(options, dict):
        raise ConfigFileError(f"{where}.options: expected a table, got {options!r}")
    return Rule(
        name=name,
        version=None if version is None else str(version),
        attributes=attributes,
        sample=_number(table.get("sample", 1.0), f"{where}.sample", low=0.0, high=1.0),
        judge=judge,
        calls_per_minute=None if rate is None else _positive(rate, f"{where}.calls_per_minute"),
        usd_per_hour=None if money is None else _positive(money, f"{where}.usd_per_hour"),
        concurrency=None
        if concurrency is None
        else int(_number(concurrency, f"{where}.concurrency", low=1)),
        options=options,
        **lists,
    )


def _positive(value: Any, where: str) -> float:
    """A rate that lets work through: a budget of 0 calls a minute (or $0 an hour) would hold
    the follower's runs back for ever."""
    rate = _number(value, where, low=0.0)
    if rate <= 0:
        raise ConfigFileError(f"{where}: {value} would judge nothing (must be more than 0)")
    return rate


def parse(data: Mapping[str, Any], path: str | None = None) -> FollowConfig:
    """A config from parsed TOML; ``path`` names the file in errors."""
    unknown = sorted(set(data) - {"follow", "scorer", "export"})
    if unknown:
        raise ConfigFileError(
            _where(path, f"unknown table {unknown[0]!r} (known: [follow], [[scorer]], [export])")
        )
    follow = data.get("follow", {})
    if not isinstance(follow, dict):
        raise ConfigFileError(_where(path, "[follow] must be a table"))
    bad = sorted(set(follow) - FOLLOW_KEYS)
    if bad:
        raise ConfigFileError(
            _where(
                path, f"follow: unknown key {bad[0]!r} (known: {', '.join(sorted(FOLLOW_KEYS))})"
            )
        )
    scorers = data.get("scorer", [])
    if not isinstance(scorers, list) or not scorers:
        raise ConfigFileError(_where(path, "no [[scorer]] tables: name at least one scorer"))
    rules = tuple(_rule(t, _where(path, f"scorer[{i}]")) for i, t in enumerate(scorers))
    name = follow.get("name", "default")
    if not isinstance(name, str) or not name.strip():
        raise ConfigFileError(_where(path, f"follow.name: expected a name, got {name!r}"))
    return FollowConfig(
        rules=rules,
        name=name,
        poll_seconds=_number(
            follow.get("poll_seconds", 1.0), _where(path, "follow.poll_seconds"), low=0.01
        ),
        batch=int(_number(follow.get("batch", 500), _where(path, "follow.batch"), low=1)),
        prices=_prices(follow.get("prices"), path),
        session_idle_seconds=_number(
            follow.get("session_idle_seconds", SESSION_IDLE_S),
            _where(path, "follow.session_idle_seconds"),
            low=0,
        ),
        export=None if "export" not in data else _export(data["export"], path),
    )


def _export(table: Any, path: str | None) -> ExportConfig:
    """The ``[export]`` table: an OTLP endpoint and how to reach it."""
    if not isinstance(table, dict):
        raise ConfigFileError(_where(path, "[export] must be a table"))
    bad = sorted(set(table) - EXPORT_KEYS)
    if bad:
        raise ConfigFileError(
            _where(
                path, f"export: unknown key {bad[0]!r} (known: {', '.join(sorted(EXPORT_KEYS))})"
            )
        )
    endpoint = table.get("otlp")
    if not isinstance(endpoint, str) or not endpoint.strip():
        raise ConfigFileError(_where(path, "export.otlp: the OTLP endpoint is required"))
    protocol = table.get("protocol", "http/protobuf")
    if protocol not in EXPORT_PROTOCOLS:
        raise ConfigFileError(
            _where(
                path,
                f"export.protocol: {protocol!r} (expected one of {', '.join(EXPORT_PROTOCOLS)})",
            )
        )
    headers = table.get("headers", {})
    if not isinstance(headers, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise ConfigFileError(
            _where(path, f"export.headers: expected a table of strings, got {headers!r}")
        )
    insecure = table.get("insecure", False)
    if not isinstance(insecure, bool):
        raise ConfigFileError(
            _where(path, f"export.insecure: expected true or false, got {insecure!r}")
        )
    timeout = _number(
        table.get("timeout_seconds", 10.0), _where(path, "export.timeout_seconds"), low=0.1
    )
    return ExportConfig(
        otlp=endpoint.strip(),
        protocol=protocol,
        headers={k.lower(): v for k, v in headers.items()},
        insecure=insecure,
        timeout_seconds=timeout,
        batch=int(_number(table.get("batch", 500), _where(path, "export.batch"), low=1)),
    )


def _prices(value: Any, path: str | None) -> Overrides | None:
    """The price file ``follow.prices`` names, read and checked now (relative to the config
    file's folder)."""
    if value is None:
        return None
    where = _where(path, "follow.prices")
    if not isinstance(value, str) or not value.strip():
        raise ConfigFileError(f"{where}: expected a file name, got {value!r}")
    file = Path(value)
    if path is not None and not file.is_absolute():
        file = Path(path).parent / file
    try:
        return read_prices(file)
    except PriceFileError as exc:
        raise ConfigFileError(f"{where}: {exc}") from None


def load(path: Path) -> FollowConfig:
    """Read and check a scoring config file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigFileError(f"{path}: cannot be read ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path}: not valid TOML ({exc})") from None
    return parse(data, str(path))


def from_options(
    names: Sequence[str],
    *,
    agents: Sequence[str] = (),
    datasets: Sequence[str] = (),
    judge: str | None = None,
    name: str = "default",
    options: Mapping[str, Any] | None = None,
) -> FollowConfig:
    """A config from command-line options: each scorer with the same filters and options
    (text, as a command line gives them)."""
    rules = []
    for given in names:
        scorer, sep, version = given.partition("=")
        rules.append(
            Rule(
                name=scorer,
                version=version if sep else None,
                agents=frozenset(agents) or None,
                datasets=frozenset(datasets) or None,
                judge=judge,
                options=dict(options or {}),
            )
        )
    return FollowConfig(rules=tuple(rules), name=name, typed=False)
