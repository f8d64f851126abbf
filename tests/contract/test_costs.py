"""What runs cost, on every backend: every model call priced into ``call_costs`` at its own
time, added up by run, role, agent and model, the judges' calls apart as the cost of
evaluating; a price file changes the costs of the models it names and no other, and the log
is never touched."""

from __future__ import annotations

import random
import uuid
from datetime import timedelta

import pytest

from agentdocket.costs.overrides import parse_prices
from agentdocket.costs.prices import PriceBook
from agentdocket.costs.refresh import refresh
from agentdocket.events import Event, LlmCalled, Verdict
from agentdocket.store import Store, open_store
from agentdocket.store.projections import JUDGE_CACHE_KEY
from tests.helpers.factory import T0, run_events
from tests.helpers.fresh import EVERY, fresh_url

PRIVATE = """\
[[price]]
provider = "self-hosted"
model = "llama-private"
input_mtok = 1
output_mtok = 2
"""


@pytest.fixture(params=EVERY)
def url(request: pytest.FixtureRequest) -> str:
    return fresh_url(request)


def _call(trace_id: str, n: int, model: str, provider: str, role: str, **attrs: object) -> Event:
    return Event.create(
        trace_id=trace_id,
        span_id=f"{n + 1:016x}",
        seq=100 + n,
        ts=T0 + timedelta(minutes=n),
        payload=LlmCalled(
            model=model,
            role=role,
            input_tokens=1000 * (n + 1),
            output_tokens=100,
            cache_read_tokens=200,
            attributes={"provider": provider, **attrs},
        ),
    )


def _seed(store: Store) -> list[str]:
    """Two runs: a planner on gpt-4o and a caller on a self-hosted model in each; a judge's
    call in a trace of its own, named by the verdict it gave on the first run."""
    rng = random.Random(4)
    ids, events = [], []
    for _ in range(2):
        run = run_events(rng)
        tid = run[0].trace_id
        ids.append(tid)
        events += [e for e in run if e.kind != "llm.called"]
        events.append(_call(tid, 0, "gpt-4o", "openai", "planner"))
        events.append(_call(tid, 1, "llama-private", "self-hosted", "caller"))
    judge_trace = uuid.UUID(int=rng.getrandbits(128)).hex
    events.append(_call(judge_trace, 2, "gpt-4o-mini", "openai", "judge", **{JUDGE_CACHE_KEY: "k"}))
    verdict = Verdict(
        scorer="answer.reference",
        scorer_version="1",
        input_hash="h",
        subject_trace_id=ids[0],
        passed=True,
        judge_trace_id=judge_trace,
    )
    events.append(Event.create(trace_id=ids[0], span_id="f" * 16, seq=999, ts=T0, payload=verdict))
    store.append(events)
    return ids


def test_costs_by_run_role_and_agent_with_the_judges_apart(url: str) -> None:
    with open_store(url) as store:
        ids = _seed(store)
        done = refresh(store, PriceBook())
        assert (done.calls, done.priced, done.unpriced) == (5, 3, 2)
        roles = {r["role"]: r for r in store.costs.by("role")}
        assert set(roles) == {"planner", "caller"}  # the judge's call is not the agent's
        assert roles["caller"]["cost_usd"] is None and roles["caller"]["unpriced_calls"] == 2
        # gpt-4o at $2.5 / $1.25 cached / $10 per million: 800 x 2.5 + 200 x 1.25 + 100 x 10
        assert roles["planner"]["cost_usd"] == pytest.approx(2 * 0.00325)
        runs = {r["trace_id"]: r for r in store.costs.by("run")}
        assert set(runs) == set(ids) and all(r["calls"] == 2 for r in runs.values())
        (agent,) = store.costs.by("agent")
        assert (agent["agent"], agent["calls"], agent["unpriced_calls"]) == ("agent-a", 4, 2)
        (judged,) = store.costs.by("run", judges=True)
        assert judged["trace_id"] == ids[0] and judged["cost_usd"] > 0
        calls = store.costs.of_runs([ids[0]])
        assert [c["role"] for c in calls] == ["planner", "caller"]
        # a provider genai-prices does not know is not priced as anyone's list price
        assert calls[1]["unpriced"].startswith("unknown provider 'self-hosted'")


def test_a_price_file_changes_the_models_it_names_and_not_the_log(url: str) -> None:
    with open_store(url) as store:
        ids = _seed(store)
        log = [store.reader.events(t) for t in ids]
        refresh(store, PriceBook())
        before = {c["event_id"]: c for c in store.costs.of_runs(ids)}
        book = PriceBook(parse_prices(PRIVATE, "private.toml"))
        refresh(store, book)
        after = {c["event_id"]: c for c in store.costs.of_runs(ids)}
        assert [store.reader.events(t) for t in ids] == log
        changed = {k for k in after if after[k]["cost"] != before[k]["cost"]}
        assert {after[k]["model"] for k in changed} == {"llama-private"}
        # 2000 input tokens (200 cached, at the input rate: the file gives no cache rate) at
        # $1 and 100 output at $2 per million, in each run
        assert sorted(after[k]["cost"] for k in changed) == pytest.approx([0.0022, 0.0022])
        assert {c["priced_by"] for c in after.values()} == {book.version}
        assert store.costs.priced_by() == [book.version]


def test_a_refresh_prices_new_calls_and_all_of_them_when_the_prices_change(url: str) -> None:
    with open_store(url) as store:
        ids = _seed(store)
        assert refresh(store, PriceBook()).whole
        later = _call(ids[1], 5, "gpt-4o", "openai", "responder")
        store.append([later])
        again = refresh(store, PriceBook())
        assert (again.whole, again.calls) == (False, 1)
        assert len(store.costs.of_runs([ids[1]])) == 3
        assert refresh(store, PriceBook()).calls == 0  # nothing new
        changed = refresh(store, PriceBook(parse_prices(PRIVATE, "private.toml")))
        assert (changed.whole, changed.calls) == (True, 6)


def test_a_refresh_after_a_position_reads_only_the_calls_that_arrived_since(url: str) -> None:
    """What `serve` does every minute: the read grows with the new calls, not with the log."""
    with open_store(url) as store:
        ids = _seed(store)
        first = refresh(store, PriceBook())
        assert (first.whole, first.calls) == (True, 5)
        store.append([_call(ids[1], 5, "gpt-4o", "openai", "responder")])
        later = refresh(store, PriceBook(), after=first.position)
        assert (later.whole, later.calls) == (False, 1)
        assert later.position > first.position
        assert len(store.costs.of_runs([ids[1]])) == 3
        assert refresh(store, PriceBook(), after=later.position).calls == 0
        # a call before the position is not read again, even with its row gone: the read
        # starts at the position (a refresh from none compares every call with the rows)
        gone = store.costs.of_runs([ids[0]])[0]["event_id"]
        with store.recorder.write() as conn:
            store.recorder.execute(conn, "DELETE FROM call_costs WHERE event_id = ?", [gone])
        assert refresh(store, PriceBook(), after=later.position).calls == 0
        assert refresh(store, PriceBook()).calls == 1
        # a call another refresh priced meanwhile is not priced twice
        store.append([_call(ids[0], 6, "gpt-4o", "openai", "responder")])
        assert refresh(store, PriceBook()).calls == 1
        assert refresh(store, PriceBook(), after=later.position).calls == 0
        # other prices: every call again, whatever the position
        changed = refresh(
            store, PriceBook(parse_prices(PRIVATE, "private.toml")), after=later.position
        )
        assert (changed.whole, changed.calls) == (True, 7)


def test_the_hourly_roll_up_adds_up_to_the_calls(url: str) -> None:
    def by_hour(store: Store) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
        rolled = store.recorder.read(
            "SELECT model, role, sum(calls), sum(unpriced), sum(cost) FROM rollup_costs "
            "GROUP BY model, role ORDER BY model, role"
        )
        direct = store.recorder.read(
            "SELECT model, role, count(*), sum(CASE WHEN cost IS NULL THEN 1 ELSE 0 END), "
            "coalesce(sum(cost), 0) FROM call_costs GROUP BY model, role ORDER BY model, role"
        )
        return [tuple(r) for r in rolled], [tuple(r) for r in direct]

    with open_store(url) as store:
        ids = _seed(store)
        refresh(store, PriceBook())
        store.append([_call(ids[1], 5, "gpt-4o", "openai", "planner")])
        refresh(store, PriceBook())  # added to the hours it falls in
        rolled, direct = by_hour(store)
        assert [r[:4] for r in rolled] == [r[:4] for r in direct]
        assert [r[4] for r in rolled] == pytest.approx([r[4] for r in direct])
        refresh(store, PriceBook(parse_prices(PRIVATE, "private.toml")))  # all again
        rolled, direct = by_hour(store)
        assert [r[:4] for r in rolled] == [r[:4] for r in direct]
        assert [r[4] for r in rolled] == pytest.approx([r[4] for r in direct])
