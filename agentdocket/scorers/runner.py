"""The batch runner: reads stored runs in batches, runs scorers over them, appends verdicts.

Idempotent and resumable: a verdict event's id derives from (run, scorer, version, input hash),
and before scoring a batch the runner asks the store which of those verdicts exist, so running
the same scorer version again scores and adds nothing, a crashed run resumes with the batches
it had not committed (each batch's verdicts are one transaction), and a run whose inputs changed
(a late event, a new dataset version) is judged again. A new scorer version adds its own
verdicts next to the old ones.

With ``workers > 1`` batches are scored in forked worker processes, each with its own store
connection; the embedding model is then loaded once per worker.
"""

from __future__ import annotations

import dataclasses
import hashlib
import multiprocessing
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import orjson

from agentdocket.events import Event, Trace, Verdict
from agentdocket.events.model import check_trace_id, now, utc
from agentdocket.scorers.base import Outcome, Scorer, shared_outcomes
from agentdocket.scorers.batch_io import frozen_heap, prefetched, written_behind
from agentdocket.scorers.embeddings import EmbeddingsUnavailable
from agentdocket.scorers.groups import group_batches, group_digests, group_of
from agentdocket.scorers.judges.client import JudgeSession, JudgeUnavailable, judging
from agentdocket.store import Store, open_store
from agentdocket.store.upkeep import Refreshed

# Verdict events sit after every step of their run in trace order (seq, then time).
VERDICT_SEQ = 2**31 - 1
VERDICT_FIELDS = tuple(f.name for f in dataclasses.fields(Verdict))
MAX_ERRORS_KEPT = 20
Progress = Callable[[int, int], None]
T = TypeVar("T")


@dataclass
class Tally:
    """What one scorer version did over a scoring run."""

    scorer: str
    version: str
    added: int = 0  # new verdicts appended
    kept: int = 0  # verdicts already stored for the same inputs: nothing to do
    nothing: int = 0  # runs the scorer had nothing to judge in (no case, no expected plan)
    errors: int = 0  # runs on which the scorer raised (no verdict written)

    def merge(self, other: Tally) -> None:
        self.added += other.added
        self.kept += other.kept
        self.nothing += other.nothing
        self.errors += other.errors


@dataclass
class Result:
    """The outcome of :func:`score_runs`."""

    runs: int = 0
    tallies: dict[tuple[str, str], Tally] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # the first few, "scorer@v on trace: ..."
    seconds: float = 0.0
    judge_calls: int = 0  # model calls made by judges (cached ones excluded)
    judge_cache_hits: int = 0  # judge questions answered from the judge_calls cache
    dashboards: Refreshed | None = None  # the rollup refresh after scoring (PostgreSQL)
    # the runs of one batch that got a new verdict (not carried by merge: batches forget them)
    judged: list[str] = field(default_factory=list)
    # the llm.called events of the judge calls one batch made (cached answers excluded), as
    # appended: what they cost (a follower's money budget). Not carried by merge either.
    judge_call_events: list[Event] = field(default_factory=list)

    def merge(self, other: Result) -> None:
        self.runs += other.runs
        self.judge_calls += other.judge_calls
        self.judge_cache_hits += other.judge_cache_hits
        for key, tally in other.tallies.items():
            self.tallies.setdefault(key, Tally(*key)).merge(tally)
        self.errors.extend(other.errors[: MAX_ERRORS_KEPT - len(self.errors)])

    @property
    def error_count(self) -> int:
        return sum(t.errors for t in self.tallies.values())


def verdict_span(verdict: Verdict) -> str:
    """The span id of a verdict event: a digest of scorer, version and input hash, so that
    the event id (trace, span, kind) is the same whenever the same verdict is given again."""
    key = f"{verdict.scorer}/{verdict.scorer_version}/{verdict.input_hash}".encode()
    span = hashlib.sha256(key).hexdigest()[:16]
    return span if span != "0" * 16 else "1" * 16


def verdict_event(verdict: Verdict, ts: datetime | None = None) -> Event:
    """The event carrying ``verdict``, in the trace of the run it judges.

    The payload is built field by field from the typed ``Verdict`` (whose own checks ran when
    it was made); only ``details``, the one free-form part, is checked here, by serialising
    it. (The generic ``Event.create`` validates every value recursively: 2-3x slower.)
    """
    try:
        orjson.dumps(verdict.details)
    except TypeError as exc:
        raise ValueError(
            f"verdict of {verdict.scorer}@{verdict.scorer_version} on "
            f"{verdict.subject_trace_id}: details are not JSON ({exc})"
        ) from None
    payload = {name: getattr(verdict, name) for name in VERDICT_FIELDS}
    return Event.assemble(
        trace_id=check_trace_id(verdict.subject_trace_id, "subject_trace_id"),
        span_id=verdict_span(verdict),
        parent_span_id=None,
        seq=VERDICT_SEQ,
        ts=utc(ts) if ts is not None else now(),
        kind=Verdict.KIND,
        payload=payload,
    )


def input_kinds(chosen: Sequence[Scorer]) -> frozenset[str] | None:
    """The event kinds these scorers read (None: one of them reads everything)."""
    kinds: set[str] = set()
    for scorer in chosen:
        if not scorer.inputs:
            return None
        kinds |= scorer.event_kinds
    return frozenset(kinds)


def score_batch(
    store: Store,
    chosen: Sequence[Scorer],
    traces: Sequence[Trace],
    *,
    judge_concurrency: int | None = None,
    on_scored: Callable[[int], None] | None = None,
    write: Callable[[list[Event]], object] | None = None,
) -> Result:
    """Score one batch of traces with each scorer and append the new verdicts (one transaction).
    ``judge_concurrency`` caps the judge calls in flight at once; ``on_scored(n)`` is told of
    every ``n`` (run, scorer) pairs done, as they are done (a progress bar's per-run steps).
    ``write`` appends the verdict events (default: ``store.append``, before returning).

    Raises :class:`EmbeddingsUnavailable` (nothing of the batch is written); any other
    exception of a scorer is counted against that run and the batch carries on.
    """
    result = Result(runs=len(traces))
    events: list[Event] = []
    ids = [t.trace_id for t in traces]
    ts = now()
    session = JudgeSession(store.scoring.judge_replies, concurrency_cap=judge_concurrency)
    with shared_outcomes(), judging(session):
        for scorer in chosen:
            tally = result.tallies.setdefault(
                (scorer.name, scorer.version), Tally(scorer.name, scorer.version)
            )
            stored = store.scoring.verdict_keys(scorer.name, scorer.version, ids)
            digests = {t.trace_id: scorer.input_hash(t) for t in traces}
            if scorer.scope == "group":
                digests = group_digests(traces, digests)
            todo: list[tuple[Trace, str]] = []
            for trace in traces:
                digest = digests[trace.trace_id]
                if (trace.trace_id, digest) in stored:
                    tally.kept += 1
                else:
                    todo.append((trace, digest))
            if on_scored is not None and len(traces) > len(todo):
                on_scored(len(traces) - len(todo))
            judged = (
                _group_outcomes(scorer, todo, traces, tally, result.errors)
                if scorer.scope == "group"
                else _outcomes(scorer, todo, tally, result.errors)
            )
            for (trace, digest), outcome in judged:
                if on_scored is not None:
                    on_scored(1)
                if outcome is None:
                    tally.nothing += 1
                    continue
                events.append(verdict_event(scorer.to_verdict(trace, outcome, digest), ts))
                result.judged.append(trace.trace_id)
                tally.added += 1
    events += session.events  # the judge calls, in the same transaction as their verdicts
    result.judge_calls = session.calls_made
    result.judge_cache_hits = session.cache_hits
    result.judge_call_events = list(session.events)
    if events:
        (write or store.append)(events)
    return result


def _group_outcomes(
    scorer: Scorer,
    todo: list[tuple[Trace, str]],
    traces: Sequence[Trace],
    tally: Tally,
    errors: list[str],
) -> Iterator[tuple[tuple[Trace, str], Any]]:
    """A group scorer sees every run of each group that has a run to judge; a failure costs
    the whole batch's verdicts of that scorer (a run alone is not its group)."""
    if not todo:
        return
    wanted = {group_of(t) for t, _ in todo}
    seen = [t for t in traces if group_of(t) in wanted]
    try:
        found = dict(zip((t.trace_id for t in seen), scorer.outcomes(seen), strict=True))
    except (EmbeddingsUnavailable, JudgeUnavailable):
        raise
    except Exception as exc:
        tally.errors += len(todo)
        if len(errors) < MAX_ERRORS_KEPT:
            errors.append(
                f"{scorer.name}@{scorer.version} on {len(wanted)} groups: "
                f"{type(exc).__name__}: {exc}"
            )
        return
    for item in todo:
        yield item, found[item[0].trace_id]


def _outcomes(
    scorer: Scorer, todo: list[tuple[Trace, str]], tally: Tally, errors: list[str]
) -> Iterator[tuple[tuple[Trace, str], Any]]:
    """Each trace with its outcome (see :func:`isolated`)."""
    label = f"{scorer.name}@{scorer.version}"
    return isolated(label, todo, scorer.outcomes, lambda t: t.trace_id, tally, errors)


def isolated(
    label: str,
    todo: list[tuple[T, str]],
    judge: Callable[[list[T]], Sequence[Outcome | None]],
    name: Callable[[T], str],
    tally: Tally,
    errors: list[str],
) -> Iterator[tuple[tuple[T, str], Outcome | None]]:
    """Each item of ``todo`` (with its input hash) and its outcome; a batch that raises is
    judged again item by item so that only the items that fail lose their verdict (counted,
    and the first few errors kept). A model or a judge that is unavailable stops it all."""
    if not todo:
        return
    try:
        yield from zip(todo, judge([t for t, _ in todo]), strict=True)
        return
    except (EmbeddingsUnavailable, JudgeUnavailable):
        raise
    except Exception:
        pass
    for item in todo:
        try:
            outcome = judge([item[0]])[0]
        except (EmbeddingsUnavailable, JudgeUnavailable):
            raise
        except Exception as exc:
            tally.errors += 1
            if len(errors) < MAX_ERRORS_KEPT:
                errors.append(f"{label} on {name(item[0])}: {type(exc).__name__}: {exc}")
            continue
        yield item, outcome


def score_runs(
    store: Store,
    chosen: Sequence[Scorer],
    *,
    dataset: str | None = None,
    since: datetime | None = None,
    trace_ids: Sequence[str] | None = None,
    batch_size: int = 2000,
    workers: int = 1,
    progress: Progress | None = None,
    refresh_dashboards: bool = True,
) -> Result:
    """Run ``chosen`` scorers over the stored runs (of ``dataset``, started since ``since``, or
    the given ``trace_ids``) and append their verdicts. ``progress(done, total)`` is called as
    runs are scored (per run with one worker, per batch with several). Then the dashboards'
    rollups are refreshed (PostgreSQL), unless ``refresh_dashboards`` is false."""
    started = time.perf_counter()
    if not chosen:
        raise ValueError("no scorers chosen")
    ids = (
        list(trace_ids)
        if trace_ids is not None
        else store.reader.trace_ids(dataset=dataset, since=since)
    )
    result = Result()
    for scorer in chosen:
        result.tallies[(scorer.name, scorer.version)] = Tally(scorer.name, scorer.version)
    if any(s.scope == "group" for s in chosen):
        batches = group_batches(store.scoring.trace_groups(ids), ids, batch_size)
        ids = [tid for batch in batches for tid in batch]
    else:
        batches = [ids[i : i + batch_size] for i in range(0, len(ids), batch_size)]
    if progress is not None:
        progress(0, len(ids))
    if workers <= 1 or len(batches) <= 1:
        kinds = input_kinds(chosen)
        done = 0
        pairs = 0  # (run, scorer) pairs scored so far: the bar moves run by run

        def scored(n: int) -> None:
            nonlocal pairs
            pairs += n
            if progress is not None:
                progress(min(len(ids), pairs // len(chosen)), len(ids))

        with frozen_heap(), written_behind(store, len(batches) > 1) as write:
            for chunk in prefetched(store, kinds, batches):
                result.merge(score_batch(store, chosen, chunk, on_scored=scored, write=write))
                done += len(chunk)
                pairs = done * len(chosen)
                if progress is not None:
                    progress(done, len(ids))
    else:
        _in_workers(store.url, chosen, batches, workers, result, progress, len(ids))
    # The new verdicts' hours are stale in the dashboards' rollups: read live until refreshed.
    if refresh_dashboards:
        result.dashboards = store.projections.refresh_dashboards()
    result.seconds = time.perf_counter() - started
    return result


# --- worker processes -------------------------------------------------------------------------

_worker: dict[str, Any] = {}


def _start_worker(url: str, chosen: list[Scorer]) -> None:
    _worker["store"] = open_store(url)
    _worker["scorers"] = chosen
    _worker["kinds"] = input_kinds(_worker["scorers"])
    _worker["cases"] = {}


def _work(ids: list[str]) -> Result:
    store: Store = _worker["store"]
    traces = store.scoring.traces(ids, _worker["kinds"], _worker["cases"])
    result = score_batch(store, _worker["scorers"], traces)
    result.judge_call_events = []  # merge does not carry them: not sent back either
    return result


def _in_workers(
    url: str,
    chosen: Sequence[Scorer],
    batches: list[list[str]],
    workers: int,
    result: Result,
    progress: Progress | None,
    total: int,
) -> None:
    # The scorers themselves go to the workers, configured as they are (options, a judge's
    # model object): forked, the workers inherit them whole, nothing is looked up again.
    context = multiprocessing.get_context("fork")
    done = 0
    with ProcessPoolExecutor(workers, context, _start_worker, (url, list(chosen))) as pool:
        pending: set[Future[Result]] = set()
        queue = iter(batches)
        for chunk in queue:
            pending.add(pool.submit(_work, chunk))
            if len(pending) >= 2 * workers:
                break
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                part = future.result()
                result.merge(part)
                done += part.runs
                if progress is not None:
                    progress(done, total)
                nxt = next(queue, None)
                if nxt is not None:
                    pending.add(pool.submit(_work, nxt))
