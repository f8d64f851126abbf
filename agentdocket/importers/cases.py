"""Case files: a team's own cases, in YAML or JSON Lines (``agentdocket schemas case`` prints
the JSON Schema of one case).

YAML holds a list of cases, or a mapping with ``description`` and ``cases``; JSON Lines one
case per line (``.json``: a list, or the same mapping). A case needs a ``case_id`` unique in
the file; every other field is optional::

    - case_id: paris
      question: What is the weather in Paris?
      expected_plan: [get_weather]
      expected_calls:
        - tool: get_weather
          arguments: {city: Paris}
      reference_answer: It is 18 C in Paris.

Anything wrong stops the whole file, named by file, line, case and field; nothing is stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

from agentdocket.events import Case, Dataset, PayloadError
from agentdocket.importers.common import SourceFormatError


class CaseFileError(SourceFormatError):
    """A case file that cannot be read as cases: the message names where and why."""


def _yaml_items(path: Path, text: str) -> tuple[list[tuple[int, Any]], str | None]:
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise CaseFileError(f"{where}: not valid YAML: {problem}") from None
    description = None
    if isinstance(data, dict):
        description = data.get("description")
        data = data.get("cases")
        node = next((v for k, v in node.value if k.value == "cases"), None) if node else None
    if not isinstance(data, list) or node is None:
        raise CaseFileError(f"{path}: expected a list of cases (or a mapping with 'cases')")
    lines = [item.start_mark.line + 1 for item in node.value]
    return list(zip(lines, data, strict=True)), description


def _jsonl_items(path: Path, text: str) -> list[tuple[int, Any]]:
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((n, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise CaseFileError(f"{path}:{n}:{exc.colno}: not valid JSON: {exc.msg}") from None
    return out


def _json_items(path: Path, text: str) -> tuple[list[tuple[int, Any]], str | None]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CaseFileError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    description = None
    if isinstance(data, dict):
        description, data = data.get("description"), data.get("cases")
    if not isinstance(data, list):
        raise CaseFileError(f"{path}: expected a list of cases (or a mapping with 'cases')")
    return [(0, item) for item in data], description


def read_cases(path: Path) -> tuple[list[Case], str | None]:
    """The cases of a YAML, JSON Lines or JSON file, and its description if it has one."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseFileError(f"{path}: cannot read it ({exc})") from None
    suffix = path.suffix.lower()
    description: str | None = None
    if suffix in (".yaml", ".yml"):
        items, description = _yaml_items(path, text)
    elif suffix == ".jsonl":
        items = _jsonl_items(path, text)
    elif suffix == ".json":
        items, description = _json_items(path, text)
    else:
        raise CaseFileError(f"{path}: a case file is .yaml, .yml, .jsonl or .json")
    if not items:
        raise CaseFileError(f"{path}: no cases")
    return _cases(path, items), None if description is None else str(description)


def _cases(path: Path, items: Iterable[tuple[int, Any]]) -> list[Case]:
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for i, (line, data) in enumerate(items):
        where = f"{path}:{line}" if line else f"{path}: case [{i}]"
        if not isinstance(data, dict):
            raise CaseFileError(f"{where}: a case is a mapping, not {type(data).__name__}")
        case_id = data.get("case_id")
        if not isinstance(case_id, str) or not case_id.strip():
            raise CaseFileError(f"{where}: case [{i}] has no case_id (a non-empty string)")
        label = f"{where}: case {case_id!r}"
        if case_id in seen:
            raise CaseFileError(f"{label}: duplicate case_id (first at {seen[case_id]})")
        seen[case_id] = where
        for k, call in enumerate(data.get("expected_calls") or []):
            if isinstance(call, dict) and not isinstance(call.get("arguments", {}), dict):
                got = type(call["arguments"]).__name__
                raise CaseFileError(
                    f"{label}: expected_calls[{k}].arguments: an object of named arguments, "
                    f"not {got}"
                )
        try:
            cases.append(Case.from_json(data, path="case"))
        except PayloadError as exc:
            raise CaseFileError(f"{label}: {exc}") from None
    return cases


def load(path: Path, name: str, version: str | None = None) -> Dataset:
    """The dataset ``name`` of a case file; its version is ``version``, else the first 12 hex
    digits of its content's hash (the same content, the same version)."""
    cases, description = read_cases(path)
    draft = Dataset(name, "", tuple(cases), description)
    return Dataset(name, version or draft.content_hash()[:12], draft.cases, description)


def dump(dataset: Dataset, fmt: str) -> str:
    """A dataset as a case file (``yaml`` or ``jsonl``) that :func:`read_cases` reads back."""
    cases = [c.to_json() for c in dataset.cases]
    if fmt == "jsonl":
        return "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases)
    body: dict[str, Any] = {"cases": cases}
    if dataset.description:
        body = {"description": dataset.description, **body}
    return str(yaml.safe_dump(body, sort_keys=False, allow_unicode=True))
