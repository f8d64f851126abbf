"""Rubrics: what a person is asked about a run, and which answers count.

A rubric has a name, a version, the question put to the annotator and a kind:

- ``pass_fail``: true or false (given as true/false, pass/fail, up/down or yes/no);
- ``categorical``: one of its ``labels`` (``ordered = true`` when they are ranked);
- ``scale``: a whole number from ``low`` to ``high`` (1 to 5 unless given);
- ``text``: free text.

Rubrics are declared in a TOML file, one ``[[rubric]]`` table each, and registered like
datasets: immutable per (name, version). ``thumbs`` (pass_fail, version 1) is built in, for an
application's thumbs-up and thumbs-down.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import asdict, dataclass
from typing import Any, Literal

from agentdocket.errors import AgentdocketError

RubricKind = Literal["pass_fail", "categorical", "scale", "text"]
RUBRIC_KINDS: tuple[RubricKind, ...] = ("pass_fail", "categorical", "scale", "text")
TRUE_WORDS = frozenset({"true", "pass", "up", "yes"})
FALSE_WORDS = frozenset({"false", "fail", "down", "no"})
MAX_TEXT = 10_000
Answer = bool | int | str


class RubricError(AgentdocketError, ValueError):
    """A rubric, or an answer to one, that cannot be taken: the message names the place."""


@dataclass(frozen=True)
class Rubric:
    name: str
    question: str
    kind: RubricKind
    version: str = "1"
    labels: tuple[str, ...] = ()
    ordered: bool = False
    low: int = 1
    high: int = 5

    def __post_init__(self) -> None:
        where = f"rubric {self.name!r}"
        if not self.name or not isinstance(self.name, str):
            raise RubricError("a rubric needs a name")
        if self.kind not in RUBRIC_KINDS:
            raise RubricError(f"{where}: kind must be one of {', '.join(RUBRIC_KINDS)}")
        if not self.question:
            raise RubricError(f"{where}: question is missing")
        if self.kind == "categorical":
            if len(self.labels) < 2 or len(set(self.labels)) != len(self.labels):
                raise RubricError(f"{where}: labels must be two or more distinct names")
        elif self.labels:
            raise RubricError(f"{where}: labels are for a categorical rubric only")
        if self.kind == "scale" and not self.low < self.high:
            raise RubricError(f"{where}: low ({self.low}) must be below high ({self.high})")

    @property
    def is_ordinal(self) -> bool:
        return self.kind == "scale" or (self.kind == "categorical" and self.ordered)

    def order(self) -> tuple[Answer, ...]:
        """The answers in their order (empty for free text)."""
        if self.kind == "pass_fail":
            return (False, True)
        if self.kind == "categorical":
            return self.labels
        if self.kind == "scale":
            return tuple(range(self.low, self.high + 1))
        return ()

    def choices(self) -> list[tuple[str, Answer]]:
        """(caption, answer) of each answer offered to an annotator, in the order shown."""
        if self.kind == "pass_fail":
            return [("pass", True), ("fail", False)]
        return [(str(a), a) for a in self.order()]

    def check(self, value: object, where: str = "value") -> Answer:
        """The answer ``value`` gives under this rubric, or :class:`RubricError` naming
        ``where`` and what this rubric takes."""
        if self.kind == "pass_fail":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.strip().lower() in TRUE_WORDS | FALSE_WORDS:
                return value.strip().lower() in TRUE_WORDS
            raise RubricError(
                f"{where}: rubric {self.name!r} takes true or false (pass/fail, up/down, "
                f"yes/no), not {value!r}"
            )
        if self.kind == "categorical":
            if isinstance(value, str) and value in self.labels:
                return value
            raise RubricError(
                f"{where}: rubric {self.name!r} takes one of {', '.join(self.labels)}, "
                f"not {value!r}"
            )
        if self.kind == "scale":
            number = _whole(value)
            if number is None or not self.low <= number <= self.high:
                raise RubricError(
                    f"{where}: rubric {self.name!r} takes a whole number from {self.low} to "
                    f"{self.high}, not {value!r}"
                )
            return number
        if not isinstance(value, str) or not value.strip():
            raise RubricError(f"{where}: rubric {self.name!r} takes a non-empty text")
        if len(value) > MAX_TEXT:
            raise RubricError(f"{where}: over {MAX_TEXT} characters")
        return value

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["labels"] = list(self.labels)
        return out

    def content_hash(self) -> str:
        body = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(body.encode()).hexdigest()

    @classmethod
    def from_json(cls, obj: object, where: str = "rubric") -> Rubric:
        if not isinstance(obj, dict):
            raise RubricError(f"{where}: a rubric is a table of name, question, kind, ...")
        unknown = sorted(
            set(obj) - {"name", "version", "question", "kind", "labels", "ordered", "low", "high"}
        )
        if unknown:
            raise RubricError(f"{where}: unknown field {unknown[0]!r}")
        for name, kind in (("name", str), ("question", str), ("kind", str), ("version", str)):
            if name in obj and not isinstance(obj[name], kind):
                raise RubricError(f"{where}.{name}: must be a text")
        for name in ("low", "high"):
            if name in obj and (isinstance(obj[name], bool) or not isinstance(obj[name], int)):
                raise RubricError(f"{where}.{name}: must be a whole number")
        labels = obj.get("labels", [])
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            raise RubricError(f"{where}.labels: must be a list of texts")
        if not isinstance(obj.get("ordered", False), bool):
            raise RubricError(f"{where}.ordered: must be true or false")
        try:
            return cls(
                name=obj.get("name", ""),
                version=obj.get("version", "1"),
                question=obj.get("question", ""),
                kind=obj.get("kind", ""),  # checked in __post_init__
                labels=tuple(labels),
                ordered=obj.get("ordered", False),
                low=obj.get("low", 1),
                high=obj.get("high", 5),
            )
        except RubricError as exc:
            raise RubricError(f"{where}: {exc}") from None


def _whole(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def parse_rubrics(text: str, where: str = "rubrics") -> list[Rubric]:
    """The rubrics of a TOML file's ``[[rubric]]`` tables; errors name the file and table."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RubricError(f"{where}: {exc}") from None
    tables = doc.get("rubric")
    extra = sorted(set(doc) - {"rubric"})
    if extra:
        raise RubricError(f"{where}: unknown table {extra[0]!r} (rubrics are [[rubric]] tables)")
    if not isinstance(tables, list) or not tables:
        raise RubricError(f"{where}: no [[rubric]] table")
    rubrics = [Rubric.from_json(t, f"{where}: [[rubric]] #{i + 1}") for i, t in enumerate(tables)]
    seen: set[tuple[str, str]] = set()
    for i, r in enumerate(rubrics):
        if (r.name, r.version) in seen:
            raise RubricError(
                f"{where}: [[rubric]] #{i + 1}: {r.name!r} version {r.version!r} twice"
            )
        seen.add((r.name, r.version))
    return rubrics


THUMBS = Rubric(
    name="thumbs",
    version="1",
    question="Was this answer good? (an application's thumbs-up or thumbs-down)",
    kind="pass_fail",
)
BUILT_IN = {THUMBS.name: THUMBS}
