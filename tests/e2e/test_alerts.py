"""Alert rules as code: every rule's query runs as the Grafana role, returns nothing on a
healthy week of traffic, and fires once a regression of its kind is injected into the last
hour. The provisioning file is what the build makes."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentdocket.dashboards import alerts
from agentdocket.events import Event, LlmCalled, TelemetryDropped
from agentdocket.store import DeadLetter, Store, open_store
from agentdocket.store.pipeline import PipelineSample, ScoringSample
from tests.helpers.db import ROOT
from tests.helpers.factory import run_events, verdict_event
from tests.helpers.fresh import SERVERS, fresh_url
from tests.helpers.grafana import grafana_role

SCORER = "tools.procedural"


@pytest.fixture(params=SERVERS)
def url(request: pytest.FixtureRequest) -> str:
    """A fresh, migrated PostgreSQL database, and one on the Citus cluster."""
    return fresh_url(request)


def _runs(
    store: Store, rng: random.Random, start: datetime, n: int, errors: int, passes: int
) -> None:
    """``n`` runs starting at ``start``: the first ``errors`` end in error, the first ``passes``
    pass ``SCORER``."""
    for i in range(n):
        events = run_events(
            rng, agent="support", fail=i < errors, start=start + timedelta(seconds=i)
        )
        events.append(verdict_event(events, scorer=SCORER, passed=i < passes, when=start))
        store.append(events)


def _spend(store: Store, when: datetime, usd: float, n: int) -> None:
    """A model call of one of support's runs at ``when``, costing ``usd`` (gpt-4o's input
    tokens at $2.50 a million), then every call priced."""
    from agentdocket.costs.prices import PriceBook
    from agentdocket.costs.refresh import refresh

    (run,) = store.reader.list_runs(agent="support", limit=1)
    call = LlmCalled(
        model="gpt-4o",
        input_tokens=round(usd / 2.5e-6),
        output_tokens=0,
        attributes={"provider": "openai"},
    )
    store.append(
        [
            Event.create(
                trace_id=run["trace_id"],
                span_id=f"{n + 1:016x}",
                seq=10**6 + n,
                ts=when,
                payload=call,
            )
        ]
    )
    refresh(store, PriceBook())


def _samples(store: Store, at: datetime, dropped: int, behind: int, lag: float) -> None:
    store.pipeline.record(PipelineSample(at, "host:1", 0, 0, None, 100, 900, 0, 0, dropped))
    store.pipeline.record(
        ScoringSample(at, "live:1", "host:2", 50, 100, 0, lag / 2, lag, lag, behind, 10, 0)
    )


def _firing(conn: Any) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    for rule in alerts.rules():
        rows = conn.execute(rule.sql.encode()).fetchall()
        assert all(r[-1] > 0 for r in rows), rule.title
        out[rule.uid] = rows
    return out


@pytest.mark.postgres
def test_rules_are_quiet_on_a_healthy_week_and_fire_on_a_regression(url: str) -> None:
    rng = random.Random(19)
    now = datetime.now(UTC)
    with open_store(url) as store:
        # a week of steady traffic: 10% errors, 80% pass, every 8 hours, and the last hour too
        for hours in range(8, 7 * 24, 8):
            _runs(store, rng, now - timedelta(hours=hours), 10, errors=1, passes=8)
        _runs(store, rng, now - timedelta(minutes=20), 10, errors=1, passes=8)
        for minutes in (12, 6, 1):
            _samples(store, now - timedelta(minutes=minutes), dropped=3, behind=10, lag=0.5)
        _spend(store, now - timedelta(days=10), 2.0, 0)  # $2 a week, steadily
        _spend(store, now - timedelta(days=3), 2.0, 1)
        store.projections.refresh_dashboards()
    with grafana_role(url) as conn:
        assert _firing(conn) == {rule.uid: [] for rule in alerts.rules()}
    # the last hour goes wrong in every way the rules watch
    with open_store(url) as store:
        _runs(store, rng, now - timedelta(minutes=5), 10, errors=6, passes=0)
        _samples(store, now, dropped=40, behind=5000, lag=120.0)
        store.append(
            [
                Event.create(
                    trace_id="d" * 32,
                    span_id="d" * 16,
                    seq=0,
                    ts=now,
                    payload=TelemetryDropped(count=7, reason="queue_full"),
                )
            ]
        )
        store.dead_letters.keep([DeadLetter.of_raw('{"x": 1}', "refused", "receiver")])
        _spend(store, now - timedelta(hours=2), 3.0, 2)  # $5 this week
    with grafana_role(url) as conn:
        firing = _firing(conn)
    assert firing["agentdocket-pass-rate-drop"] == [("support", SCORER, "1", pytest.approx(0.4))]
    assert firing["agentdocket-error-rate-rise"] == [("support", pytest.approx(0.25))]
    assert sorted(firing["agentdocket-telemetry-dropped"]) == [
        ("exporter queue_full", 7.0),
        ("receiver host:1", 37.0),
    ]
    assert firing["agentdocket-dead-letters"] == [("receiver", 1.0)]
    assert firing["agentdocket-scoring-backlog"] == [("live:1", 5000.0)]
    assert firing["agentdocket-scoring-lag"] == [("live:1", 120.0)]
    assert firing["agentdocket-spend-rise"] == [("support", pytest.approx(1.5))]


def test_the_provisioned_rules_are_the_declared_ones() -> None:
    """Each rule in the file queries the provisioned datasource, fires above 0, names what
    fired in its summary and links to a panel of a dashboard that exists."""
    provisioned = json.loads(
        (ROOT / "dashboards" / "provisioning" / "alerting" / "agentdocket.json").read_text()
    )
    [group] = provisioned["groups"]
    boards = {
        json.loads(p.read_text())["uid"]: json.loads(p.read_text())
        for p in (ROOT / "dashboards" / "json").glob("*.json")
    }
    declared = {r.uid: r for r in alerts.rules()}
    assert [r["uid"] for r in group["rules"]] == list(declared)
    for rule in group["rules"]:
        query, threshold = rule["data"]
        assert query["datasourceUid"] == "agentdocket" == query["model"]["datasource"]["uid"]
        assert query["model"]["rawSql"] == declared[rule["uid"]].sql
        assert threshold["model"]["type"] == "threshold" and rule["condition"] == "B"
        assert threshold["model"]["conditions"][0]["evaluator"] == {"type": "gt", "params": [0]}
        notes = rule["annotations"]
        assert "{{ $labels." in notes["summary"]
        board = boards[notes["__dashboardUid__"]]
        assert int(notes["__panelId__"]) in {p["id"] for p in board["panels"]}
        assert rule["noDataState"] == "OK"
