"""The annotators' majority on a pass/fail rubric: what ``calibrate --against people:RUBRIC``
takes as the truth.

Each annotator's latest label on a run counts once (a later label supersedes an earlier one;
skips count for nothing). A run whose labels split evenly has no majority: it is left out and
counted as a tie, never broken by a coin.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from agentdocket.store.labels import StoredLabel, latest


@dataclass(frozen=True)
class Majority:
    decided: dict[str, bool]  # run -> the majority's pass (True) or fail (False)
    ties: tuple[str, ...]  # runs whose labels split evenly
    labels: int  # labels counted (each annotator's latest per run)
    annotators: int


def majority(labels: Iterable[StoredLabel]) -> Majority:
    """The majority per run of pass/fail labels (whole-run labels only: a label about one
    step is not a label of the run)."""
    votes: dict[str, list[bool]] = defaultdict(list)
    authors: set[str] = set()
    counted = 0
    for label in latest(labels):
        if label.span_id is not None or not isinstance(label.value, bool):
            continue
        votes[label.trace_id].append(label.value)
        authors.add(label.author)
        counted += 1
    decided: dict[str, bool] = {}
    ties: list[str] = []
    for trace_id, given in sorted(votes.items()):
        yes = sum(given)
        if 2 * yes == len(given):
            ties.append(trace_id)
        else:
            decided[trace_id] = 2 * yes > len(given)
    return Majority(decided, tuple(ties), counted, len(authors))
