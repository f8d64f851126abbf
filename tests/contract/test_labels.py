"""People's labels and annotation queues on every backend: labels are events of the run's trace
(stored once, superseded not overwritten, outside the run's counts and the scorers' inputs,
untouched by a rebuild); rubrics are immutable; queues hand each item to its quota of
annotators and never the same item twice to one."""

from __future__ import annotations

import random
import threading
from datetime import timedelta

import pytest

from agentdocket.events import Label
from agentdocket.events.labels import label_event
from agentdocket.events.rubrics import Rubric
from agentdocket.scorers import get as get_scorer
from agentdocket.store import Store, open_store
from agentdocket.store.labels import RubricConflict, latest
from agentdocket.store.queues import QueueError
from tests.helpers.factory import T0, run_events
from tests.helpers.fresh import EVERY, fresh_url

HELPFUL = Rubric(name="helpful", question="Did the answer help?", kind="pass_fail")


@pytest.fixture(params=EVERY)
def url(request: pytest.FixtureRequest) -> str:
    return fresh_url(request)


def _label(trace_id: str, author: str, value: object, n: int, **kw: object) -> Label:
    return Label(
        label_id=f"{author}-{trace_id}-{n}",
        subject_trace_id=trace_id,
        rubric="helpful",
        author=author,
        source="cli",
        value=value,  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


def _runs(store: Store, n: int) -> list[str]:
    rng = random.Random(7)
    ids = []
    for _ in range(n):
        events = run_events(rng)
        store.append(events)
        ids.append(events[0].trace_id)
    return ids


def test_labels_are_events_kept_once_and_superseded_not_overwritten(url: str) -> None:
    with open_store(url) as store:
        (tid,) = _runs(store, 1)
        before = store.reader.run(tid)
        first = label_event(_label(tid, "ann", False, 1), ts=T0 + timedelta(hours=1))
        second = label_event(_label(tid, "ann", True, 2), ts=T0 + timedelta(hours=2))
        other = label_event(_label(tid, "bob", False, 1), ts=T0 + timedelta(minutes=90))
        assert store.append([first, second, other]).inserted == 3
        assert store.append([first, second]).inserted == 0  # the same ids again: nothing new
        given = store.labels.of_runs([tid])
        assert [(g.author, g.value) for g in given] == [
            ("ann", False),
            ("bob", False),
            ("ann", True),
        ]
        assert {(g.author, g.value) for g in latest(given)} == {("ann", True), ("bob", False)}
        # outside the run's row and the scorers' inputs
        after = store.reader.run(tid)
        assert before is not None and after is not None
        assert after["n_events"] == before["n_events"] and after["n_steps"] == before["n_steps"]
        (trace,) = store.scoring.traces([tid], None)
        assert all(e.kind != "label" for e in trace.events)
        # a rebuild of the projections leaves them as they were
        store.projections.rebuild()
        assert store.labels.of_runs([tid]) == given
        assert [g.author for g in store.labels.given(rubric="helpful", author="bob")] == ["bob"]


def test_a_label_on_an_unknown_run_is_kept_and_meets_the_run_when_it_arrives(url: str) -> None:
    with open_store(url) as store:
        events = run_events(random.Random(3))
        tid = events[0].trace_id
        store.append([label_event(_label(tid, "user:7", False, 1))])
        assert store.reader.run(tid) is None
        store.append(events)
        assert store.reader.run(tid) is not None
        assert [g.value for g in store.labels.of_runs([tid])] == [False]


def test_a_label_leaves_verdicts_alone_and_rescoring_leaves_labels(url: str) -> None:
    from agentdocket.scorers.runner import score_runs

    with open_store(url) as store:
        ids = _runs(store, 3)
        scorer = get_scorer("interaction.metrics")
        score_runs(store, [scorer])
        before = sorted(h for _, h in store.scoring.verdict_keys(scorer.name, scorer.version, ids))
        store.append([label_event(_label(t, "ann", True, 1)) for t in ids])
        result = score_runs(store, [scorer])
        after = sorted(h for _, h in store.scoring.verdict_keys(scorer.name, scorer.version, ids))
        tally = result.tallies[(scorer.name, scorer.version)]
        assert after == before and (tally.added, tally.kept) == (0, 3)
        assert len(store.labels.of_runs(ids)) == 3


def test_rubrics_are_immutable_per_version(url: str) -> None:
    with open_store(url) as store:
        assert store.labels.register_rubric(HELPFUL)
        assert not store.labels.register_rubric(HELPFUL)
        changed = Rubric(name="helpful", question="Was it right?", kind="pass_fail")
        with pytest.raises(RubricConflict, match="immutable"):
            store.labels.register_rubric(changed)
        newer = Rubric(name="helpful", version="2", question="Was it right?", kind="pass_fail")
        assert store.labels.register_rubric(newer)
        assert store.labels.rubric("helpful") == newer
        assert store.labels.rubric("helpful", "1") == HELPFUL
        assert store.labels.rubric("thumbs") is not None  # built in
        assert store.labels.rubric("nope") is None


def test_a_queue_gives_each_item_its_quota_and_no_annotator_an_item_twice(url: str) -> None:
    with open_store(url) as store:
        ids = _runs(store, 6)
        store.labels.register_rubric(HELPFUL)
        for name in ("ann", "bob", "cy"):
            store.queues.add_annotator(name)
        queue = store.queues.create(
            "q1",
            rubrics=[("helpful", "1")],
            per_item=2,
            items=ids,
            members=["ann", "bob", "cy"],
            selection={"traces": len(ids)},
        )
        seen: dict[str, list[str]] = {"ann": [], "bob": [], "cy": []}
        lock = threading.Lock()

        def work(who: str) -> None:
            with open_store(url) as mine:
                while (item := mine.queues.next_item(queue, who)) is not None:
                    n = len(seen[who])
                    mine.append([label_event(_label(item, who, n % 2 == 0, n, queue="q1"))])
                    with lock:
                        seen[who].append(item)

        threads = [threading.Thread(target=work, args=(w,)) for w in seen]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for who, items in seen.items():
            assert len(items) == len(set(items)), f"{who} saw an item twice"
        counts = {i: sum(i in items for items in seen.values()) for i in ids}
        assert set(counts.values()) == {2}, counts
        progress = store.queues.progress(queue)
        assert (progress.complete, progress.labels) == (6, 12)
        assert all(p["remaining"] == 0 for p in progress.by_annotator.values())


def test_a_skip_passes_the_item_on_and_a_member_only_sees_their_queues(url: str) -> None:
    with open_store(url) as store:
        ids = _runs(store, 2)
        token = store.queues.add_annotator("ann")
        store.queues.add_annotator("bob")
        store.queues.add_annotator("eve")
        assert store.queues.annotator(token) == "ann"
        assert store.queues.annotator("wrong") is None
        queue = store.queues.create(
            "q2",
            rubrics=[("thumbs", "1")],
            per_item=1,
            items=ids,
            members=["ann", "bob"],
            selection={},
        )
        first = store.queues.next_item(queue, "ann")
        assert first == ids[0]
        skip = Label(
            label_id="s1",
            subject_trace_id=first,
            rubric="thumbs",
            author="ann",
            source="queue",
            queue="q2",
            skipped="cannot tell",
        )
        store.append([label_event(skip)])
        # ann moves on; her skipped item is still open for bob
        assert store.queues.next_item(queue, "ann") == ids[1]
        assert store.queues.next_item(queue, "bob") == ids[0]
        assert store.queues.names("eve") == []
        with pytest.raises(QueueError, match="not an annotator"):
            store.queues.next_item(queue, "eve")
        with pytest.raises(QueueError, match="exists"):
            store.queues.create(
                "q2",
                rubrics=[("thumbs", "1")],
                per_item=1,
                items=ids,
                members=["ann"],
                selection={},
            )
        with pytest.raises(QueueError, match="at least 3 members"):
            store.queues.create(
                "q3",
                rubrics=[("thumbs", "1")],
                per_item=3,
                items=ids,
                members=["ann", "bob"],
                selection={},
            )
