"""Digests of the rule scorers' verdicts, computed without a database, for the test that holds
them unchanged (tests/unit/test_scorer_verdicts_unchanged.py).

Each scorer judges the traces as the runner would (in batches of 2000, sharing outcomes within a
batch, each trace holding only the kinds the scorer reads, with its case); every verdict event
it would append, whole except its time, is hashed in trace order (a trace with nothing to judge
as ``-``, one the scorer raised on as the exception). Regenerate the recorded digests with

    python -m tests.helpers.verdict_digests
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from itertools import groupby
from pathlib import Path

import orjson

from agentdocket import scorers
from agentdocket.events import Case, Event, Trace
from agentdocket.scorers import Outcome, Scorer, shared_outcomes
from agentdocket.scorers.runner import verdict_event

RULE_SCORERS = (
    "planner.suffix_match",
    "tools.slot_fill",
    "tools.procedural",
    "interaction.metrics",
)
BATCH = 2000
TS = datetime(2026, 1, 1, tzinfo=UTC)
SHARED = Path(__file__).resolve().parents[2].parent / "shared"
IBM = SHARED / "datasets" / "ibm-coalitions"


def words_similarity(pairs: Sequence[tuple[str, str]]) -> list[float]:
    """A deterministic stand-in for the embedding model: the words two texts share (Jaccard)."""
    out = []
    for a, b in pairs:
        wa, wb = set(a.lower().split()), set(b.lower().split())
        out.append(len(wa & wb) / len(wa | wb) if wa | wb else 1.0)
    return out


def chosen(similarity: object = None) -> list[Scorer]:
    """The registered rule scorers, with ``similarity`` instead of the model where given."""
    found = []
    for name in RULE_SCORERS:
        scorer = scorers.get(name)
        if similarity is not None and "similarity" in scorer.config:
            config = {**scorer.config, "similarity": similarity}
            scorer = dataclasses.replace(scorer, config=config)
        found.append(scorer)
    return found


def _judged(scorer: Scorer, traces: list[Trace]) -> list[Outcome | Exception | None]:
    """Outcomes as the runner gets them: the batch, else trace by trace with the errors."""
    try:
        with shared_outcomes():
            return list(scorer.outcomes(traces))
    except Exception:
        pass
    out: list[Outcome | Exception | None] = []
    for trace in traces:
        try:
            with shared_outcomes():
                out.append(scorer.outcomes([trace])[0])
        except Exception as exc:
            out.append(exc)
    return out


def update(digest: hashlib._Hash, scorer: Scorer, traces: list[Trace]) -> None:
    """Hash the verdict events ``scorer`` gives ``traces`` into ``digest``."""
    hashes = [scorer.input_hash(t) for t in traces]
    for trace, input_hash, outcome in zip(traces, hashes, _judged(scorer, traces), strict=True):
        if outcome is None:
            digest.update(b"-\n")
            continue
        if isinstance(outcome, Exception):
            digest.update(f"{type(outcome).__name__}: {outcome}\n".encode())
            continue
        event = verdict_event(scorer.to_verdict(trace, outcome, input_hash), TS)
        whole = (
            str(event.event_id),
            event.trace_id,
            event.span_id,
            event.parent_span_id,
            event.seq,
            event.kind,
            event.schema_version,
            event.payload,
        )
        digest.update(orjson.dumps(whole) + b"\n")


def runs(events: Iterable[Event]) -> Iterator[tuple[str, list[Event]]]:
    """The events grouped by trace (each trace's events given together), in order."""
    for trace_id, group in groupby(events, key=lambda e: e.trace_id):
        yield trace_id, list(group)


def digests(
    runs_with_cases: Iterable[tuple[str, list[Event], Case | None]], chosen: list[Scorer]
) -> dict[str, str]:
    """Each scorer's digest over the runs, scored in batches."""
    found = {s.name: hashlib.sha256() for s in chosen}
    batch: list[tuple[str, list[Event], Case | None]] = []

    def flush() -> None:
        for scorer in chosen:
            kinds = scorer.event_kinds
            traces = [
                Trace.partial(tid, [e for e in events if e.kind in kinds], case)
                for tid, events, case in batch
            ]
            update(found[scorer.name], scorer, traces)
        batch.clear()

    for item in runs_with_cases:
        batch.append(item)
        if len(batch) == BATCH:
            flush()
    flush()
    return {name: h.hexdigest() for name, h in found.items()}


def _case_of(events: list[Event], cases: dict[str, Case]) -> Case | None:
    for e in events:
        if e.kind == "run.started" and e.payload.get("case_id"):
            return cases.get(e.payload["case_id"])
    return None


def synthetic(n: int) -> dict[str, str]:
    """Digests over ``n`` traces of bench/scoring.py's generator."""
    from bench.scoring import cases, traces

    known = cases(300)
    by_id = {c.case_id: c for c in known}
    items = ((tid, ev, _case_of(ev, by_id)) for tid, ev in runs(traces(n, known)))
    return digests(items, chosen())


def ibm() -> dict[str, str]:
    """Digests over every model's runs of the IBM coalitions study (../shared), each folder
    imported as its own dataset, the semantic comparison by :func:`words_similarity`."""
    from agentdocket.importers import ibm_coalitions, ibm_fine_tuned

    loaded = []
    for folder in sorted((IBM / "single-models").iterdir()):
        data, events, _ = ibm_coalitions.load(
            folder / "corrected_result.json", f"ibm-{folder.name}", folder.name
        )
        loaded.append((data, events))
    expected = IBM / "fine-tuned" / "expected_final_responses.json"
    for folder in sorted(p for p in (IBM / "fine-tuned").iterdir() if p.is_dir()):
        data, events, _ = ibm_fine_tuned.load(
            folder / "api_data_0_11.json", expected, f"ibm-{folder.name}", folder.name
        )
        loaded.append((data, events))

    def items() -> Iterator[tuple[str, list[Event], Case | None]]:
        for data, events in loaded:
            by_id = {c.case_id: c for c in data.cases}
            ordered = sorted(events, key=lambda e: e.trace_id)
            for tid, ev in runs(ordered):
                yield tid, ev, _case_of(ev, by_id)

    return digests(items(), chosen(words_similarity))


def main() -> None:
    for n in (5000, 100_000):
        print(f"synthetic ({n} traces):")
        for name, value in synthetic(n).items():
            print(f'    "{name}": "{value}",')
    print("ibm:")
    for name, value in ibm().items():
        print(f'    "{name}": "{value}",')


if __name__ == "__main__":
    # run as a module of its package, so that words_similarity's name (in the input hashes of
    # the IBM verdicts) is the one the test sees
    from tests.helpers import verdict_digests

    verdict_digests.main()
