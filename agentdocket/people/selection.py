"""Which runs an annotation queue holds: a selection, resolved once when the queue is made.

Filters combine (a run must pass each one given): runs of a dataset, of an agent, failing a
scorer, where two scorers disagree, or listed by trace id; ``sample`` then keeps that many of
them, chosen deterministically. The runs are handed out in an order drawn from a digest of the
queue's name and each trace id: the same selection gives the same queue, and runs of one agent
or one day are not handed out all together.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from agentdocket.errors import AgentdocketError
from agentdocket.scorers.calibration import decision
from agentdocket.scorers.report import ReportError, choose_versions
from agentdocket.store import Store
from agentdocket.store.scoring_reads import ReportVerdict


class SelectionError(AgentdocketError, ValueError):
    """A selection that names something not stored; the message says which option."""


@dataclass(frozen=True)
class Selection:
    dataset: str | None = None
    agent: str | None = None
    failing: str | None = None  # a scorer: NAME[=VERSION]
    disagree: tuple[str, str] | None = None  # two scorers, each NAME[=VERSION]
    traces: tuple[str, ...] = ()
    sample: int | None = None

    def to_json(self) -> dict[str, object]:
        return {k: v for k, v in asdict(self).items() if v not in (None, ())}


def decisions(store: Store, given: str, dataset: str | None, option: str) -> dict[str, bool]:
    """Each run's pass/fail by the latest verdict of scorer ``given`` (NAME[=VERSION]); runs
    it decides neither way are left out (:func:`undecided` names them)."""
    found: dict[str, bool] = {}
    for v in _latest(store, given, dataset, option):
        d = decision(v.passed, v.label)
        if d is not None:
            found[v.trace_id] = d
    return found


def undecided(store: Store, given: str, dataset: str | None, option: str) -> dict[str, str]:
    """The runs scorer ``given`` judged without deciding either way, and why: the verdict's
    failure type (``judge:unparseable``, ...), else ``no decision``."""
    return {
        v.trace_id: v.failure_type or "no decision"
        for v in _latest(store, given, dataset, option)
        if decision(v.passed, v.label) is None
    }


def _latest(store: Store, given: str, dataset: str | None, option: str) -> list[ReportVerdict]:
    name, _, version = given.partition("=")
    stored = store.scoring.scorer_versions(dataset)
    if name not in stored:
        raise SelectionError(f"{option}: no verdicts of {name!r} stored")
    try:
        chosen = choose_versions({name: stored[name]}, [given] if version else [])
    except ReportError as exc:
        raise SelectionError(f"{option}: {exc}") from None
    return list(store.scoring.report_verdicts(chosen, dataset))


def _order(queue: str, trace_id: str) -> str:
    return hashlib.sha256(f"{queue}/{trace_id}".encode()).hexdigest()


def select(store: Store, queue: str, selection: Selection) -> list[str]:
    """The runs of ``selection``, in the order the queue hands them out."""
    runs = store.scoring.report_runs(selection.dataset)
    ids = {r.trace_id for r in runs if selection.agent is None or r.agent == selection.agent}
    if selection.traces:
        listed = set(selection.traces)
        missing = sorted(listed - {r.trace_id for r in runs})
        if missing:
            raise SelectionError(f"--trace: no run {missing[0]} stored")
        ids &= listed
    if selection.failing is not None:
        judged = decisions(store, selection.failing, selection.dataset, "--failing")
        ids = {t for t in ids if judged.get(t) is False}
    if selection.disagree is not None:
        a, b = selection.disagree
        left = decisions(store, a, selection.dataset, "--disagree")
        right = decisions(store, b, selection.dataset, "--disagree")
        ids = {t for t in ids if t in left and t in right and left[t] != right[t]}
    ordered = sorted(ids, key=lambda t: _order(queue, t))
    return ordered if selection.sample is None else ordered[: selection.sample]


def parse_pair(value: str | None) -> tuple[str, str] | None:
    if value is None:
        return None
    a, sep, b = value.partition(",")
    if not sep or not a or not b:
        raise SelectionError(f"--disagree {value!r}: give two scorers as A,B")
    return (a, b)


def read_trace_list(lines: Sequence[str]) -> tuple[str, ...]:
    """Trace ids, one a line (blank lines and # comments left out)."""
    return tuple(x.split("#")[0].strip() for x in lines if x.split("#")[0].strip())
