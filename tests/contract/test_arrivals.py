"""Following the log: arrival order, cursors, claims, and the follower on both databases."""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
from scipy import stats as scipy_stats

from agentdocket.events import Case, Dataset, Event, SqlExecuted
from agentdocket.follow.config import ConfigFileError, FollowConfig, Rule, from_options, parse
from agentdocket.follow.follower import Follower
from agentdocket.follow.selection import follower_key, resolve
from agentdocket.store import Store, open_store
from agentdocket.store.arrivals import Position
from agentdocket.store.months import month_of
from tests.helpers.db import admin, cli
from tests.helpers.factory import T0, run_events

SCORER = "interaction.metrics"  # judges any run with a plan or an answer; no case needed


def _verdicts(store: Store, scorer: str = SCORER) -> Counter[tuple[str, str]]:
    rows = store.recorder.read(
        "SELECT trace_id, input_hash FROM verdicts WHERE scorer = ?", [scorer]
    )
    return Counter((r[0], r[1]) for r in rows)


def _config(name: str = "t", **rule: object) -> FollowConfig:
    return FollowConfig(rules=(Rule(name=SCORER, **rule),), name=name, poll_seconds=0.05)  # type: ignore[arg-type]


def _late_sql(events: list[Event], seq: int = 100) -> Event:
    first = events[0]
    return Event.create(
        trace_id=first.trace_id,
        span_id="f" * 16,
        parent_span_id=first.span_id,
        seq=seq,
        ts=first.ts + timedelta(minutes=5),
        payload=SqlExecuted(query="SELECT 2", columns=["y"], rows=[[2]], row_count=1),
    )


def test_arrivals_come_in_the_order_they_were_stored(store: Store) -> None:
    rng = random.Random(1)
    runs = [run_events(rng, start=T0 - timedelta(hours=h)) for h in range(3)]
    for events in runs:
        store.append(events)
    arrived = store.arrivals.after(Position(), 1000)
    assert [a.trace_id for a in arrived] == [e.trace_id for r in runs for e in r]
    assert all(a.received_at is not None for a in arrived)
    # a limit, a position to resume after, and kinds left out
    head = store.arrivals.after(Position(), 5)
    rest = store.arrivals.after(head[-1].position, 1000)
    assert head + rest == arrived
    without = store.arrivals.after(Position(), 1000, skip_kinds=("plan", "response"))
    assert len(without) == len(arrived) - 2 * len(runs)
    assert store.arrivals.count_after(head[-1].position) == len(rest)
    assert store.arrivals.count_after(Position(), only_kinds=("run.finished",)) == 3
    assert store.arrivals.head() == arrived[-1].position
    # events of some kinds, with their ids (what an outbound cursor reads)
    ends = store.arrivals.events_after(Position(), 1000, ("run.finished",))
    assert [p for p, _ in ends] == [a.position for a in arrived if a.kind == "run.finished"]
    assert [i for _, i in ends] == [str(r[-1].event_id) for r in runs]
    assert store.arrivals.events_after(ends[0][0], 1, ("run.finished",)) == ends[1:2]
    # finished as of a position: not before its end arrived
    tid = runs[0][0].trace_id
    end = next(a.position for a in arrived if a.trace_id == tid and a.kind == "run.finished")
    assert store.arrivals.finished([tid], end.before()) == {}
    assert list(store.arrivals.finished([tid], end)) == [tid]
    # a re-sent batch adds no arrival
    store.append(runs[0])
    assert store.arrivals.after(arrived[-1].position, 10) == []


def test_cursors_only_move_forward(store: Store) -> None:
    assert store.arrivals.cursor("a") == Position()
    store.arrivals.save_cursor("a", Position(0, 5))
    store.arrivals.save_cursor("a", Position(0, 3))  # another follower was behind
    store.arrivals.save_cursor("b", Position(0, 1))
    assert store.arrivals.cursor("a") == Position(0, 5)
    assert [(c[0], c[1]) for c in store.arrivals.cursors()] == [
        ("a", Position(0, 5)),
        ("b", Position(0, 1)),
    ]


@pytest.mark.postgres
def test_an_open_transaction_holds_back_everything_after_it(server_url: str) -> None:
    """Events of a transaction still running are not followed, nor are events committed after
    it began: a follower must not pass a position that an earlier commit could still fill."""
    rng = random.Random(2)
    slow, fast = run_events(rng), run_events(rng)
    with open_store(server_url) as a, open_store(server_url) as b:
        a.append(run_events(rng))
        before = a.arrivals.after(Position(), 1000)
        with b.recorder.write() as conn:
            b.roles.log.insert_events(conn, slow, {slow[0].trace_id: month_of(slow[0].ts)})
            a.append(fast)
            assert a.arrivals.after(before[-1].position, 1000) == []
        arrived = a.arrivals.after(before[-1].position, 1000)
    assert {x.trace_id for x in arrived} == {slow[0].trace_id, fast[0].trace_id}
    positions = [x.position for x in arrived]
    assert positions == sorted(positions)


@pytest.mark.postgres
def test_claims_keep_a_run_to_one_follower_until_released_or_gone(server_url: str) -> None:
    a, b = open_store(server_url), open_store(server_url)
    try:
        assert a.arrivals.claim("f", ["t1", "t2"]) == ["t1", "t2"]
        assert b.arrivals.claim("f", ["t1", "t2", "t3"]) == ["t3"]
        assert b.arrivals.claim("other", ["t1"]) == ["t1"]  # another follower name
        a.arrivals.release("f", ["t1"])
        assert b.arrivals.claim("f", ["t1", "t2"]) == ["t1"]
        a.close()  # a follower killed: its claims go with its connection, once the server has
        # ended that session (it does so on its own time: wait for it, not for a fixed while)
        deadline = time.monotonic() + 60
        while (got := b.arrivals.claim("f", ["t2"])) != ["t2"]:
            assert got == [] and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        a.close()
        b.close()


def test_the_follower_judges_runs_as_they_finish_and_again_when_inputs_change(
    url: str,
) -> None:
    rng = random.Random(3)
    done = [run_events(rng) for _ in range(4)]
    running = run_events(rng)
    with open_store(url) as store:
        for events in done:
            store.append(events)
        store.append(running[:-1])  # not finished yet
        follower = Follower(store, _config())
        follower.round()
        assert set(t for t, _ in _verdicts(store)) == {r[0].trace_id for r in done}
        store.append(running[-1:])  # it finishes
        follower.round()
        assert running[0].trace_id in {t for t, _ in _verdicts(store)}
        assert follower.stats.lag_count == 5
        follower.round()  # nothing new: nothing judged
        assert sum(follower.stats.added.values()) == 5
        # a late SQL step: the run is judged again under a new input hash, the old verdict stays
        store.append([_late_sql(done[0])])
        follower.round()
        verdicts = _verdicts(store)
        assert sum(1 for t, _ in verdicts if t == done[0][0].trace_id) == 2
        assert set(verdicts.values()) == {1}
        # a new follower of the same config resumes at the saved cursor: nothing to do
        again = Follower(store, _config())
        assert again.position == follower.position
        again.round()
        assert sum(again.stats.added.values()) == 0 and again.stats.runs_seen == 0


def test_the_followers_command_says_how_far_each_has_come(url: str) -> None:
    rng = random.Random(10)
    with open_store(url) as store:
        store.append(run_events(rng))
        Follower(store, _config("listed")).round()
        store.append(run_events(rng))  # after the cursor
        key = follower_key(_config("listed"), resolve(_config("listed")))
    [row] = json.loads(cli(url, "followers", "--format", "json"))
    assert row["follower"] == key and row["finished_runs_behind"] == 1
    assert row["events_behind"] == 13 and row["moved_at"] is not None
    assert key in cli(url, "followers")


def test_a_newly_registered_case_gets_its_runs_judged(url: str) -> None:
    """tools.procedural has nothing to judge without a case; once the run's dataset is
    registered, the follower judges the runs of it that it had already passed."""
    rng = random.Random(9)
    runs = [run_events(rng, dataset="live", case_id="c1") for _ in range(2)]
    other = run_events(rng, dataset="elsewhere", case_id="c1")
    config = FollowConfig(rules=(Rule(name="tools.procedural"),), name="cases")
    with open_store(url) as store:
        for events in [*runs, other]:
            store.append(events)
        follower = Follower(store, config)
        follower.round()
        assert _verdicts(store, "tools.procedural") == Counter()
        case = Case(case_id="c1", expected_plan=["sql", "search"])
        store.datasets.register(Dataset("live", "1", (case,)))
        follower.round()
        judged = {t for t, _ in _verdicts(store, "tools.procedural")}
        assert judged == {r[0].trace_id for r in runs}
        follower.round()  # seen once: not again
        assert sum(follower.stats.added.values()) == 2


def test_a_restarted_follower_catches_up_from_its_cursor(url: str) -> None:
    rng = random.Random(4)
    with open_store(url) as store:
        first = Follower(store, _config("restart"))
        store.append(run_events(rng))
        first.round()
        later = [run_events(rng) for _ in range(3)]
        for events in later:
            store.append(events)
        # killed before its next round; a new one starts from the saved cursor
        second = Follower(store, _config("restart"))
        second.round()
        assert second.stats.runs_seen == 3
        assert sum(second.stats.added.values()) == 3
        assert set(_verdicts(store).values()) == {1}


def test_filters_choose_runs_by_agent_status_and_attributes(url: str) -> None:
    rng = random.Random(5)
    with open_store(url) as store:
        runs = [run_events(rng, agent=a, fail=f) for a in ("a", "b") for f in (False, True)]
        for events in runs:
            store.append(events)
        Follower(
            store, _config("filters", agents=frozenset({"a"}), statuses=frozenset({"ok"}))
        ).round()
        judged = {t for t, _ in _verdicts(store)}
    assert judged == {runs[0][0].trace_id}


def test_sampling_is_a_fixed_tenth_of_runs(sqlite_url: str) -> None:
    """A 10% rule judges 10% of 10,000 runs (within the binomial 99% interval), and the same
    runs on a second pass by another follower."""
    rng = random.Random(6)
    n = 10_000
    with open_store(sqlite_url) as store:
        events: list[Event] = []
        for _ in range(n):
            run = run_events(rng)
            events += [run[0], run[1], run[-2], run[-1]]  # start, plan, answer, end
        store.append(events)
        first = Follower(store, _config("sample-1", sample=0.1))
        while first.round():
            pass
        judged = sum(first.stats.added.values())
        low, high = scipy_stats.binom.interval(0.99, n, 0.1)
        assert low <= judged <= high
        assert first.stats.runs_seen == n
        second = Follower(store, _config("sample-2", sample=0.1))
        while second.round():
            pass
        assert sum(second.stats.added.values()) == 0  # any other run would add a verdict
        assert sum(second.stats.kept.values()) == judged


@pytest.mark.postgres
def test_two_followers_at_once_write_each_verdict_once(server_url: str) -> None:
    """Two followers of one config, on their own connections, while runs keep arriving."""
    rng = random.Random(7)
    runs = [run_events(rng) for _ in range(300)]
    stop = threading.Event()
    followers = []
    stores = [open_store(server_url) for _ in range(3)]
    try:
        for store in stores[:2]:
            followers.append(Follower(store, _config("pair")))
        threads = [threading.Thread(target=f.run, args=(stop,)) for f in followers]
        for t in threads:
            t.start()
        for events in runs:
            stores[2].append(events)
        finished = {r[0].trace_id for r in runs}
        deadline = 600
        while deadline and {t for t, _ in _verdicts(stores[2])} != finished:
            stop.wait(0.1)
            deadline -= 1
        stop.set()
        for t in threads:
            t.join()
        verdicts = _verdicts(stores[2])
        assert {t for t, _ in verdicts} == finished
        assert set(verdicts.values()) == {1}
        # neither did all the work
        assert all(sum(f.stats.added.values()) > 0 for f in followers)
        assert sum(sum(f.stats.added.values()) for f in followers) == len(runs)
    finally:
        for store in stores:
            store.close()


def test_config_files_name_the_place_of_a_mistake() -> None:
    good = parse(
        {
            "follow": {"name": "prod", "batch": 100},
            "scorer": [{"name": SCORER, "agents": "a", "sample": 0.5, "attributes": {"env": "p"}}],
        }
    )
    assert good.name == "prod" and good.batch == 100
    assert good.rules[0].agents == frozenset({"a"}) and good.rules[0].sample == 0.5
    for data, message in (
        ({"scorer": []}, "no [[scorer]] tables"),
        ({"scorer": [{"name": SCORER, "sampel": 0.1}]}, "scorer[0]: unknown key 'sampel'"),
        ({"scorer": [{"name": SCORER, "sample": 2}]}, "scorer[0].sample: 2 is out of range"),
        ({"scorer": [{"agents": ["a"]}]}, "scorer[0]: 'name' (the scorer) is required"),
        ({"follow": {"nme": "x"}, "scorer": [{"name": SCORER}]}, "follow: unknown key 'nme'"),
        ({"scorers": []}, "unknown table 'scorers'"),
        (
            {"scorer": [{"name": SCORER, "calls_per_minute": 0}]},
            "scorer[0].calls_per_minute: 0 would judge nothing (must be more than 0)",
        ),
        ({"scorer": [{"name": SCORER, "options": 3}]}, "scorer[0].options: expected a table"),
    ):
        with pytest.raises(ConfigFileError) as caught:
            parse(data, "scoring.toml")
        assert str(caught.value).startswith("scoring.toml: ")
        assert message in str(caught.value)
    with pytest.raises(ConfigFileError, match=r"scorer\[0\]: .*nope"):
        resolve(from_options(["nope"]))
    with pytest.raises(ConfigFileError, match="judges groups of runs"):
        resolve(from_options(["grammar.groups"]))
    with pytest.raises(ConfigFileError, match="is an LLM judge: give it a model"):
        resolve(from_options(["answer.reference"]))


def test_a_config_gives_scorers_the_options_batch_scoring_gives_them() -> None:
    """The options the docs promise: a [[scorer]] table's `options` (typed, from TOML) and
    --config KEY=VALUE with --follow (text) configure the scorer as `agentdocket score` does,
    version included; an option it does not take, or a value it refuses, names the rule."""
    typed = parse(
        {"scorer": [{"name": "answer.reference", "judge": "m", "options": {"retries": 4}}]}
    )
    [followed] = resolve(typed)
    assert followed.scorer.version == "1+retries=4" and followed.scorer.config["retries"] == 4
    assert followed.scorer.config["model"] == "m"
    [texted] = resolve(
        from_options(["tools.slot_fill"], options={"similarity": "all-MiniLM-L6-v2"})
    )
    assert texted.scorer.version == "2"  # the default: the same scorer
    for options, message in (
        ({"retries": "four"}, "option 'retries' takes int, not str"),
        ({"nope": 1}, "has no option 'nope'"),
    ):
        bad = parse({"scorer": [{"name": "answer.reference", "judge": "m", "options": options}]})
        with pytest.raises(ConfigFileError, match=rf"scorer\[0\]: .*{message}"):
            resolve(bad)
    with pytest.raises(ConfigFileError, match="takes 'all-MiniLM-L6-v2'"):
        resolve(from_options(["tools.slot_fill"], options={"similarity": "x"}))


@pytest.mark.postgres
def test_a_long_transaction_in_another_database_holds_no_follower_back(
    pg_url: str, empty_pg_url: str
) -> None:
    """The horizon counts this database's transactions only: an analyst's long transaction in
    another database of the cluster (one that holds a transaction id) leaves arrivals here
    readable at once; one in this database still holds them back."""
    rng = random.Random(28)
    elsewhere = admin(empty_pg_url)
    elsewhere.autocommit = False
    try:
        elsewhere.execute("SELECT pg_current_xact_id()")  # holds an xid, as a writer would
        with open_store(pg_url) as store:
            first = run_events(rng)
            store.append(first)
            arrived = store.arrivals.after(Position(), 1000)
            assert {a.trace_id for a in arrived} == {first[0].trace_id}
            here = admin(pg_url)
            here.autocommit = False
            try:
                here.execute("SELECT pg_current_xact_id()")
                later = run_events(rng)
                store.append(later)
                assert store.arrivals.after(arrived[-1].position, 1000) == []
            finally:
                here.rollback()
                here.close()
            assert {a.trace_id for a in store.arrivals.after(arrived[-1].position, 1000)} == {
                later[0].trace_id
            }
    finally:
        elsewhere.rollback()
        elsewhere.close()
