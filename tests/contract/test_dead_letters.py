"""One bad event never stops ingestion, on both databases: text PostgreSQL cannot hold is
stored reversibly; a record the database refuses is isolated from its batch and kept as a dead
letter, the rest is stored, and retrying stores it once the cause is fixed."""

from __future__ import annotations

import dataclasses
import json
import random
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentdocket.cli import main
from agentdocket.events import Case, Dataset, Event, event_to_json
from agentdocket.importers.interchange_export import export_records
from agentdocket.ingest.sink import Sink
from agentdocket.store import RecordRefused, Store, StoreUnavailable, open_store
from agentdocket.store.escaping import escape, unescape
from agentdocket.store.projections import Projection
from agentdocket.store.projector import Projector
from tests.helpers.db import accept_events_again, refuse_events_containing
from tests.helpers.factory import AWKWARD, awkward_run_events, many_runs, run_events
from tests.helpers.fresh import EVERY, fresh_url


@pytest.fixture(params=EVERY)
def url(request: pytest.FixtureRequest) -> str:
    """Each kind of database, a Citus cluster's too."""
    return fresh_url(request)


def _poisoned(event: Event, marker: str = "poison") -> Event:
    payload = dict(event.payload)
    payload["result"] = f"a {marker} result"
    return dataclasses.replace(event, payload=payload)


def _json(url: str, *args: str, code: int = 0) -> object:
    result = CliRunner().invoke(main, ["--database", url, *args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


# --- escaping ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["", "plain", "\x00", "\ufdd0", "\ufdd00", "\ufdd0\ufdd0", "\ud800", "\udfff\ud800", AWKWARD],
)
def test_escaping_is_reversible(text: str) -> None:
    value = {text: [text, {"k": text}], "n": 1}
    escaped = escape(value)
    assert "\x00" not in json.dumps(escaped, ensure_ascii=False)
    assert unescape(escaped) == value


def test_clean_payloads_pass_as_the_same_object() -> None:
    value = {"a": ["b", 1, None], "c": {"d": 2.5}}
    assert escape(value) is value


def test_text_postgres_cannot_hold_is_stored_and_read_back_intact(store: Store) -> None:
    """NUL in a tool result, a message and a run attribute (and the escape character and a
    lone surrogate): stored, read back and exported as they came, nothing in dead letters."""
    events = awkward_run_events(random.Random(1))
    normal = run_events(random.Random(2))
    assert store.append(events + normal).inserted == len(events) + len(normal)
    trace = events[0].trace_id
    assert [e.payload for e in store.reader.events(trace)] == [e.payload for e in events]
    [record] = [r for r in export_records(store) if r["trace_id"] == trace]
    messages = [s["payload"]["content"] for s in record["steps"] if s["kind"] == "message"]
    assert messages == [AWKWARD, AWKWARD]
    assert store.reader.run(trace)["attributes"]["note"] == AWKWARD  # type: ignore[index]
    [batch] = list(store.scoring.batches(trace_ids=[trace]))
    assert [e.payload for e in batch[0].events] == [e.payload for e in events]
    assert store.dead_letters.counts() == {"total": 0, "unresolved": 0}
    case = Case(case_id="c\x00", question=AWKWARD, reference_answer="x\x00y")
    store.datasets.register(Dataset("nul", "1", (case,)))
    assert store.datasets.get("nul", "1").cases == (case,)


# --- refused records --------------------------------------------------------------------------


def test_a_refused_event_is_kept_as_a_dead_letter_and_the_rest_is_stored(url: str) -> None:
    events = many_runs(40, seed=3)
    middle = next(i for i, e in enumerate(events) if e.kind == "tool.returned" and i > 200)
    bad = _poisoned(events[middle])
    batch = [*events[:middle], bad, *events[middle + 1 :]]
    refuse_events_containing(url, "poison")
    with open_store(url) as store:
        result = store.append(batch, source="test batch")
        assert (result.inserted, result.duplicates, result.refused) == (len(batch) - 1, 0, 1)
        assert store.reader.counts()["events"] == len(batch) - 1
        assert store.reader.counts()["runs"] == 40
        [letter] = store.dead_letters.letters()
        assert letter["event_id"] == str(bad.event_id) and letter["trace_id"] == bad.trace_id
        assert "events holding poison are refused" in letter["error"]
        assert letter["source"] == "test batch" and not letter["resolved"]
        assert json.loads(letter["raw"]) == json.loads(json.dumps(event_to_json(bad)))
        # sent again (a client's retry, a spool replay): still one dead letter, nothing doubled
        again = store.append(batch, source="another")
        assert (again.inserted, again.duplicates, again.refused) == (0, len(batch) - 1, 1)
        assert store.dead_letters.counts() == {"total": 1, "unresolved": 1}
        # still refused: retrying keeps it, and says so
        [tried] = store.dead_letters.retry()
        assert tried.outcome == "refused" and "poison" in (tried.error or "")
    accept_events_again(url)
    listed = _json(url, "dead-letters", "list", "--format", "json")
    assert [d["letter_id"] for d in listed["dead_letters"]] == [letter["letter_id"]]  # type: ignore[index]
    assert _json(url, "dead-letters", "retry", "--all", "--format", "json") == [
        {"letter_id": letter["letter_id"], "outcome": "stored", "error": None}
    ]
    with open_store(url) as store:
        assert [
            e.payload for e in store.reader.events(bad.trace_id) if e.event_id == bad.event_id
        ] == [bad.payload]
        assert store.dead_letters.counts() == {"total": 1, "unresolved": 0}
        assert store.dead_letters.letters() == []
        [resolved] = store.dead_letters.letters(resolved=True)
        assert resolved["resolved"]


def test_a_value_no_database_takes_is_refused_alone(store: Store) -> None:
    """An integer past 64 bits fails while the row is encoded, before the database sees it:
    the same path, a dead letter with the number intact in its raw content."""
    events = run_events(random.Random(5))
    big = dataclasses.replace(events[3], payload={**events[3].payload, "result": 2**70})
    result = store.append([*events[:3], big, *events[4:]])
    assert (result.inserted, result.refused) == (len(events) - 1, 1)
    [letter] = store.dead_letters.letters()
    assert str(2**70) in letter["raw"]
    assert letter["error"].startswith(("TypeError", "OverflowError"))
    [tried] = store.dead_letters.retry([letter["letter_id"][:8]])
    assert tried.outcome == "refused"


def test_a_fault_of_our_own_on_one_record_is_isolated_like_a_refusal(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our own code failing on one run's events (here the projector, made to fail on one
    trace) is isolated where a refusal is, in the store: through the receiver's sink the
    other runs are stored, that run's events are dead letters naming the fault, and the sink
    reports no outage. Once the fault is gone, retrying stores them."""
    runs = [run_events(random.Random(40 + i)) for i in range(5)]
    broken = runs[2][0].trace_id
    apply = Projector.apply

    def failing(
        self: Projector,
        conn: Any,
        proj: Projection,
        months: dict[str, date],
        new: frozenset[str] = frozenset(),
    ) -> None:
        if broken in proj.runs:
            raise KeyError(f"no reading for {broken}")
        apply(self, conn, proj, months, new)

    monkeypatch.setattr(Projector, "apply", failing)
    sink = Sink(url, spool_dir=tmp_path / "spool", source="receiver")
    try:
        assert sink.deliver([e for run in runs for e in run], n_spans=5) == "stored"
        assert sink.stats.refused == len(runs[2]) and sink.stats.failures == 0
        assert sink.spool.pending() == 0
    finally:
        sink.close()
    with open_store(url) as store:
        assert {r["trace_id"] for r in store.reader.list_runs()} == {
            run[0].trace_id for run in runs if run[0].trace_id != broken
        }
        letters = store.dead_letters.letters()
        assert {d["event_id"] for d in letters} == {str(e.event_id) for e in runs[2]}
        assert all(d["code"] == "internal" and "KeyError" in d["error"] for d in letters)
        monkeypatch.setattr(Projector, "apply", apply)
        assert {t.outcome for t in store.dead_letters.retry()} == {"stored"}
        assert store.reader.run(broken) is not None


def test_an_import_with_a_refused_event_names_it_and_writes_nothing(url: str) -> None:
    events = run_events(random.Random(6))
    refuse_events_containing(url, "poison")
    with open_store(url) as store:
        with pytest.raises(RecordRefused) as caught:
            store.import_all([], [*events[:4], _poisoned(events[4]), *events[5:]])
        assert caught.value.event_id == str(events[4].event_id)
        assert (
            store.reader.counts()["events"] == 0 and store.dead_letters.letters(resolved=None) == []
        )


def test_import_traces_names_file_line_and_event(url: str, tmp_path: Path) -> None:
    first, second = run_events(random.Random(7)), run_events(random.Random(8))
    source = open_store(f"sqlite:///{tmp_path / 'source.db'}")
    source.append(first + [_poisoned(e) if e.kind == "tool.returned" else e for e in second])
    exported = tmp_path / "runs.jsonl"
    exported.write_text("".join(json.dumps(r) + "\n" for r in export_records(source)))
    source.close()
    refuse_events_containing(url, "poison")
    result = CliRunner().invoke(main, ["--database", url, "import", "traces", str(exported)])
    assert result.exit_code == 1
    assert f"{exported}: line " in result.output and "tool.returned event (seq" in result.output
    assert "events holding poison are refused" in result.output
    assert "nothing was imported" in result.output and "Traceback" not in result.output
    with open_store(url) as store:
        assert store.reader.counts()["events"] == 0


# --- the error tree ---------------------------------------------------------------------------


def test_an_unreachable_database_is_transient() -> None:
    with pytest.raises(StoreUnavailable) as caught:
        open_store("postgresql+psycopg://nobody:x@127.0.0.1:9/none?connect_timeout=2")
    assert caught.value.transient


def test_the_command_line_never_shows_a_driver_traceback(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["--database", "postgresql+psycopg://nobody:x@127.0.0.1:9/none", "runs", "list"]
    )
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and "Traceback" not in result.output
    assert "127.0.0.1:9" in result.output
