"""What a follower judges and at what cost: its scorers with their rules, and the judges'
budgets."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import orjson

from agentdocket.follow.config import ConfigFileError, FollowConfig, Rule
from agentdocket.scorers.base import Scorer
from agentdocket.scorers.selection import Selection, SelectionError, resolve_scorers


@dataclass
class Followed:
    """One scorer following, with its rule and judge budgets (calls, money)."""

    scorer: Scorer
    rule: Rule
    budget: Budget | None = None
    money: MoneyBudget | None = None

    @property
    def label(self) -> str:
        return f"{self.scorer.name}@{self.scorer.version}"


class Budget:
    """A judge's calls per minute: a bucket refilled continuously, holding one minute's calls.
    A round judges as many runs as the bucket pays for at the calls per run seen so far; the
    rest wait for a later round (deferred, never dropped). A run needing more calls than the
    whole bucket is judged alone once the bucket is full, so that none waits for ever."""

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
        paid = int(self.tokens / max(self.calls_per_run, 1e-9))
        if paid == 0 and self.tokens >= self.per_minute:
            paid = 1
        return min(runs, paid)

    def spend(self, calls: int, runs: int) -> None:
        """Account ``calls`` made for ``runs`` runs (cached answers cost nothing)."""
        self.tokens -= calls
        if runs:
            self.calls_per_run = 0.8 * self.calls_per_run + 0.2 * max(calls / runs, 0.1)


class MoneyBudget:
    """A judge's US dollars per hour: a bucket refilled continuously, holding one hour's
    dollars, from which what the judge's calls cost (priced after the round that made them)
    is taken. A round judges as many runs as the bucket pays for at the cost per run seen so
    far (before any is seen: one run); the rest wait for a later round (deferred, never
    dropped). A round that cost more than foreseen leaves the bucket short, below zero even,
    and no run is judged until it has refilled past zero. A run dearer than the whole bucket
    is judged alone once the bucket is full, so that none waits for ever."""

    def __init__(self, per_hour: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_hour = per_hour
        self.clock = clock
        self.dollars = per_hour
        self.at = clock()
        self.cost_per_run: float | None = None  # unknown until a round has been paid for
        self.peak = 0.0  # the dearest run seen, on average over its round

    def _refill(self) -> None:
        now = self.clock()
        self.dollars = min(self.per_hour, self.dollars + (now - self.at) * self.per_hour / 3600)
        self.at = now

    def allow(self, runs: int) -> int:
        """How many of ``runs`` may be judged now."""
        self._refill()
        if runs <= 0 or self.dollars <= 0:
            return 0
        if self.cost_per_run is None:
            return 1
        if self.cost_per_run <= 0:
            return runs
        paid = int(self.dollars / self.cost_per_run)
        if paid == 0 and self.dollars >= self.per_hour:
            paid = 1
        return min(runs, paid)

    def spend(self, dollars: float, runs: int) -> None:
        """Take what the calls made for ``runs`` runs cost (cached answers cost nothing).
        The cost per run foreseen follows what rounds cost, but not below a tenth of the
        dearest seen, so that a stretch of cached answers does not let one round overspend
        by much when the cache stops answering."""
        self.dollars -= dollars
        if not runs:
            return
        seen = dollars / runs
        self.peak = max(self.peak, seen)
        seen = max(seen, 0.1 * self.peak)
        self.cost_per_run = (
            seen if self.cost_per_run is None else 0.8 * self.cost_per_run + 0.2 * seen
        )


def resolve(config: FollowConfig) -> list[Followed]:
    """The scorers a config names, each with its rule, configured by
    :func:`~agentdocket.scorers.selection.resolve_scorers` as batch scoring configures them; a
    name no scorer has, an option it does not take, a scorer that judges groups of runs, or a
    judge without a model is an error naming the rule."""
    chosen: list[Followed] = []
    for i, rule in enumerate(config.rules):
        name = rule.name if rule.version is None else f"{rule.name}={rule.version}"
        selection = Selection((name,), rule.options, rule.judge, typed=config.typed)
        try:
            found = resolve_scorers(selection)
        except SelectionError as exc:
            raise ConfigFileError(f"scorer[{i}]: {exc}") from None
        for scorer in found:
            if scorer.scope == "group":
                raise ConfigFileError(
                    f"scorer[{i}]: {scorer.name} judges groups of runs together; score it in "
                    "batch (`agentdocket score`) once the group's runs are in"
                )
            if scorer.judge and scorer.config.get("model") is None:
                raise ConfigFileError(
                    f"scorer[{i}]: {scorer.name} is an LLM judge: give it a model "
                    '(judge = "PROVIDER:MODEL", or --judge)'
                )
            if any(
                f.scorer.name == scorer.name and f.scorer.version == scorer.version for f in chosen
            ):
                raise ConfigFileError(f"scorer[{i}]: {scorer.name}@{scorer.version} is named twice")
            budget = Budget(rule.calls_per_minute) if rule.calls_per_minute is not None else None
            money = MoneyBudget(rule.usd_per_hour) if rule.usd_per_hour is not None else None
            chosen.append(Followed(scorer, rule, budget, money))
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
