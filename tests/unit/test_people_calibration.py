"""Judges measured against people: the annotators' majority as the truth, and the bootstrap
intervals of precision and recall checked by simulation to cover at their stated 95%."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from agentdocket.people.majority import majority
from agentdocket.scorers.calibration import calibrate
from agentdocket.store.labels import StoredLabel
from tests.helpers.panel import population

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def _label(trace: str, author: str, value: object, minute: int, **kw: object) -> StoredLabel:
    return StoredLabel(
        label_id=f"{trace}-{author}-{minute}",
        trace_id=trace,
        span_id=kw.get("span_id"),  # type: ignore[arg-type]
        rubric="helpful",
        rubric_version="1",
        author=author,
        source="queue",
        value=value,
        comment=None,
        queue="q",
        skipped=kw.get("skipped"),  # type: ignore[arg-type]
        ts=T0 + timedelta(minutes=minute),
        event_id=f"e{minute:04d}{author}",
    )


def test_the_majority_counts_each_annotators_latest_label_and_leaves_ties_out() -> None:
    labels = [
        _label("r1", "ana", False, 1),
        _label("r1", "ana", True, 5),  # supersedes her first
        _label("r1", "ben", True, 2),
        _label("r1", "cy", False, 3),
        _label("r2", "ana", True, 1),
        _label("r2", "ben", False, 2),  # a tie: no majority
        _label("r3", "ana", None, 1, skipped="unclear"),  # a skip counts for nothing
        _label("r3", "ben", False, 2),
        _label("r4", "ana", False, 1, span_id="a" * 16),  # about one step, not the run
    ]
    found = majority(labels)
    assert found.decided == {"r1": True, "r3": False}
    assert found.ties == ("r2",)
    assert (found.labels, found.annotators) == (6, 3)


def _panel(
    rng: np.random.Generator,
    n: int,
    prevalence: float,
    errors: list[float],
    sens: float,
    spec: float,
) -> list[tuple[bool, bool]]:
    truth = rng.random(n) < prevalence
    votes = np.array([np.where(rng.random(n) < e, ~truth, truth) for e in errors])
    majority_says = votes.sum(axis=0) * 2 > len(errors)
    judge = np.where(truth, rng.random(n) < sens, rng.random(n) >= spec)
    return list(zip(judge.tolist(), majority_says.tolist(), strict=True))


@pytest.mark.parametrize("n", [150, 400])
def test_precision_and_recall_intervals_cover_at_95_percent(n: int) -> None:
    setting = {"prevalence": 0.6, "errors": [0.05, 0.1, 0.2], "sens": 0.85, "spec": 0.7}
    precision, recall = population(**setting)  # type: ignore[arg-type]
    rng = np.random.default_rng(2026)
    reps = 1000
    covered = {"precision": 0, "recall": 0}
    for rep in range(reps):
        result = calibrate(_panel(rng, n, **setting), samples=500, seed=rep)  # type: ignore[arg-type]
        for name, true in (("precision", precision), ("recall", recall)):
            interval = result.intervals[name]
            assert interval is not None
            covered[name] += interval[0] <= true <= interval[1]
    shares = {k: v / reps for k, v in covered.items()}
    print(f"n={n}: coverage {shares}")
    # 1000 replications: a share of 0.95 lands in [0.936, 0.964] 95% of the time
    assert all(0.93 <= share <= 0.97 for share in shares.values()), shares
