"""A follower's figures in the Prometheus text format (``score --follow --metrics-port`` and
``serve --score``'s ``/metrics``), read from memory at each scrape:

- ``agentdocket_scoring_verdicts_total{scorer}``: verdicts appended;
  ``agentdocket_scoring_kept_total{scorer}``: runs whose verdict for the same inputs was
  already stored; ``agentdocket_scoring_errors_total{scorer}``: runs a scorer raised on;
- ``agentdocket_scoring_runs_total``: finished runs taken from the log;
- ``agentdocket_scoring_backlog_runs{scorer}``: finished runs not yet judged: those finished
  after the follower's cursor, plus those the scorer's judge budget put off;
- ``agentdocket_scoring_behind_events``: events stored after the cursor;
- ``agentdocket_scoring_lag_seconds``: a histogram of the time from a run's last event being
  stored to its verdict being stored;
- ``agentdocket_judge_calls_total{scorer}``, ``agentdocket_judge_cache_hits_total{scorer}``,
  ``agentdocket_judge_deferred_total{scorer}``: model calls made, answers served from the
  judge cache, runs put off by the budget;
- ``agentdocket_judge_spend_usd_total{scorer}``: what the judge's calls cost in US dollars,
  each priced at its time (genai-prices and the config's price file);
  ``agentdocket_judge_unpriced_calls_total{scorer}``: judge calls no price covers (left out
  of the spend and of a ``usd_per_hour`` budget);
- ``agentdocket_scoring_claimed_elsewhere_total``: runs left to another follower that held
  them; ``agentdocket_scoring_failures_total``: rounds that failed and were retried.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from agentdocket.follow.follower import Follower
from agentdocket.follow.stats import LAG_BUCKETS


class FollowerCollector(Collector):
    """The figures of one follower, collected at each scrape."""

    def __init__(self, follower: Follower) -> None:
        self.follower = follower

    def collect(self) -> Iterator[Metric]:
        f = self.follower
        s = f.stats
        labels = [x.label for x in [*f.chosen, *f.sessions]]

        def per_scorer(name: str, text: str, counts: Mapping[str, float]) -> CounterMetricFamily:
            family = CounterMetricFamily(f"agentdocket_{name}", text, labels=["scorer"])
            for label in labels:
                family.add_metric([label], counts.get(label, 0))
            return family

        yield per_scorer("scoring_verdicts", "Verdicts appended.", s.added)
        yield per_scorer(
            "scoring_kept", "Runs whose verdict for the same inputs was stored.", s.kept
        )
        yield per_scorer("scoring_errors", "Runs a scorer raised on (no verdict).", s.errors)
        yield per_scorer("judge_calls", "Judge model calls made.", s.judge_calls)
        yield per_scorer("judge_cache_hits", "Judge answers from the cache.", s.cache_hits)
        yield per_scorer("judge_deferred", "Runs put off by a judge's budget.", s.deferred)
        yield per_scorer(
            "judge_spend_usd", "What judge calls cost, in US dollars (priced ones).", s.spend_usd
        )
        yield per_scorer("judge_unpriced_calls", "Judge calls no price covers.", s.unpriced_calls)
        yield CounterMetricFamily(
            "agentdocket_scoring_runs", "Finished runs taken from the log.", value=s.runs_seen
        )
        yield CounterMetricFamily(
            "agentdocket_scoring_claimed_elsewhere",
            "Runs left to another follower holding them.",
            value=s.claimed_elsewhere,
        )
        yield CounterMetricFamily(
            "agentdocket_scoring_failures",
            "Follower rounds that failed and were retried.",
            value=s.failures,
        )
        backlog = GaugeMetricFamily(
            "agentdocket_scoring_backlog_runs",
            "Finished runs not yet judged (after the cursor, or put off by a budget).",
            labels=["scorer"],
        )
        for label in labels:
            backlog.add_metric([label], s.behind_runs + s.waiting.get(label, 0))
        yield backlog
        yield GaugeMetricFamily(
            "agentdocket_scoring_behind_events",
            "Events stored after the follower's cursor.",
            value=s.behind_events,
        )
        cumulative, running = [], 0
        for bound, n in zip([*map(str, LAG_BUCKETS), "+Inf"], s.lag_buckets, strict=True):
            running += n
            cumulative.append((bound, running))
        yield HistogramMetricFamily(
            "agentdocket_scoring_lag_seconds",
            "From a run's last event stored to its verdict stored.",
            buckets=cumulative,
            sum_value=s.lag_sum,
        )
