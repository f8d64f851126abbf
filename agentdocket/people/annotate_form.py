"""The annotation page's forms, read: the fields of a posted form and the labels they give.
Pure functions (the page, :mod:`agentdocket.people.annotate`, stores what they return)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from urllib.parse import parse_qsl

from agentdocket.events import Label
from agentdocket.events.labels import MAX_ID
from agentdocket.events.rubrics import MAX_TEXT, Answer, Rubric, RubricError

MAX_FIELDS = 200
MAX_REASON = 1000
HEX32 = re.compile(r"[0-9a-f]{32}")  # a form's nonce, a trace id


def parse_form(body: bytes) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body's fields: the first value of a name sent
    twice, line ends as ``\\n``, bytes that are no UTF-8 replaced. More than
    :data:`MAX_FIELDS` fields: :class:`ValueError`."""
    text = body.decode("utf-8", errors="replace")
    fields: dict[str, str] = {}
    for name, value in parse_qsl(text, keep_blank_values=True, max_num_fields=MAX_FIELDS):
        fields.setdefault(name, value.replace("\r\n", "\n"))
    return fields


def read_answers(
    rubrics: Sequence[Rubric], form: Mapping[str, str]
) -> tuple[list[Answer], list[str]]:
    """Each rubric's answer (field ``answer-N``, the rubric's place in the queue), checked by
    the rubric; else what is wrong, one line naming each rubric wrongly answered."""
    answers: list[Answer] = []
    problems: list[str] = []
    for i, rubric in enumerate(rubrics):
        raw = form.get(f"answer-{i}", "")
        if not raw.strip():
            verb = "write" if rubric.kind == "text" else "choose"
            problems.append(f"rubric {rubric.name!r}: {verb} an answer")
            continue
        try:
            answers.append(rubric.check(raw, f"answer {i + 1}"))
        except RubricError as exc:
            problems.append(str(exc))
    return answers, problems


def label_id(nonce: str, rubric: str) -> str:
    """The id of the label a form (its nonce) gives under ``rubric``."""
    given = f"{nonce}/{rubric}"
    if len(given) <= MAX_ID:
        return given
    return f"{nonce}/{hashlib.sha256(rubric.encode()).hexdigest()}"


def labels_from(
    form: Mapping[str, str], *, queue: str, annotator: str, trace_id: str, rubrics: Sequence[Rubric]
) -> tuple[list[Label], list[str]]:
    """The labels a posted form gives (one per rubric: its answer, or the skip with its
    reason), else the problems to show the annotator."""
    nonce = form.get("nonce", "")
    if not HEX32.fullmatch(nonce):
        return [], ["This form is not one the page gave: send it again."]
    action = form.get("action")

    def label(rubric: Rubric, value: Answer | None, **more: str | None) -> Label:
        return Label(
            label_id=label_id(nonce, rubric.name),
            subject_trace_id=trace_id,
            rubric=rubric.name,
            rubric_version=rubric.version,
            author=annotator,
            source="queue",
            queue=queue,
            value=value,
            **more,
        )

    if action == "skip":
        reason = form.get("reason", "").strip()
        if not reason:
            return [], ["Say why you skip this item (the box under “Skip”, key s)."]
        if len(reason) > MAX_REASON:
            return [], [f"The reason to skip is over {MAX_REASON} characters."]
        return [label(r, None, skipped=reason) for r in rubrics], []
    if action != "label":
        return [], ["This form is not one the page gave: send it again."]
    answers, problems = read_answers(rubrics, form)
    comment = form.get("comment", "").strip() or None
    if comment is not None and len(comment) > MAX_TEXT:
        problems.append(f"The comment is over {MAX_TEXT} characters.")
    if problems:
        return [], problems
    return [label(r, a, comment=comment) for r, a in zip(rubrics, answers, strict=True)], []
