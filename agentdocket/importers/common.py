"""What the importers share: building a run's events from a raw record, reading source files,
the rule for file names a source gives, and the error a source that is not in its format
raises."""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import yaml  # type: ignore[import-untyped]

from agentdocket.errors import AgentdocketError
from agentdocket.events import Event, ToolCalled, ToolReturned


class SourceFormatError(AgentdocketError, ValueError):
    """A source file is not in its format; the message names the file and the place. Each
    importer raises its own subclass."""


# The name of an environment variable a case or the user may add to an eval_code process.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def inside(
    folder: Path, name: str, where: str, error: type[AgentdocketError] = SourceFormatError
) -> Path:
    """Where the file ``name`` (a relative name, as a source gives it) is in ``folder``,
    resolved; or ``error`` naming ``where``, the name and why when it reaches outside
    ``folder``: it is absolute, its ``..`` lead out, it is or passes through a symlink leading
    out, or it names ``folder`` itself. Every file a source names is read (or written) through
    this one rule."""
    if not name or "\0" in name:
        raise error(f"{where}: {name!r} is not a file name")
    if Path(name).is_absolute():
        raise error(f"{where}: {name!r} is absolute; names are relative to {folder}")
    try:
        base = folder.resolve()
        target = (base / name).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise error(f"{where}: {name!r} cannot be resolved in {folder} ({exc})") from None
    if target == base:
        raise error(f"{where}: {name!r} names the folder {folder} itself, not a file in it")
    if base in target.parents:
        return target
    lexical = Path(os.path.normpath(base / name))
    how = "through '..'" if base not in lexical.parents else f"through a symlink, to {target}"
    raise error(f"{where}: {name!r} leads out of {folder} ({how})")


class RunBuilder:
    """The events of one imported run, in order: one root span, a child span per tool call,
    timestamps a millisecond apart from ``t0`` (imported runs keep their order, not their
    wall-clock times, which the sources do not record)."""

    def __init__(self, trace_id: str, t0: datetime) -> None:
        self.trace_id = trace_id
        self.root = trace_id[:16]
        self.t0 = t0
        self.events: list[Event] = []
        self._calls = 0

    def add(self, payload: Any, span: str | None = None) -> None:
        span = span or self.root
        self.events.append(
            Event.create(
                trace_id=self.trace_id,
                span_id=span,
                parent_span_id=None if span == self.root else self.root,
                seq=len(self.events),
                ts=self.t0 + timedelta(milliseconds=len(self.events)),
                payload=payload,
            )
        )

    def call(self, tool: str, arguments: Any, result: Any = None) -> None:
        """A tool call and its return. Arguments that are neither an object nor a string are
        kept as their JSON text."""
        self._calls += 1
        span = f"{self._calls:016x}"
        if not isinstance(arguments, dict | str):
            arguments = {} if arguments is None else orjson.dumps(arguments).decode()
        self.add(ToolCalled(call_id=span, tool=tool, arguments=arguments), span)
        self.add(ToolReturned(call_id=span, tool=tool, result=result), span)


def read_json(path: Path, error: type[SourceFormatError]) -> Any:
    """A JSON file's content, or ``error`` naming the file, the problem and its place: the
    byte offset, line and column."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise error(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise error(f"{path}: {decode_problem(raw, exc)}") from None


def decode_problem(raw: bytes, exc: orjson.JSONDecodeError) -> str:
    """Why ``raw`` is not JSON, and where, in bytes (orjson counts characters, and reports a
    byte that is not UTF-8 at the start of the text)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        at = bad.start
        return (
            f"not UTF-8 at byte {at:,} ({_line_column(raw, at)}): byte 0x{raw[at]:02x}, "
            f"{bad.reason}"
        )
    at = len(text[: exc.pos].encode("utf-8"))
    return f"not JSON at byte {at:,} ({_line_column(raw, at)}): {exc.msg}"


def _line_column(raw: bytes, at: int) -> str:
    line_start = raw.rfind(b"\n", 0, at) + 1
    line = raw.count(b"\n", 0, at) + 1
    return f"line {line}, column {at - line_start + 1}"


def read_json_list(path: Path, what: str, error: type[SourceFormatError]) -> list[Any]:
    """A file holding a JSON list (of ``what``), or ``error`` naming the file and the problem."""
    data = read_json(path, error)
    if not isinstance(data, list):
        raise error(f"{path}: expected a list of {what}")
    return data


def read_yaml_mapping(path: Path, what: str, error: type[SourceFormatError]) -> dict[Any, Any]:
    """A YAML (or JSON) file holding a mapping (``what``), or ``error`` naming the file and the
    problem."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise error(f"{path}: cannot read it as YAML or JSON ({exc})") from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected {what}")
    return data
