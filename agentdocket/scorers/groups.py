"""Group scope: scorers that judge each run among the runs of its case's semantic group
(``Scorer.scope == "group"``). The runner batches whole groups and extends each run's input hash
with its group's; a run whose case has no group is a group of its own."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from agentdocket.events import Trace


def solo(trace_id: str) -> str:
    """The group of a run whose case names none: itself."""
    return f"(run {trace_id})"


def group_of(trace: Trace) -> str:
    group = trace.case.group if trace.case is not None else None
    return group if group is not None else solo(trace.trace_id)


def group_digests(traces: Sequence[Trace], digests: Mapping[str, str]) -> dict[str, str]:
    """Each run's hash extended with its group's: a change anywhere in a group re-judges all
    of its runs (their verdicts depend on each other)."""
    groups: dict[str, list[str]] = {}
    for t in traces:
        groups.setdefault(group_of(t), []).append(digests[t.trace_id])
    whole = {g: hashlib.sha256("".join(sorted(d)).encode()).hexdigest() for g, d in groups.items()}
    return {
        t.trace_id: hashlib.sha256((digests[t.trace_id] + whole[group_of(t)]).encode()).hexdigest()
        for t in traces
    }


def group_batches(groups: Mapping[str, str], ids: Sequence[str], size: int) -> list[list[str]]:
    """Batches of about ``size`` runs that never split a group; ``groups`` maps a run to its
    case's group (runs not in it are groups of their own)."""
    members: dict[str, list[str]] = {}
    for tid in ids:
        members.setdefault(groups.get(tid) or solo(tid), []).append(tid)
    batches: list[list[str]] = [[]]
    for group in sorted(members):
        if batches[-1] and len(batches[-1]) + len(members[group]) > size:
            batches.append([])
        batches[-1].extend(members[group])
    return [b for b in batches if b]
