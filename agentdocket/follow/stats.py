"""What a follower did since it started: the figures its metrics and samples read."""

from __future__ import annotations

from dataclasses import dataclass, field

LAG_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
MAX_RECENT_LAGS = 100_000


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
    spend_usd: dict[str, float] = field(default_factory=dict)  # what judge calls cost, priced
    unpriced_calls: dict[str, int] = field(default_factory=dict)  # judge calls no price covers
    claimed_elsewhere: int = 0  # put off: another follower held the run
    waiting: dict[str, int] = field(default_factory=dict)  # runs put off now, per scorer
    behind_events: int = 0  # events after the cursor, at the last count
    behind_runs: int = 0  # runs finished after the cursor, at the last count
    lag_buckets: list[int] = field(default_factory=lambda: [0] * (len(LAG_BUCKETS) + 1))
    lag_sum: float = 0.0
    lag_count: int = 0
    lags: list[float] = field(default_factory=list)  # kept only when asked (benchmarks)
    keep_lags: bool = False
    recent_lags: list[float] = field(default_factory=list)  # since the last sample
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
        if len(self.recent_lags) < MAX_RECENT_LAGS:
            self.recent_lags.append(seconds)
        if self.keep_lags:
            self.lags.append(seconds)


def add(counts: dict[str, int], key: str, n: int) -> None:
    """Add ``n`` to ``counts[key]`` (a key appears once it has something)."""
    if n:
        counts[key] = counts.get(key, 0) + n
