"""The tracer API: an instrumented run lands as the expected events, with conventional span
attributes, and recording never breaks the agent."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, get_value

from agentdocket.events import Case, Event, validate_payload
from agentdocket.store import Store, open_store
from agentdocket.store.backends import backend_of
from agentdocket.tracer import Tracer
from tests.helpers.fresh import EVERY, fresh_url
from tests.helpers.recorder import Recorder


@pytest.fixture(params=EVERY)
def url(request: pytest.FixtureRequest) -> str:
    """Each kind of database, a Citus cluster's too."""
    return fresh_url(request)


@pytest.fixture
def recorder(url: str, tmp_path: Path) -> Iterator[Recorder]:
    r = Recorder(url, tmp_path / "spool")
    yield r
    r.close()


def _concerts() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.execute("CREATE TABLE singer (name TEXT, country TEXT)")
    conn.executemany(
        "INSERT INTO singer VALUES (?, ?)", [("Ana", "France"), ("Bo", "Sweden"), ("Cy", "France")]
    )
    return conn


def _record_full_run(tracer: Tracer, conn: sqlite3.Connection) -> str | None:
    case = Case(case_id="c7", question="How many singers are from France?")

    @tracer.tool
    def lookup(country: str, limit: int = 10) -> list[str]:
        return [r[0] for r in conn.execute("SELECT name FROM singer WHERE country = ?", (country,))]

    with tracer.run(
        "qa",
        case=case,
        dataset="ds",
        dataset_version="2",
        strategy="sequential",
        models={"planner": "m-plan", "response_former": "m-resp"},
        agent_version="1.2",
        attributes={"team": "blue"},
    ) as run:
        run.message("user", case.question or "")
        run.plan(["sql", {"tool": "answer", "text": "say it"}], text="1. sql\n2. answer")
        with run.tool_call("sql", {"query": "SELECT count(*) FROM singer"}) as call:
            rows = run.execute_sql(conn, "SELECT count(*) FROM singer WHERE country = 'France'")
            call.result(rows)
        with (
            pytest.raises(sqlite3.OperationalError),
            run.tool_call("sql", {"query": "SELECT nope FROM singer"}),
        ):
            run.execute_sql(conn, "SELECT nope FROM singer")
        lookup("Sweden", limit=3)
        run.retrieval("singer tables", [("singer", 0.9), {"id": "song", "score": 0.2, "text": "x"}])
        with run.llm_call(
            "m-resp", "response_former", [("user", "Answer: 2")], temperature=0.2
        ) as c:
            c.output("There are 2.", input_tokens=12, output_tokens=4)
        run.respond("There are 2 singers from France.")
    return run.trace_id


def test_an_instrumented_run_lands_as_the_expected_events(recorder: Recorder) -> None:
    trace_id = _record_full_run(recorder.tracer, _concerts())
    recorder.flush()
    assert trace_id is not None
    with open_store(recorder.exporter.url) as store:
        events = store.reader.events(trace_id)
        run = store.reader.run(trace_id)
    kinds = [e.kind for e in events]
    assert kinds == [
        "run.started",
        "message",
        "plan",
        "tool.called",
        "sql.executed",
        "tool.returned",
        "tool.called",
        "sql.executed",
        "tool.returned",
        "tool.called",
        "tool.returned",
        "retrieval",
        "llm.called",
        "response",
        "run.finished",
    ]
    assert [e.seq for e in events] == list(range(len(events)))
    # every payload is stored in its validated, normalised form (the exporter builds tool
    # payloads without re-validating them: this holds it to that)
    assert all(validate_payload(e.kind, e.payload) == e.payload for e in events)
    root = events[0].span_id
    by_kind = _by_kind(events)
    # steps hang under the run, SQL under the tool call that ran it
    assert events[0].parent_span_id is None
    assert all(e.parent_span_id == root for e in events[1:-1] if e.kind != "sql.executed")
    called, ok_sql = by_kind["tool.called"][0], by_kind["sql.executed"][0]
    assert ok_sql.parent_span_id == called.span_id
    assert by_kind["tool.returned"][0].span_id == called.span_id
    assert called.payload["call_id"] == by_kind["tool.returned"][0].payload["call_id"]
    assert called.payload["arguments"] == {"query": "SELECT count(*) FROM singer"}
    assert by_kind["tool.returned"][0].payload["result"] == [[2]]
    assert ok_sql.payload["columns"] == ["count(*)"] and ok_sql.payload["row_count"] == 1
    assert ok_sql.payload["database"] == "sqlite"
    bad_sql, bad_return = by_kind["sql.executed"][1], by_kind["tool.returned"][1]
    assert bad_sql.payload["error"] == "OperationalError: no such column: nope"
    assert bad_return.payload["error"] == "OperationalError: no such column: nope"
    decorated = by_kind["tool.called"][2]
    assert decorated.payload["tool"] == "lookup"
    assert decorated.payload["arguments"] == {"country": "Sweden", "limit": 3}
    assert by_kind["tool.returned"][2].payload["result"] == ["Bo"]
    docs = by_kind["retrieval"][0].payload["documents"]
    assert [(d["id"], d["score"]) for d in docs] == [("singer", 0.9), ("song", 0.2)]
    llm = by_kind["llm.called"][0].payload
    assert (llm["model"], llm["role"], llm["temperature"]) == ("m-resp", "response_former", 0.2)
    assert (llm["input_tokens"], llm["output_tokens"]) == (12, 4)
    assert llm["output_messages"][0]["content"] == "There are 2."
    assert by_kind["plan"][0].payload["steps"][1] == {
        "tool": "answer",
        "text": "say it",
        "arguments": None,
        "call_id": None,
    }
    assert by_kind["response"][0].payload["text"] == "There are 2 singers from France."
    assert run is not None
    assert (run["agent"], run["agent_version"], run["strategy"]) == ("qa", "1.2", "sequential")
    assert run["question"] == "How many singers are from France?"
    assert (run["dataset"], run["dataset_version"], run["case_id"]) == ("ds", "2", "c7")
    assert run["models"] == {"planner": "m-plan", "response_former": "m-resp"}
    assert run["attributes"] == {"team": "blue"}
    assert (run["status"], run["n_tool_calls"], run["n_sql"], run["n_errors"]) == ("ok", 3, 2, 2)


def _by_kind(events: list[Event]) -> dict[str, list[Event]]:
    out: dict[str, list[Event]] = {}
    for e in events:
        out.setdefault(e.kind, []).append(e)
    return out


@pytest.mark.parametrize("url", ["sqlite"], indirect=True)
def test_spans_carry_openinference_and_genai_attributes(recorder: Recorder) -> None:
    _record_full_run(recorder.tracer, _concerts())
    run = recorder.span("invoke_agent qa")
    assert run.attributes is not None
    assert run.attributes["openinference.span.kind"] == "AGENT"
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "qa"
    assert run.attributes["input.value"] == "How many singers are from France?"
    assert run.attributes["output.value"] == "There are 2 singers from France."
    tool = recorder.span("tool lookup").attributes
    assert tool is not None
    assert tool["openinference.span.kind"] == "TOOL" and tool["tool.name"] == "lookup"
    assert tool["gen_ai.operation.name"] == "execute_tool" and tool["gen_ai.tool.name"] == "lookup"
    assert (
        tool["input.value"]
        == tool["gen_ai.tool.call.arguments"]
        == '{"country":"Sweden","limit":3}'
    )
    assert tool["output.value"] == tool["gen_ai.tool.call.result"] == '["Bo"]'
    llm = recorder.span("chat m-resp").attributes
    assert llm is not None
    assert llm["openinference.span.kind"] == "LLM" and llm["llm.model_name"] == "m-resp"
    assert llm["gen_ai.request.model"] == "m-resp" and llm["gen_ai.request.temperature"] == 0.2
    assert llm["llm.input_messages.0.message.role"] == "user"
    assert llm["llm.output_messages.0.message.content"] == "There are 2."
    assert llm["gen_ai.usage.input_tokens"] == 12 and llm["llm.token_count.total"] == 16
    retrieval = recorder.span("retrieval").attributes
    assert retrieval is not None and retrieval["openinference.span.kind"] == "RETRIEVER"
    assert retrieval["retrieval.documents.1.document.id"] == "song"
    assert retrieval["retrieval.documents.1.document.content"] == "x"
    sql = next(s for s in recorder.memory.get_finished_spans() if s.name == "sql").attributes
    assert sql is not None and sql["db.system.name"] == "sqlite"
    assert sql["db.query.text"] == "SELECT count(*) FROM singer WHERE country = 'France'"
    # a run is a trace of its own, linked to the span that was current when it began
    outer = recorder.provider.get_tracer("host").start_as_current_span("request")
    with outer as request, recorder.tracer.run("qa") as inner:
        pass
    spans = [s for s in recorder.memory.get_finished_spans() if s.name == "invoke_agent qa"]
    linked = spans[-1]
    assert inner.trace_id != format(request.get_span_context().trace_id, "032x")
    assert [link.context.span_id for link in linked.links] == [request.get_span_context().span_id]


@pytest.mark.parametrize("url", ["sqlite"], indirect=True)
def test_recording_never_breaks_the_agent(recorder: Recorder) -> None:
    class Unprintable:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    with pytest.raises(KeyError, match="boom"), recorder.tracer.run("qa") as run:
        with run.tool_call("weird", {"x": Unprintable()}) as call:
            call.result(Unprintable())
        raise KeyError("boom")  # the agent's own error propagates unchanged
    recorder.flush()
    with open_store(recorder.exporter.url) as store:
        assert run.trace_id is not None
        events = store.reader.events(run.trace_id)
        finished = events[-1].payload
        assert (finished["status"], finished["error"]) == ("error", "KeyError: 'boom'")
        assert events[1].payload["tool"] == "weird"
    # a run outside any configured provider records nothing and breaks nothing
    with Tracer().run("qa") as bare:
        bare.plan(["x"])
        bare.respond("fine")


def test_async_tools_and_threads(recorder: Recorder) -> None:
    @recorder.tracer.tool(name="fetch")
    async def fetch(n: int) -> int:
        await asyncio.sleep(0)
        return n * 2

    def agent(i: int, out: list[str | None]) -> None:
        with recorder.tracer.run("qa", question=f"q{i}") as run:
            for k in range(5):
                asyncio.run(fetch(k))
            run.respond(str(i))
        out.append(run.trace_id)

    ids: list[str | None] = []
    threads = [threading.Thread(target=agent, args=(i, ids)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    recorder.flush()
    with open_store(recorder.exporter.url) as store:
        for trace_id in ids:
            assert trace_id is not None
            events = store.reader.events(trace_id)
            assert [e.seq for e in events] == list(range(13))
            returned = [e.payload["result"] for e in events if e.kind == "tool.returned"]
            assert returned == [0, 2, 4, 6, 8]


@pytest.mark.parametrize("url", ["sqlite"], indirect=True)
def test_the_exporters_database_work_is_not_traced(url: str, tmp_path: Path) -> None:
    seen: list[object] = []

    class Watching(Store):
        def append(self, events: Any, batch_size: int = 10_000, **options: Any) -> Any:
            seen.append(get_value(_SUPPRESS_INSTRUMENTATION_KEY))
            return super().append(events, batch_size, **options)

    def watching() -> Store:
        return Watching(backend_of(url).open(url))

    r = Recorder(url, tmp_path / "spool", store_factory=watching)
    with r.tracer.run("qa") as run:
        run.respond("ok")
    r.flush()
    r.close()
    assert seen == [True]


def test_configure_records_through_the_module_level_api(tmp_path: Path) -> None:
    from agentdocket import tracer

    url = f"sqlite:///{tmp_path / 'agentdocket.db'}"
    configured = tracer.configure(url, spool_dir=tmp_path / "spool", set_global=False)
    try:
        with pytest.raises(RuntimeError, match="already configured"):
            tracer.configure(url, set_global=False)

        @tracer.tool(name="double")
        def double(x: int) -> int:
            return 2 * x

        with tracer.run("qa", question="2 x 21?", strategy="iterative") as run:
            assert tracer.current_run() is run
            run.respond(str(double(21)))
        assert tracer.current_run() is None
        configured.flush()
        assert configured.stats.delivered == 5 and configured.stats.failures == 0
    finally:
        tracer.shutdown()
    assert tracer.get_tracer() is not configured.tracer
    with open_store(url) as store:
        assert run.trace_id is not None
        kinds = [e.kind for e in store.reader.events(run.trace_id)]
    assert kinds == ["run.started", "tool.called", "tool.returned", "response", "run.finished"]
    tracer.shutdown()  # a second shutdown is harmless


def test_a_users_feedback_through_the_tracer_is_a_label_of_the_run(recorder: Recorder) -> None:
    with recorder.tracer.run("qa") as run:
        run.respond("42")
        run.feedback("down", author="user:7", comment="not what I asked", label_id="fb-1")
    run.feedback(4, author="ana", rubric="quality")  # after the run: the same trace
    run.feedback("sideways", author="user:8")  # not a thumbs value: kept as a step, noted
    recorder.flush()
    assert run.trace_id is not None
    with open_store(recorder.exporter.url) as store:
        labels = store.labels.of_runs([run.trace_id])
        assert [(x.rubric, x.value, x.author, x.source) for x in labels] == [
            ("thumbs", False, "user:7", "tracer"),
            ("quality", 4, "ana", "tracer"),
        ]
        assert labels[0].comment == "not what I asked" and labels[0].label_id == "fb-1"
        kinds = [e.kind for e in store.reader.events(run.trace_id)]
        assert kinds.count("label") == 2 and kinds.count("step") == 1
        row = store.reader.run(run.trace_id)
        assert row is not None and row["n_events"] == len(kinds) - 2  # labels not counted
