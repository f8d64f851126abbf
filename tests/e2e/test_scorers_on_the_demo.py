"""The demo's deliberate mistakes, found by the tool-use and interaction scorers: the demo
agent recorded through the tracer into SQLite, then each scorer on each stored trace."""

from __future__ import annotations

import pytest

from agentdocket import scorers
from agentdocket.demo import run_demo
from agentdocket.events import Trace
from agentdocket.store import open_store


@pytest.fixture(scope="module")
def demo_traces(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Trace]:
    tmp = tmp_path_factory.mktemp("demo")
    url = f"sqlite:///{tmp / 'agentdocket.db'}"
    run_demo(url, spool_dir=tmp / "spool")
    with open_store(url) as store:
        traces = [t for batch in store.scoring.batches(dataset="concerts-demo") for t in batch]
    out = {}
    for t in traces:
        started = t.started
        assert started is not None and started.strategy and started.case_id
        out[(started.strategy, started.case_id)] = t
    assert len(out) == 30
    return out


# (strategy, case) -> (planner passed, slot fill failure type or None)
EXPECTED = {
    ("sequential", "q03"): (True, None),  # an erroring query, then the right one: 1 extra step
    ("sequential", "q06"): (True, "slot_fill:wrong_argument"),  # LIKE instead of =
    ("sequential", "q08"): (True, "slot_fill:wrong_argument"),  # >= 2 instead of > 2
    ("iterative", "q02"): (True, "slot_fill:wrong_argument"),  # sorted the wrong way
    ("iterative", "q04"): (True, "slot_fill:wrong_argument"),  # max of one song, not the sum
    ("iterative", "q05"): (True, "slot_fill:wrong_argument"),  # 'london': no rows
    ("iterative", "q07"): (False, "slot_fill:missing_call"),  # stopped before 2022
    ("iterative", "q09"): (False, "slot_fill:missing_call"),  # stopped after one query
    ("no-interaction", "q01"): (False, "slot_fill:missing_call"),
}


def test_tool_use_scorers_on_the_demo(demo_traces: dict[tuple[str, str], Trace]) -> None:
    planner = scorers.get("planner.suffix_match")
    slots = scorers.get("tools.slot_fill")
    procedural = scorers.get("tools.procedural")
    for key, trace in demo_traces.items():
        plan_passed, slot_failure = EXPECTED.get(key, (key[0] != "no-interaction", None))
        if key[0] == "no-interaction":
            slot_failure = "slot_fill:missing_call"
        p, s, both = planner.verdict(trace), slots.verdict(trace), procedural.verdict(trace)
        assert p is not None and s is not None and both is not None
        assert p.passed is plan_passed, key
        assert s.failure_type == slot_failure, key
        assert s.passed is (slot_failure is None), key
        assert both.passed is (plan_passed and slot_failure is None), key
    extra = planner.verdict(demo_traces[("sequential", "q03")])
    assert extra is not None and extra.details["extra_steps"] == 1
    assert extra.details["extra"] == ["sql"]
    none = planner.verdict(demo_traces[("no-interaction", "q04")])
    assert none is not None and none.failure_type == "planner:no_plan"


def test_interaction_metrics_on_the_demo(demo_traces: dict[tuple[str, str], Trace]) -> None:
    metrics = scorers.get("interaction.metrics")
    q03 = metrics.verdict(demo_traces[("sequential", "q03")])
    assert q03 is not None and q03.passed is None
    assert q03.details["sql_generated"] == 2 and q03.details["sql_valid"] == 1
    assert q03.details["answer_length"] == len(
        [
            "The",
            "average",
            "age",
            "of",
            "the",
            "singers",
            "who",
            "performed",
            "in",
            "2023",
            "is",
            "34.8.",
        ]
    )
    empty = metrics.verdict(demo_traces[("iterative", "q05")])
    assert empty is not None and (empty.details["sql_generated"], empty.details["sql_valid"]) == (
        1,
        0,
    )
    guess = metrics.verdict(demo_traces[("no-interaction", "q02")])
    assert guess is not None and guess.details["plan_length"] == guess.details["sql_generated"] == 0
