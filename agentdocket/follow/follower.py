"""The follower: scores runs as they finish, exactly once, resuming where it stopped.

Each round reads the events stored after the follower's position (in arrival order, see
:mod:`agentdocket.store.arrivals`), takes the finished runs they touched, and judges them with
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

Session scorers judge a session once it has been idle for ``session_idle_seconds`` (its last
event that long ago), and again, as a new input, when a later turn arrives: the follower looks
for sessions gone idle since it last looked (at start, since its cursor was last saved), so a
restart misses none; the verdict's id makes a session judged twice stored once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from agentdocket.events import JUDGEMENT_KINDS, Conversation, Event, Trace
from agentdocket.follow.config import ConfigFileError, FollowConfig
from agentdocket.follow.selection import Followed, follower_key, resolve
from agentdocket.follow.stats import Stats, add
from agentdocket.scorers.embeddings import EmbeddingsUnavailable
from agentdocket.scorers.judges.client import JudgeUnavailable
from agentdocket.scorers.runner import Result, input_kinds, score_batch
from agentdocket.scorers.session_runner import conversations, score_conversations
from agentdocket.store import Store, StoreError, StoreUnavailable
from agentdocket.store.arrivals import Arrival, Position
from agentdocket.store.pipeline import ScoringSample

if TYPE_CHECKING:
    from agentdocket.costs.prices import PriceBook

log = logging.getLogger("agentdocket.follow")
PROCESS = f"{socket.gethostname()}:{os.getpid()}"

EVENTS_PER_RUN = 40  # events read per round: this many per run of the batch
BACKLOG_EVERY_S = 5.0  # how often the events behind the cursor are counted
MAX_BACKOFF_S = 30.0
SAMPLE_EVERY_S = 15.0  # how often a sample of the follower goes into scoring_samples
# A dataset version is looked for this long before the last one seen (or the cursor's last
# save, at start): a registration that committed late is still found.
DATASET_MARGIN = timedelta(seconds=60)
# Idle sessions are looked for this often, from this long before the last look (a turn that
# committed late is still found); each look reads the runs projection grouped by session.
SESSIONS_EVERY_S = 15.0
SESSION_MARGIN = timedelta(seconds=60)


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
        every = list(chosen) if chosen is not None else resolve(config)
        if not every:
            raise ConfigFileError("no scorers to follow with")
        self.key = follower_key(config, every)
        self.chosen = [f for f in every if f.scorer.scope != "session"]
        self.sessions = [f for f in every if f.scorer.scope == "session"]
        from agentdocket.costs.prices import PriceBook  # genai-prices: loaded by followers only

        self.prices: PriceBook = PriceBook(config.prices)  # what the judges' calls cost
        self._unpriced_told: set[str] = set()
        self.kinds = input_kinds([f.scorer for f in self.chosen])
        self.clock = clock
        self.stats = Stats()
        self.position = store.arrivals.cursor(self.key)
        self.saved = self.position
        # runs put off: the position to resume before, and when their latest event arrived
        self.deferred: dict[str, tuple[Position, datetime | None]] = {}
        self._counted_at = float("-inf")
        self.stats.position = str(self.position)
        # newly registered dataset versions: their runs are looked at again (new cases)
        saved_at = store.arrivals.saved_at(self.key)
        self._datasets_after = (saved_at or datetime.now(UTC)) - DATASET_MARGIN
        self._datasets_seen: set[tuple[str, str]] = set()
        # idle sessions are looked for from here (None: from the first; a restart goes back
        # to before its last save)
        idle = timedelta(seconds=config.session_idle_seconds)
        self._sessions_from = None if saved_at is None else saved_at - idle - SESSION_MARGIN
        self._sessions_at = float("-inf")

    # --- one round ----------------------------------------------------------------------------

    def round(self) -> bool:
        """Read what arrived, judge the finished runs it touched, save the cursor. True when
        the round was full (more is waiting)."""
        following = self.store.arrivals
        limit = self.config.batch * EVENTS_PER_RUN
        arrivals = following.after(self.position, limit, skip_kinds=JUDGEMENT_KINDS)
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
        # finished as of what this round read: a run whose end committed after the read is
        # judged when its end arrives, not twice
        upto = arrivals[-1].position if arrivals else self.position
        runs = following.finished(touched, upto)
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
                {t.trace_id: t for t in self.store.scoring.traces(mine, self.kinds, {})}
                if mine
                else {}
            )
            for f in self.chosen:
                subset = [traces[t] for t in admitted[f.label] if t in traces]
                self._judge(f, subset, received, put_off)
        finally:
            following.release(self.key, mine)
        self._advance(arrivals, first, received, put_off)
        self.judge_idle_sessions()
        self.stats.rounds += 1
        self._count_behind()
        return len(arrivals) >= limit

    def _new_cases(self) -> list[str]:
        """The runs of dataset versions registered since the last round."""
        ids: list[str] = []
        for name, version, at in self.store.arrivals.datasets_since(self._datasets_after):
            if (name, version) in self._datasets_seen:
                continue
            self._datasets_seen.add((name, version))
            self._datasets_after = max(self._datasets_after, at - DATASET_MARGIN)
            ids += self.store.reader.trace_ids(dataset=name)
        return ids

    def _judge(
        self,
        f: Followed,
        subset: list[Trace],
        received: dict[str, datetime | None],
        put_off: dict[str, set[str]],
    ) -> None:
        allowed = len(subset)
        for budget in (f.budget, f.money):
            if budget is not None and allowed:
                allowed = budget.allow(allowed)
        for t in subset[allowed:]:
            put_off.setdefault(t.trace_id, set()).add(f.label)
        add(self.stats.deferred, f.label, len(subset) - allowed)
        subset = subset[:allowed]
        if not subset:
            return
        result = score_batch(self.store, [f.scorer], subset, judge_concurrency=f.rule.concurrency)
        stored = datetime.now(UTC)
        self._account(f, result, len(subset))
        for tid in result.judged:
            at = received.get(tid)
            if at is not None:
                self.stats.observe_lag(max(0.0, (stored - at).total_seconds()))

    def judge_idle_sessions(self, force: bool = False) -> None:
        """Judge the sessions gone idle since the last look with the session scorers (every
        ``SESSIONS_EVERY_S``, or now with ``force``). A session's rule is read on its last
        turn; sessions a budget puts off are looked at again next time."""
        if not self.sessions or (not force and self.clock() - self._sessions_at < SESSIONS_EVERY_S):
            return
        self._sessions_at = self.clock()
        until = datetime.now(UTC) - timedelta(seconds=self.config.session_idle_seconds)
        ids = self.store.sessions.ids(active_from=self._sessions_from, active_until=until)
        kinds = input_kinds([f.scorer for f in self.sessions])
        put_off = False
        for start in range(0, len(ids), self.config.batch):
            found = conversations(self.store, ids[start : start + self.config.batch], kinds, {})
            last = self.store.arrivals.finished([c.last.trace_id for c in found])
            for f in self.sessions:
                subset = [
                    c
                    for c in found
                    if c.last.trace_id in last and f.rule.admits(last[c.last.trace_id])
                ]
                put_off |= self._judge_sessions(f, subset)
        if not put_off:
            self._sessions_from = until - SESSION_MARGIN

    def _judge_sessions(self, f: Followed, subset: list[Conversation]) -> bool:
        """Judge ``subset`` with ``f`` as its budgets allow; True when some were put off."""
        allowed = len(subset)
        for budget in (f.budget, f.money):
            if budget is not None and allowed:
                allowed = budget.allow(allowed)
        add(self.stats.deferred, f.label, len(subset) - allowed)
        if not allowed:
            return bool(subset)
        result = score_conversations(
            self.store, [f.scorer], subset[:allowed], judge_concurrency=f.rule.concurrency
        )
        self._account(f, result, allowed)
        return allowed < len(subset)

    def _account(self, f: Followed, result: Result, judged: int) -> None:
        """What judging ``judged`` runs (or sessions) with ``f`` did: its budgets spent, its
        counts, its errors logged."""
        spent, unpriced = self._cost(f, result.judge_call_events)
        if f.budget is not None:
            f.budget.spend(result.judge_calls, judged)
        if f.money is not None:
            f.money.spend(float(spent), judged)
        if spent:
            self.stats.spend_usd[f.label] = self.stats.spend_usd.get(f.label, 0.0) + float(spent)
        add(self.stats.unpriced_calls, f.label, unpriced)
        tally = result.tallies[(f.scorer.name, f.scorer.version)]
        add(self.stats.added, f.label, tally.added)
        add(self.stats.kept, f.label, tally.kept)
        add(self.stats.errors, f.label, tally.errors)
        add(self.stats.judge_calls, f.label, result.judge_calls)
        add(self.stats.cache_hits, f.label, result.judge_cache_hits)
        for line in result.errors:
            log.warning("%s", line)

    def _cost(self, f: Followed, calls: Sequence[Event]) -> tuple[Decimal, int]:
        """What the judge calls just made for ``f`` cost, priced from their ``llm.called``
        events at their time, and how many of them no price covers. A call that failed is
        neither (it is not counted as a call either)."""
        from agentdocket.costs.prices import Usage

        spent, unpriced = Decimal(0), 0
        for call in calls:
            if call.payload.get("error") is not None:
                continue
            priced = self.prices.price(Usage.of_call(call.payload, call.ts))
            if priced.cost is not None:
                spent += priced.cost
                continue
            unpriced += 1
            if f.money is not None and f.label not in self._unpriced_told:
                self._unpriced_told.add(f.label)
                log.warning(
                    "follower %s: %s's judge calls are unpriced (%s): they count against "
                    "calls_per_minute, not usd_per_hour; give their model a rate in a price "
                    "file ([follow] prices)",
                    self.key,
                    f.label,
                    priced.unpriced,
                )
        return spent, unpriced

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
            self.store.arrivals.save_cursor(self.key, safe)
            self.saved = safe
        self.stats.position = str(self.saved)

    def _count_behind(self) -> None:
        now = self.clock()
        if now - self._counted_at < BACKLOG_EVERY_S:
            return
        self._counted_at = now
        following = self.store.arrivals
        self.stats.behind_events = following.count_after(self.position, skip_kinds=JUDGEMENT_KINDS)
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
        sampled_at = self.clock()
        while not stop.is_set():
            if self.clock() - sampled_at >= SAMPLE_EVERY_S:
                self.record_sample()
                sampled_at = self.clock()
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
        self.record_sample()

    def sample(self) -> ScoringSample:
        """The follower's progress now; the lag over the interval since the last sample."""
        s = self.stats
        lags, s.recent_lags = sorted(s.recent_lags), []

        def quantile(p: float) -> float | None:
            return lags[min(len(lags) - 1, int(p * len(lags)))] if lags else None

        return ScoringSample(
            at=datetime.now(UTC),
            follower=self.key,
            process=PROCESS,
            runs_judged=s.runs_seen,
            verdicts=sum(s.added.values()),
            errors=sum(s.errors.values()),
            lag_p50_s=quantile(0.5),
            lag_p95_s=quantile(0.95),
            lag_max_s=lags[-1] if lags else None,
            behind_runs=s.behind_runs,
            behind_events=s.behind_events,
            deferred=sum(s.waiting.values()),
        )

    def record_sample(self) -> None:
        """Store a sample (the pipeline dashboard reads them); a failure is only logged."""
        try:
            self.store.pipeline.record(self.sample())
        except StoreError as exc:
            log.info("follower %s: sample not written: %s", self.key, exc)

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
        self._sessions_at = float("-inf")  # look for idle sessions again at once
        self._datasets_seen.clear()  # looked for again from the last one seen
        if self.reopen is not None:
            with contextlib.suppress(Exception):  # the old connection is gone anyway
                self.store.close()
            try:
                self.store = self.reopen()
            except StoreError as exc:
                log.warning("follower %s: cannot reconnect yet: %s", self.key, exc)
