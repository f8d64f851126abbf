"""JSONL (and Parquet) interchange of runs: one run per line, with its steps, verdicts and case.

A line::

    {"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",            # optional (derived from the line)
     "run": {"agent": "sql-agent", "started_at": "2026-01-01T00:00:00Z",  # run.started fields
             "status": "ok", "ended_at": "2026-01-01T00:00:03Z", ...},
     "steps": [{"kind": "plan", "payload": {"steps": [{"tool": "sql"}]}}, ...],
     "verdicts": [{"payload": {"scorer": "...", ...}}],
     "case": {"dataset": "demo", "case_id": "q1", "expected_plan": ["sql"], ...}}

Every event object may also carry its envelope (``event_id``, ``span_id``, ``parent_span_id``,
``seq``, ``ts``, ``schema_version``); export always writes it, so export then import reproduces the
same events, runs and verdicts. Parsing is pure: a file is read and validated whole before anything
is written, and every problem is reported with its line number.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import orjson

from agentdocket.errors import AgentdocketError
from agentdocket.events import (
    PAYLOAD_TYPES,
    Case,
    Dataset,
    Event,
    PayloadError,
    RunFinished,
    RunStarted,
    check_span_id,
    check_trace_id,
    current_version,
    event_id_for,
    parse_ts,
    upcast,
    validate_payload,
)

ENVELOPE = ("event_id", "span_id", "parent_span_id", "seq", "ts", "schema_version")
RUN_FIELDS = tuple(f.name for f in fields(RunStarted))
RUN_EXTRA = (
    "answer",  # exported for people to read; the run's events say it already
    "span_id",
    "started_at",
    "started_seq",
    "started_event_id",
    "status",
    "error",
    "ended_at",
    "finished_seq",
    "finished_event_id",
)
CASE_EXTRA = ("dataset", "dataset_version")
LINE_NAMESPACE = uuid.UUID("a4f0b3c2-6d7e-5f81-9a2b-3c4d5e6f7a8b")
DEFAULT_DATASET_VERSION = "1"


class InterchangeError(AgentdocketError, ValueError):
    """A file that cannot be imported; the message names the line and the place."""


@dataclass(frozen=True)
class Parsed:
    events: list[Event]
    datasets: list[Dataset]
    runs: int
    # where each event came from: line number (or Parquet row) of its record
    lines: dict[uuid.UUID, int] = field(default_factory=dict)

    def where(self, event_id: str | None) -> str:
        """The line, and the event's kind and position in its run, of a stored event's id."""
        if event_id is None:
            return "an event"
        found = next((e for e in self.events if str(e.event_id) == event_id), None)
        if found is None:
            return f"event {event_id}"
        line = self.lines.get(found.event_id)
        return f"line {line}: {found.kind} event (seq {found.seq})"


def _span_for(trace_id: str, label: str) -> str:
    digest = hashlib.sha256(f"{trace_id}/{label}".encode()).hexdigest()[:16]
    return digest if digest != "0" * 16 else "1" * 16


def _opt_int(obj: Mapping[str, Any], key: str, path: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PayloadError(f"{path}.{key}", f"expected a non-negative integer, got {value!r}")
    return value


def _opt_uuid(obj: Mapping[str, Any], key: str, path: str) -> uuid.UUID | None:
    value = obj.get(key)
    if value is None:
        return None
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise PayloadError(f"{path}.{key}", f"{value!r} is not a UUID") from None


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise PayloadError(path, f"expected an object, got {type(value).__name__}")
    return value


def _event(
    kind: str,
    payload: Mapping[str, Any],
    env: Mapping[str, Any],
    path: str,
    *,
    trace_id: str,
    default_span: str,
    default_parent: str | None,
    default_seq: int,
    default_ts: Any,
    index: int,
) -> Event:
    span_id = check_span_id(env.get("span_id", default_span), f"{path}.span_id")
    parent = env.get("parent_span_id", default_parent)
    if parent is not None:
        check_span_id(parent, f"{path}.parent_span_id")
    seq = _opt_int(env, "seq", path)
    version = _opt_int(env, "schema_version", path) or current_version(kind)
    ts = parse_ts(env["ts"], f"{path}.ts") if env.get("ts") is not None else default_ts
    # Validate the payload at its own version (upcast first, as on read), store it as given.
    validate_payload(kind, upcast(kind, version, payload), f"{path}.payload")
    given_id = _opt_uuid(env, "event_id", path)
    return Event(
        event_id=given_id or event_id_for(trace_id, span_id, kind, index),
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        seq=default_seq if seq is None else seq,
        ts=ts,
        kind=kind,
        payload=dict(payload),
        schema_version=version,
    )


@dataclass(frozen=True)
class _Line:
    """What every event of one line takes from it: the place to name, the trace, the run's
    span and its start."""

    where: str
    trace_id: str
    root: str
    started_at: Any


def parse_line(obj: Any, lineno: int) -> tuple[list[Event], tuple[str, str, Case] | None]:
    """The events (and optional case) of one line. Raises PayloadError naming the place."""
    where = f"line {lineno}"
    obj = _object(obj, where)
    unknown = sorted(set(obj) - {"trace_id", "run", "steps", "verdicts", "case"})
    if unknown:
        raise PayloadError(
            where,
            f"unknown key(s) {', '.join(unknown)}; allowed: trace_id, run, steps, verdicts, case",
        )
    if "run" not in obj:
        raise PayloadError(where, "missing required key 'run'")
    run = _object(obj["run"], f"{where}.run")
    line = _line(obj, run, where)
    events = [_started(run, line)]
    last_seq = events[0].seq
    for section in ("steps", "verdicts"):
        items, last_seq = _section(obj, section, line, last_seq)
        events += items
    if run.get("status") is not None or run.get("ended_at") is not None:
        events.append(_finished(run, line, last_seq, events[-1].ts if len(events) > 1 else None))
    case = _case(obj["case"], run, where) if obj.get("case") is not None else None
    return events, case


def _line(obj: Mapping[str, Any], run: Mapping[str, Any], where: str) -> _Line:
    trace_id = obj.get("trace_id")
    if trace_id is None:
        canonical = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
        trace_id = uuid.uuid5(LINE_NAMESPACE, canonical.decode()).hex
    check_trace_id(trace_id, f"{where}.trace_id")
    unknown = sorted(set(run) - set(RUN_FIELDS) - set(RUN_EXTRA))
    if unknown:
        raise PayloadError(f"{where}.run", f"unknown field(s) {', '.join(unknown)}")
    if run.get("started_at") is None:
        raise PayloadError(f"{where}.run", "missing required field 'started_at'")
    started_at = parse_ts(run["started_at"], f"{where}.run.started_at")
    root = check_span_id(run.get("span_id", _span_for(trace_id, "run")), f"{where}.run.span_id")
    return _Line(where, trace_id, root, started_at)


def _started(run: Mapping[str, Any], line: _Line) -> Event:
    env = {
        "span_id": line.root,
        "ts": run["started_at"],
        "seq": run.get("started_seq", 0),
        "event_id": run.get("started_event_id"),
    }
    return _event(
        RunStarted.KIND,
        {k: run[k] for k in RUN_FIELDS if k in run},
        env,
        f"{line.where}.run",
        trace_id=line.trace_id,
        default_span=line.root,
        default_parent=None,
        default_seq=0,
        default_ts=line.started_at,
        index=0,
    )


def _section(
    obj: Mapping[str, Any], section: str, line: _Line, last_seq: int
) -> tuple[list[Event], int]:
    """The events of ``steps`` or ``verdicts``, and the highest step ``seq`` so far: a step
    without one comes after the last, a verdict without one takes 0."""
    items = obj.get(section) or []
    if not isinstance(items, list):
        raise PayloadError(f"{line.where}.{section}", "expected an array")
    counters: dict[tuple[str, str], int] = {}
    events: list[Event] = []
    for i, item in enumerate(items):
        path = f"{line.where}.{section}[{i}]"
        item = _object(item, path)
        kind = _kind(item, section, path)
        payload = _object(item.get("payload", {}), f"{path}.payload")
        default_span = _span_for(line.trace_id, f"{section}/{i}")
        span = str(item.get("span_id", default_span))
        index = counters.get((span, kind), 0)
        counters[(span, kind)] = index + 1
        event = _event(
            kind,
            payload,
            item,
            path,
            trace_id=line.trace_id,
            default_span=default_span,
            default_parent=line.root,
            default_seq=0 if section == "verdicts" else last_seq + 1,
            default_ts=line.started_at,
            index=index,
        )
        if section == "steps":
            last_seq = max(last_seq, event.seq)
        events.append(event)
    return events, last_seq


def _kind(item: Mapping[str, Any], section: str, path: str) -> str:
    kind = item.get("kind", "verdict" if section == "verdicts" else None)
    if section == "verdicts" and kind != "verdict":
        raise PayloadError(f"{path}.kind", f"a verdict has kind 'verdict', not {kind!r}")
    if (
        kind not in PAYLOAD_TYPES
        or kind in ("run.started", "run.finished")
        or (section == "steps" and kind == "verdict")
    ):
        raise PayloadError(f"{path}.kind", f"{kind!r} is not a step kind")
    unknown = sorted(set(item) - {"kind", "payload", *ENVELOPE})
    if unknown:
        raise PayloadError(path, f"unknown key(s) {', '.join(unknown)}")
    return str(kind)


def _finished(run: Mapping[str, Any], line: _Line, last_seq: int, last_ts: Any) -> Event:
    env = {
        "span_id": line.root,
        "seq": run.get("finished_seq", last_seq + 1),
        "ts": run.get("ended_at"),
        "event_id": run.get("finished_event_id"),
    }
    return _event(
        RunFinished.KIND,
        {"status": run.get("status", "ok"), "error": run.get("error")},
        env,
        f"{line.where}.run",
        trace_id=line.trace_id,
        default_span=line.root,
        default_parent=None,
        default_seq=last_seq + 1,
        default_ts=line.started_at if last_ts is None else last_ts,
        index=0,
    )


def _case(value: Any, run: Mapping[str, Any], where: str) -> tuple[str, str, Case]:
    data = dict(_object(value, f"{where}.case"))
    dataset = data.pop("dataset", None) or run.get("dataset")
    version = (
        data.pop("dataset_version", None) or run.get("dataset_version") or DEFAULT_DATASET_VERSION
    )
    if not dataset:
        raise PayloadError(f"{where}.case", "missing 'dataset' (in the case or the run)")
    if "case_id" not in data and run.get("case_id"):
        data["case_id"] = run["case_id"]
    return str(dataset), str(version), Case.from_json(data, f"{where}.case")


def iter_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, decoded JSON) for each non-blank line; bad JSON names its line."""
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                yield lineno, orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise InterchangeError(f"{path}: line {lineno}: not valid JSON ({exc})") from None


def parse_records(records: Iterable[tuple[int, Any]], source: str) -> Parsed:
    """Validate every record; collect events and datasets. Nothing is written here."""
    events: list[Event] = []
    lines: dict[uuid.UUID, int] = {}
    cases: dict[tuple[str, str], dict[str, tuple[Case, int]]] = {}
    runs = 0
    for lineno, obj in records:
        try:
            line_events, case = parse_line(obj, lineno)
        except (PayloadError, ValueError) as exc:
            raise InterchangeError(f"{source}: {exc}") from None
        events.extend(line_events)
        for event in line_events:
            lines[event.event_id] = lineno
        runs += 1
        if case is not None:
            dataset, version, c = case
            known = cases.setdefault((dataset, version), {})
            if c.case_id in known and known[c.case_id][0] != c:
                raise InterchangeError(
                    f"{source}: line {lineno}: case {c.case_id!r} of dataset {dataset!r} differs "
                    f"from the one given on line {known[c.case_id][1]}"
                )
            known.setdefault(c.case_id, (c, lineno))
    datasets = [
        Dataset(name, version, tuple(c for c, _ in by_id.values()))
        for (name, version), by_id in cases.items()
    ]
    return Parsed(events, datasets, runs, lines)


def read_file(path: Path) -> Parsed:
    """Parse a JSONL or Parquet export file."""
    if not path.exists():
        raise InterchangeError(f"{path}: no such file")
    if path.suffix == ".parquet":
        return parse_records(_parquet_records(path), str(path))
    return parse_records(iter_lines(path), str(path))


def _parquet_records(path: Path) -> Iterator[tuple[int, Any]]:
    import polars as pl

    frame = pl.read_parquet(path, columns=["trace_id", "run", "steps", "verdicts", "case"])
    for i, row in enumerate(frame.iter_rows(named=True), start=1):
        record: dict[str, Any] = {"trace_id": row["trace_id"]}
        for key in ("run", "steps", "verdicts", "case"):
            if row[key] is not None:
                record[key] = orjson.loads(row[key])
        yield i, record
