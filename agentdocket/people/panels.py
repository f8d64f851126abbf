"""A queue's labels as panels for :mod:`agentdocket.people.agreement`: per rubric, item ->
annotator -> the annotator's latest answer given in that queue (skips and superseded labels
left out, as everywhere)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from agentdocket.events.rubrics import Rubric
from agentdocket.people.agreement import Agreement, agreement
from agentdocket.store.labels import StoredLabel, latest


def panel(labels: Iterable[StoredLabel], rubric: str) -> dict[str, dict[str, Hashable]]:
    """item -> annotator -> answer, of whole-run labels under ``rubric``."""
    out: dict[str, dict[str, Hashable]] = defaultdict(dict)
    for label in latest(labels):
        if label.rubric == rubric and label.span_id is None and label.value is not None:
            out[label.trace_id][label.author] = label.value
    return dict(out)


@dataclass(frozen=True)
class RubricAgreement:
    rubric: Rubric
    labels: int
    result: Agreement


def measure(
    labels: list[StoredLabel], rubrics: Iterable[Rubric], *, samples: int, seed: int
) -> list[RubricAgreement]:
    """The agreement under each rubric that has answers to compare (free text has none)."""
    out = []
    for rubric in rubrics:
        if rubric.kind == "text":
            continue
        items = panel(labels, rubric.name)
        result = agreement(
            items,
            kind="ordinal" if rubric.is_ordinal else "nominal",
            order=list(rubric.order()) if rubric.is_ordinal else None,
            samples=samples,
            seed=seed,
        )
        out.append(RubricAgreement(rubric, sum(len(v) for v in items.values()), result))
    return out
