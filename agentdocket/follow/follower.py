"""The follower: scores runs as they finish, exactly once, resuming where it stopped.

Each round reads the events stored after the follower's position (in arrival order, see
:mod:`agentdocket.store.following`), takes the finished runs they touched, and judges them with
every scorer whose rule admits them, through the batch runner's :func:`score_batch` (so a run
whose inputs did not change adds nothing, and one whose inputs changed, by a late event or a
newly registered case, is judged again under its new input hash).

Exactly once, with several followers of the same name (two ``serve --score``, or one and a
``score --follow``):

- a verdict's event id derives from (run, scorer, version, input hash), so the log holds it
  once however often it is given;
- before judging, a follower claims its runs (PostgreSQL advisory locks); a run another
  follower holds is put off to a later round, when its verdict is found stored;
- the cursor saved after a round stops before the first event of any run put off (by a claim
  or by a judge's budget), so a follower killed at any point resumes with every run it had not
  finished. A run judged twice across a crash is stored once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import orjson

from agentdocket import scorers as registry
from agentdocket.events import Trace
from agentdocket.follow.config import ConfigFileError, FollowConfig, Rule
from agentdocket.scorers.base import Scorer
from agentdocket.scorers.embeddings import EmbeddingsUnavailable
from agentdocket.scorers.judges.client import JudgeUnavailable
from agentdocket.scorers.runner import input_kinds, score_batch
from agentdocket.store import Store, StoreError, StoreUnavailable
from agentdocket.store.following import Arrival, Position

log = logging.getLogger("agentdocket.follow")

LAG_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
EVENTS_PER_RUN = 40  # events read per round: this many per run of the batch
BACKLOG_EVERY_S = 5.0  # how often the events behind the cursor are counted
MAX_BACKOFF_S = 30.0
# A dataset version is looked for this long before the last one seen (or the cursor's last
# save, at start): a registration that committed late is still found.
DATASET_MARGIN = timedelta(seconds=60)


@dataclass
class Followed:
    """One scorer following, with its rule and judge budget."""

    scorer: Scorer
    rule: Rule
    budget: Budget | None = None

    @property
    def label(self) -> str:
        return f"{self.scorer.name}@{self.scorer.version}"


class Budget:
    """A judge's calls per minute: a bucket refilled continuously, holding one minute's calls.
    A round judges as many runs as the bucket pays for at the calls per run seen so far; the
    rest wait for a later round (deferred, never dropped)."""

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.clock = clock
        self.tokens = per_minute
        self.at = clock()
        self.calls_per_run = 1.0

    def _refill(self) -> None:
        now = self.clock()
        self.tokens = min(self.per_minute, self.tokens + (now - self.at) * self.per_minute / 60)
        self.at = now

    def allow(self, runs: int) -> int:
        """How many of ``runs`` may be judged now."""
        self._refill()
        return min(runs, int(self.tokens / max(self.calls_per_run, 1e-9)))

    def spend(self, calls: int, runs: int) -> None:
        """Account ``calls`` made for ``runs`` runs (cached answers cost nothing)."""
        self.tokens -= calls
        if runs:
            self.calls_per_run = 0.8 * self.calls_per_run + 0.2 * max(calls / runs, 0.1)


@dataclass
class Stats:
    """What a follower did since it started (read by its metrics)."""

    rounds: int = 0
    failures: int = 0  # rounds that failed on the database or a model and were retried
    runs_seen: int = 0  # finished runs taken from the log
    added: dict[str, int] = field(default_factory=dict)  # verdicts appended, per scorer
    kept: dict[str, int] = field(default_factory=dict)  # already stored for the same inputs
    errors: dict[str, int] = field(default_factory=dict)  # runs a scorer raised on
    judge_calls: dict[str, int] = field(default_factory=dict)
    cache_hits: dict[str, int] = field(default_factory=dict)
    deferred: dict[str, int] = field(default_factory=dict)  # put off by a judge's budget
    claimed_elsewhere: int = 0  # put off: another follower held the run
    waiting: dict[str, int] = field(default_factory=dict)  # runs put off now, per scorer
    behind_events: int = 0  # events after the cursor, at the last count
    behind_runs: int = 0  # runs finished after the cursor, at the last count
    lag_buckets: list[int] = field(default_factory=lambda: [0] * (len(LAG_BUCKETS) + 1))
    lag_sum: float = 0.0
    lag_count: int = 0
    lags: list[float] = field(default_factory=list)  # kept only when asked (benchmarks)
    keep_lags: bool = False
    position: str = "0"

    def observe_lag(self, seconds: float) -> None:
        for i, bound in enumerate(LAG_BUCKETS):
            if seconds <= bound:
                self.lag_buckets[i] += 1
                break
        else:
            self.lag_buckets[-1] += 1
        self.lag_sum += seconds
        self.lag_count += 1
        if self.keep_lags:
            self.lags.append(seconds)


def _add(counts: dict[str, int], key: str, n: int) -> None:
    if n:
        counts[key] = counts.get(key, 0) + n


def resolve(config: FollowConfig) -> list[Followed]:
    """The scorers a config names, each with its rule; a name no scorer has, a scorer that
    judges groups of runs, or a judge without a model is an error naming the rule."""
    chosen: list[Followed] = []
    for i, rule in enumerate(config.rules):
        names = registry.matching(rule.name) or [rule.name]
        for name in names:
            try:
                scorer = registry.get(name, rule.version)
            except KeyError as exc:
                raise ConfigFileError(f"scorer[{i}]: {exc.args[0]}") from None
            if scorer.scope == "group":
                raise ConfigFileError(
                    f"scorer[{i}]: {scorer.name} judges groups of runs together; score it in "
                    "batch (`agentdocket score`) once the group's runs are in"
                )
            if scorer.judge:
                if rule.judge is not None:
                    scorer = dataclasses.replace(
                        scorer, config={**scorer.config, "model": rule.judge}
                    )
                elif scorer.config.get("model") is None:
                    raise ConfigFileError(
                        f"scorer[{i}]: {scorer.name} is an LLM judge: give it a model "
                        '(judge = "PROVIDER:MODEL", or --judge)'
                    )
            if any(
                f.scorer.name == scorer.name and f.scorer.version == scorer.version for f in chosen
            ):
                raise ConfigFileError(f"scorer[{i}]: {scorer.name}@{scorer.version} is named twice")
            budget = Budget(rule.calls_per_minute) if rule.calls_per_minute is not None else None
            chosen.append(Followed(scorer, rule, budget))
    return chosen


def follower_key(config: FollowConfig, chosen: Sequence[Followed]) -> str:
    """The name a follower's cursor and claims go by: its config's name and a digest of what
    it judges, so a changed config starts its own cursor (and catches up)."""
    what = sorted(
        (
            f.scorer.name,
            f.scorer.version,
            orjson.dumps(f.rule.describe(), option=orjson.OPT_SORT_KEYS).decode(),
        )
        for f in chosen
    )
    digest = hashlib.sha256(orjson.dumps(what)).hexdigest()[:12]
    return f"{config.name}:{digest}"


class Follower:
    """Follows the log of ``store`` and judges finished runs (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        config: FollowConfig,
        chosen: Sequence[Followed] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        reopen: Callable[[], Store] | None = None,
    ) -> None:
        self.store = store
        self.reopen = reopen  # a new store after the database went away (else: the same)
        self.config = config
        self.chosen = list(chosen) if chosen is not None else resolve(config)
        if not self.chosen:
            raise ConfigFileError("no scorers to follow with")
        self.key = follower_key(config, self.chosen)
        self.kinds = input_kinds([f.scorer for f in self.chosen])
        self.clock = clock
        self.stats = Stats()
        self.position = store.following.cursor(self.key)
        self.saved = self.position
        # runs put off: the position to resume before, and when their latest event arrived
        self.deferred: dict[str, tuple[Position, datetime | None]] = {}
        self._counted_at = float("-inf")
        self.stats.position = str(self.position)
        # newly registered dataset versions: their runs are looked at again (new cases)
        saved_at = store.following.saved_at(self.key)
        self._datasets_after = (saved_at or datetime.now(UTC)) - DATASET_MARGIN
        self._datasets_seen: set[tuple[str, str]] = set()

    # --- one round ----------------------------------------------------------------------------

    def round(self) -> bool:
        """Read what arrived, judge the finished runs it touched, save the cursor. True when
        the round was full (more is waiting)."""
        following = self.store.following
        limit = self.config.batch * EVENTS_PER_RUN
        arrivals = following.after(self.position, limit, skip_kinds=("verdict",))
        first: dict[str, Position] = {}
        received: dict[str, datetime | None] = {}
        for a in arrivals:
            first.setdefault(a.trace_id, a.position)
            latest = received.get(a.trace_id)
            if a.received_at is not None and (latest is None or a.received_at > latest):
                received[a.trace_id] = a.received_at
        for tid, (_, at) in self.deferred.items():
            received.setdefault(tid, at)
        touched = list(dict.fromkeys([*self.deferred, *first, *self._new_cases()]))
        runs = following.finished(touched)
        self.stats.runs_seen += sum(1 for t in first if t in runs)
        admitted = {
            f.label: [t for t in touched if t in runs and f.rule.admits(runs[t])]
            for f in self.chosen
        }
        wanted = list(dict.fromkeys(t for ids in admitted.values() for t in ids))
        put_off: dict[str, set[str]] = {}
        mine = following.claim(self.key, wanted)
        try:
            held = set(mine)
            self.stats.claimed_elsewhere += len(wanted) - len(held)
            for tid in wanted:
                if tid not in held:
                    put_off.setdefault(tid, set()).add("claimed")
            traces = (
                {t.trace_id: t for t in self.store.traces_for_scoring(mine, self.kinds, {})}
                if mine
                else {}
            )
            for f in self.chosen:
                subset = [traces[t] for t in admitted[f.label] if t in traces]
                self._judge(f, subset, received, put_off)
        finally:
            following.release(self.key, mine)
        self._advance(arrivals, first, received, put_off)
        self.stats.rounds += 1
        self._count_behind()
        return len(arrivals) >= limit

    def _new_cases(self) -> list[str]:
        """The runs of dataset versions registered since the last round."""
        ids: list[str] = []
        for name, version, at in self.store.following.datasets_since(self._datasets_after):
            if (name, version) in self._datasets_seen:
                continue
            self._datasets_seen.add((name, version))
            self._datasets_after = max(self._datasets_after, at - DATASET_MARGIN)
            ids += self.store.trace_ids(dataset=name)
        return ids

    def _judge(
        self,
        f: Followed,
        subset: list[Trace],
        received: dict[str, datetime | None],
        put_off: dict[str, set[str]],
    ) -> None:
        if f.budget is not None and subset:
            allowed = f.budget.allow(len(subset))
            for t in subset[allowed:]:
                put_off.setdefault(t.trace_id, set()).add(f.label)
            _add(self.stats.deferred, f.label, len(subset) - allowed)
            subset = subset[:allowed]
        if not subset:
            return
        result = score_batch(self.store, [f.scorer], subset, judge_concurrency=f.rule.concurrency)
        stored = datetime.now(UTC)
        if f.budget is not None:
            f.budget.spend(result.judge_calls, len(subset))
        tally = result.tallies[(f.scorer.name, f.scorer.version)]
        _add(self.stats.added, f.label, tally.added)
        _add(self.stats.kept, f.label, tally.kept)
        _add(self.stats.errors, f.label, tally.errors)
        _add(self.stats.judge_calls, f.label, result.judge_calls)
        _add(self.stats.cache_hits, f.label, result.judge_cache_hits)
        for line in result.errors:
            log.warning("%s", line)
        for tid in result.judged:
            at = received.get(tid)
            if at is not None:
                self.stats.observe_lag(max(0.0, (stored - at).total_seconds()))

    def _advance(
        self,
        arrivals: Sequence[Arrival],
        first: dict[str, Position],
        received: dict[str, datetime | None],
        put_off: dict[str, set[str]],
    ) -> None:
        kept: dict[str, tuple[Position, datetime | None]] = {}
        for tid in put_off:
            if tid in self.deferred:
                kept[tid] = self.deferred[tid]
            else:  # a run of a new dataset version holds the cursor where the round began
                start = first[tid].before() if tid in first else self.position
                kept[tid] = (start, received.get(tid))
        self.deferred = kept
        waiting: dict[str, int] = {}
        for reasons in put_off.values():
            for reason in reasons - {"claimed"}:
                waiting[reason] = waiting.get(reason, 0) + 1
        self.stats.waiting = waiting
        if arrivals:
            self.position = arrivals[-1].position
        safe = min([self.position, *(p for p, _ in self.deferred.values())])
        if safe > self.saved:
            self.store.following.save_cursor(self.key, safe)
            self.saved = safe
        self.stats.position = str(self.saved)

    def _count_behind(self) -> None:
        now = self.clock()
        if now - self._counted_at < BACKLOG_EVERY_S:
            return
        self._counted_at = now
        following = self.store.following
        self.stats.behind_events = following.count_after(self.position, skip_kinds=("verdict",))
        self.stats.behind_runs = following.count_after(self.position, only_kinds=("run.finished",))

    # --- the loop -----------------------------------------------------------------------------

    def run(
        self, stop: threading.Event, on_round: Callable[[Follower], None] | None = None
    ) -> None:
        """Follow until ``stop`` is set: rounds back to back while more is waiting, a poll
        interval apart when idle; database or model failures back off and retry (the
        round's runs are judged again from the saved cursor)."""
        self.warm()
        backoff = self.config.poll_seconds
        while not stop.is_set():
            try:
                full = self.round()
                backoff = self.config.poll_seconds
            except (StoreUnavailable, EmbeddingsUnavailable, JudgeUnavailable, StoreError) as exc:
                self.stats.failures += 1
                log.warning("follower %s: %s; retrying in %.0f s", self.key, exc, backoff)
                self._rewind()
                stop.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
                continue
            if on_round is not None:
                on_round(self)
            if not full:
                stop.wait(self.config.poll_seconds)

    def warm(self) -> None:
        """Load what the scorers need (a model) before the first round, so that the first
        runs' lag does not include it; a failure is left to the round to report."""
        for f in self.chosen:
            if f.scorer.warm is not None:
                try:
                    f.scorer.warm()
                except Exception as exc:
                    log.warning("follower %s: %s cannot warm up: %s", self.key, f.label, exc)

    def _rewind(self) -> None:
        """After a failed round, start again from the saved cursor (what was read since may
        not have been judged), on a new connection when the database went away."""
        self.position = self.saved
        self.deferred = {}
        self._datasets_seen.clear()  # looked for again from the last one seen
        if self.reopen is not None:
            with contextlib.suppress(Exception):  # the old connection is gone anyway
                self.store.close()
            try:
                self.store = self.reopen()
            except StoreError as exc:
                log.warning("follower %s: cannot reconnect yet: %s", self.key, exc)
