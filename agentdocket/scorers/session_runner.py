"""The session runner: reads stored sessions in batches, runs session scorers over their
conversations, appends verdicts.

A session verdict is kept on the session's last turn (its subject trace), under a hash of
every turn's inputs: re-scoring the same session adds nothing, and a late turn makes a new last
turn and a new input, judged again while the verdict on the old last turn stays in the log.
Verdicts are written as the batch runner writes them (one transaction per batch, judge calls
with them), so an interrupted run resumes with the sessions it had not committed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

from agentdocket.events import Conversation, Event
from agentdocket.events.model import now
from agentdocket.scorers.base import Outcome, Scorer, shared_outcomes
from agentdocket.scorers.judges.client import JudgeSession, judging
from agentdocket.scorers.runner import (
    Progress,
    Result,
    Tally,
    input_kinds,
    isolated,
    verdict_event,
)
from agentdocket.store import Store

BATCH = 200  # sessions read and judged at once


def session_scorers(chosen: Sequence[Scorer]) -> tuple[list[Scorer], list[Scorer]]:
    """``chosen`` split into (run and group scorers, session scorers)."""
    return [s for s in chosen if s.scope != "session"], [s for s in chosen if s.scope == "session"]


def conversations(
    store: Store,
    session_ids: Sequence[str],
    kinds: frozenset[str] | None,
    cases: dict[Any, Any] | None = None,
) -> list[Conversation]:
    """The sessions among ``session_ids`` as conversations (turns holding the events of
    ``kinds``), in the order given; the case is the first turn's that has one."""
    turns = store.sessions.turn_ids(session_ids)
    ids = [tid for sid in session_ids for tid in turns.get(sid, [])]
    traces = {t.trace_id: t for t in store.scoring.traces(ids, kinds, cases)}
    found = []
    for sid in session_ids:
        mine = tuple(traces[t] for t in turns.get(sid, []) if t in traces)
        if mine:
            case = next((t.case for t in mine if t.case is not None), None)
            found.append(Conversation(sid, mine, case))
    return found


def score_conversations(
    store: Store,
    chosen: Sequence[Scorer],
    batch: Sequence[Conversation],
    *,
    judge_concurrency: int | None = None,
    on_scored: Callable[[int], None] | None = None,
) -> Result:
    """Judge one batch of conversations with each session scorer and append the new verdicts
    (one transaction, with the judge calls made). A scorer that raises on the batch is tried
    session by session, so only the sessions that fail lose their verdict."""
    result = Result(runs=len(batch))
    events: list[Event] = []
    ts = now()
    last = [c.last.trace_id for c in batch]
    session = JudgeSession(store.scoring.judge_replies, concurrency_cap=judge_concurrency)
    with shared_outcomes(), judging(session):
        for scorer in chosen:
            tally = result.tallies.setdefault(
                (scorer.name, scorer.version), Tally(scorer.name, scorer.version)
            )
            stored = store.scoring.verdict_keys(scorer.name, scorer.version, last)
            todo = [
                (c, digest)
                for c in batch
                if (c.last.trace_id, digest := scorer.conversation_hash(c)) not in stored
            ]
            tally.kept += len(batch) - len(todo)
            if on_scored is not None and len(batch) > len(todo):
                on_scored(len(batch) - len(todo))
            for (c, digest), outcome in _outcomes(scorer, todo, tally, result.errors):
                if on_scored is not None:
                    on_scored(1)
                if outcome is None:
                    tally.nothing += 1
                    continue
                verdict = scorer.to_verdict(c.last, outcome, digest)
                events.append(verdict_event(verdict, ts))
                result.judged.append(c.last.trace_id)
                tally.added += 1
    events += session.events
    result.judge_calls = session.calls_made
    result.judge_cache_hits = session.cache_hits
    result.judge_call_events = list(session.events)
    if events:
        store.append(events)
    return result


def _outcomes(
    scorer: Scorer, todo: list[tuple[Conversation, str]], tally: Tally, errors: list[str]
) -> Iterator[tuple[tuple[Conversation, str], Outcome | None]]:
    judge = scorer.conversations
    assert judge is not None
    return isolated(
        f"{scorer.name}@{scorer.version}",
        todo,
        lambda found: judge(found, scorer.config),
        lambda c: f"session {c.session_id}",
        tally,
        errors,
    )


def score_sessions(
    store: Store,
    chosen: Sequence[Scorer],
    *,
    dataset: str | None = None,
    agent: str | None = None,
    session_ids: Sequence[str] | None = None,
    active_from: datetime | None = None,
    batch_size: int = BATCH,
    progress: Progress | None = None,
    judge_concurrency: int | None = None,
    refresh_dashboards: bool = True,
) -> Result:
    """Run session scorers over the stored sessions (of ``dataset`` and ``agent``, active
    since ``active_from``, or the given ``session_ids``) and append their verdicts.
    ``progress(done, total)`` counts sessions."""
    started = time.perf_counter()
    if not chosen or any(s.scope != "session" for s in chosen):
        raise ValueError("score_sessions takes session scorers (scope 'session') only")
    ids = (
        list(session_ids)
        if session_ids is not None
        else store.sessions.ids(dataset=dataset, agent=agent, active_from=active_from)
    )
    result = Result()
    for scorer in chosen:
        result.tallies[(scorer.name, scorer.version)] = Tally(scorer.name, scorer.version)
    kinds = input_kinds(chosen)
    cases: dict[Any, Any] = {}
    done = pairs = 0
    if progress is not None:
        progress(0, len(ids))

    def scored(n: int) -> None:
        nonlocal pairs
        pairs += n
        if progress is not None:
            progress(min(len(ids), pairs // len(chosen)), len(ids))

    for start in range(0, len(ids), batch_size):
        batch = conversations(store, ids[start : start + batch_size], kinds, cases)
        part = score_conversations(
            store, chosen, batch, judge_concurrency=judge_concurrency, on_scored=scored
        )
        result.merge(part)
        result.judged += part.judged
        done = min(len(ids), start + batch_size)
        pairs = done * len(chosen)
        if progress is not None:
            progress(done, len(ids))
    if refresh_dashboards:
        result.dashboards = store.projections.refresh_dashboards()
    result.seconds = time.perf_counter() - started
    return result
