"""Real spans of frameworks no other test installs: the OTLP requests (traces and logs) their
stock exporters sent, captured with ``scripts/capture_otlp.py`` into ``tests/fixtures/otlp/``
(each folder's README says how), replayed as the receiver reads them, in the order they were
sent and reversed. Each run is then checked field by field, and scored.

Every capture holds the weather scenario of :mod:`tests.helpers.frameworks`: a correct run, a
run whose model passes the wrong city, and a run whose tool raises."""

from __future__ import annotations

import json

import pytest

from agentdocket.store import open_store
from tests.helpers import captures
from tests.helpers.captures import CAPTURED, Capture, check, replay, scenario_of
from tests.helpers.db import cli
from tests.helpers.frameworks import DATASET, dataset

SUPPORTED = [c for c in CAPTURED if c.supported]


@pytest.mark.parametrize("capture", SUPPORTED, ids=lambda c: c.folder)
@pytest.mark.parametrize("reverse", [False, True], ids=["in-order", "reversed"])
def test_a_captured_framework_lands_whole(sqlite_url: str, capture: Capture, reverse: bool) -> None:
    with open_store(sqlite_url) as store:
        store.datasets.register(dataset())
    replay(sqlite_url, capture.folder, reverse=reverse)
    assert set(check(sqlite_url, capture)) == capture.lost
    if capture.cases:  # the scorers judge a run against its case
        _check_verdicts(sqlite_url)
    if not reverse:
        _check_shown_and_exported(sqlite_url)


def _check_shown_and_exported(url: str) -> None:
    """``runs show`` prints each run's question and answer; the export's run record has them."""
    exported = {
        record["trace_id"]: record["run"]
        for line in cli(url, "export", "traces").splitlines()
        if line.startswith("{")
        for record in [json.loads(line)]
    }
    with open_store(url) as store:
        runs = store.reader.list_runs(limit=None)
    for run in runs:
        shown = cli(url, "runs", "show", run["trace_id"], "--width", "400")
        assert f"question: {run['question']}" in shown
        assert f"answer: {run['answer'] or '-'}" in shown
        record = exported[run["trace_id"]]
        assert (record.get("question"), record.get("answer")) == (run["question"], run["answer"])


def _check_verdicts(url: str) -> None:
    """The tool-use scorers pass the correct run and fail the wrong-argument one."""
    versions = {"planner.suffix_match": "1", "tools.slot_fill": "2", "tools.procedural": "1"}
    for scorer in versions:
        cli(url, "score", "--dataset", DATASET, "--scorer", scorer)
    with open_store(url) as store:
        verdicts = store.scoring.report_verdicts(versions, dataset=DATASET)
        by_name = {}
        for run in store.reader.list_runs(limit=None):
            trace = store.reader.read_trace(run["trace_id"])
            scenario = scenario_of(trace) if trace is not None else None
            assert scenario is not None
            by_name[scenario.name] = run["trace_id"]
    got = {(v.trace_id, v.scorer): v for v in verdicts}
    correct, wrong = by_name["correct"], by_name["wrong-argument"]
    assert got[(correct, "planner.suffix_match")].passed
    assert got[(correct, "tools.slot_fill")].passed
    assert got[(correct, "tools.procedural")].passed
    assert not got[(wrong, "tools.procedural")].passed
    assert got[(wrong, "planner.suffix_match")].passed
    assert not got[(wrong, "tools.slot_fill")].passed
    assert got[(wrong, "tools.slot_fill")].failure_type == "slot_fill:wrong_argument"


def test_the_conformance_table_in_the_docs_is_current() -> None:
    text = captures.DOC.read_text()
    table = text[text.index(captures.BEGIN) + len(captures.BEGIN) : text.index(captures.END)]
    assert table.strip() == captures.table(), "run: .venv/bin/python -m tests.helpers.captures"


# what each framework reported as prompt tokens read from the provider's cache, call by call,
# for the correct run (the scripted models report none on a first call)
CACHE_READ = {
    "langgraph-openllmetry": [0, 32],  # gen_ai.usage.cache_read.input_tokens
    "crewai": [0, 96],  # llm.token_count.prompt_details.cache_read
    "strands-default": [0, 48],
    "strands-latest": [0, 48],
    "adk-2": [None, 32],
    "openai-genai-1.3": [None, 48],  # a zero is not recorded
}
# and those written to it, under the name renamed in autumn 2026 (semantic-conventions-genai
# #440): gen_ai.usage.cache_write.input_tokens (opentelemetry-util-genai 1.3); a zero is not
# recorded. (Strands sends the older cache_creation.input_tokens on its agent spans only.)
CACHE_WRITE = {"openai-genai-1.3": [48, None]}


@pytest.mark.parametrize(
    ("folder", "field", "expected"),
    [(f, "cache_read_tokens", CACHE_READ[f]) for f in sorted(CACHE_READ)]
    + [(f, "cache_creation_tokens", CACHE_WRITE[f]) for f in sorted(CACHE_WRITE)],
)
def test_cache_tokens_are_read_where_the_framework_reports_them(
    sqlite_url: str, folder: str, field: str, expected: list[int | None]
) -> None:
    replay(sqlite_url, folder)
    with open_store(sqlite_url) as store:
        for run in store.reader.list_runs(limit=None):
            trace = store.reader.read_trace(run["trace_id"])
            assert trace is not None
            scenario = scenario_of(trace)
            if scenario is not None and scenario.name == "correct":
                calls = trace.of_kind("llm.called")
                assert [e.payload.get(field) for e in calls] == expected
                return
    raise AssertionError(f"{folder}: no correct run")
