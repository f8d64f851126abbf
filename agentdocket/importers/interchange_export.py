"""Export of runs in the interchange format (see :mod:`agentdocket.importers.interchange`):
JSONL, one run per line, and Parquet with flat run columns for analysis."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from agentdocket.events import Case, Event, RunFinished, RunStarted, event_to_json, format_ts
from agentdocket.events.readings import Candidate, answer_candidate, best, question_candidate
from agentdocket.importers.interchange import ENVELOPE
from agentdocket.store import Store, VerdictRow


def _envelope(event: Event) -> dict[str, Any]:
    """The event's envelope fields, in the form the spool uses for whole events."""
    whole = event_to_json(event)
    return {key: whole[key] for key in ENVELOPE}


def export_records(
    store: Store, *, dataset: str | None = None, batch_size: int = 1000
) -> Iterator[dict[str, Any]]:
    """The interchange records of the stored runs (of ``dataset``), events as stored (each
    record whole: :func:`write_traces_jsonl` writes a large trace without holding it)."""
    for run in store.reader.stored_runs(dataset=dataset, batch_size=batch_size):
        yield to_record(run.trace_id, run.events, run.case, run.dataset, run.dataset_version)


class _Record:
    """One export line built an event at a time: the run's fields (from its run.started and
    run.finished, its question and answer as the runs projection reads them) kept here, each
    step and verdict handed back as it comes, to be kept or written."""

    def __init__(self) -> None:
        self.run: dict[str, Any] = {}
        self.question: Candidate | None = None
        self.answer: Candidate | None = None

    def add(self, event: Event) -> tuple[str, dict[str, Any]] | None:
        """The event's item, with where it goes ("steps" or "verdicts"); None for the run's
        own start and finish, which are fields of ``run``."""
        run = self.run
        self.question = best(self.question, question_candidate(event))
        self.answer = best(self.answer, answer_candidate(event))
        if event.kind == RunStarted.KIND and "started_event_id" not in run:
            run.update(event.payload)
            run.update(
                span_id=event.span_id,
                started_at=format_ts(event.ts),
                started_seq=event.seq,
                started_event_id=str(event.event_id),
            )
        elif event.kind == RunFinished.KIND and "finished_event_id" not in run:
            run.update(
                status=event.payload["status"],
                error=event.payload.get("error"),
                ended_at=format_ts(event.ts),
                finished_seq=event.seq,
                finished_event_id=str(event.event_id),
            )
        elif event.kind == "verdict":
            item = {"kind": "verdict", "payload": dict(event.payload), **_envelope(event)}
            return "verdicts", item
        else:
            item = {"kind": event.kind, "payload": dict(event.payload), **_envelope(event)}
            return "steps", item
        return None

    def finished_run(self) -> dict[str, Any]:
        """The run's fields, once every event was added."""
        # the run's question and answer as the runs projection has them (the question may
        # come from a model call: imported again, it becomes the run's own)
        if self.question is not None and self.question.text is not None:
            self.run["question"] = self.question.text
        if self.answer is not None and self.answer.text is not None:
            self.run["answer"] = self.answer.text
        return self.run


def _case(case: Case | None, dataset: str | None, version: str | None) -> dict[str, Any] | None:
    if case is None or not dataset:
        return None
    return {"dataset": dataset, "dataset_version": version, **case.to_json()}


def to_record(
    trace_id: str,
    events: Iterable[Event],
    case: Case | None,
    dataset: str | None,
    dataset_version: str | None,
) -> dict[str, Any]:
    """One export line: a trace's events as stored (not upcast), in trace order."""
    building = _Record()
    items: dict[str, list[dict[str, Any]]] = {"steps": [], "verdicts": []}
    for event in events:
        added = building.add(event)
        if added is not None:
            items[added[0]].append(added[1])
    record: dict[str, Any] = {
        "trace_id": trace_id,
        "run": building.finished_run(),
        "steps": items["steps"],
        "verdicts": items["verdicts"],
    }
    found = _case(case, dataset, dataset_version)
    if found is not None:
        record["case"] = found
    return record


def write_jsonl(records: Iterable[dict[str, Any]], out: Any) -> int:
    """Write records to a binary file object, one per line; return how many."""
    n = 0
    for record in records:
        out.write(orjson.dumps(record) + b"\n")
        n += 1
    return n


# bytes of a line's steps held in memory before they go to a temporary file
SPOOL_BYTES = 4 * 1024 * 1024


def write_traces_jsonl(
    store: Store, out: Any, *, dataset: str | None = None, batch_events: int = 5_000
) -> int:
    """Write the stored runs (of ``dataset``) as JSONL to a binary file object, streaming: a
    trace's events are read a page at a time and each step is written as it is read (to a
    temporary file past :data:`SPOOL_BYTES`, since the line begins with the run's fields,
    known only once every event is read). The bytes are :func:`write_jsonl`'s of
    :func:`export_records`; the memory held does not grow with a trace's size. Returns how
    many runs. ``batch_events``: how many events are read at a time (of several small
    traces, or of one large trace)."""
    n = 0
    for run in store.reader.stored_runs(dataset=dataset, batch_events=batch_events):
        _write_record(
            run.trace_id, run.events, _case(run.case, run.dataset, run.dataset_version), out
        )
        n += 1
    return n


def _write_record(
    trace_id: str, events: Iterable[Event], case: dict[str, Any] | None, out: Any
) -> None:
    """One line, as ``orjson.dumps`` writes :func:`to_record`'s dict."""
    building = _Record()
    with (
        tempfile.SpooledTemporaryFile(SPOOL_BYTES) as steps,
        tempfile.SpooledTemporaryFile(SPOOL_BYTES) as verdicts,
    ):
        spools = {"steps": steps, "verdicts": verdicts}
        for event in events:
            added = building.add(event)
            if added is None:
                continue
            spool = spools[added[0]]
            if spool.tell():
                spool.write(b",")
            spool.write(orjson.dumps(added[1]))
        out.write(b'{"trace_id":' + orjson.dumps(trace_id))
        out.write(b',"run":' + orjson.dumps(building.finished_run()))
        for key, spool in spools.items():
            out.write(b',"' + key.encode() + b'":[')
            spool.seek(0)
            shutil.copyfileobj(spool, out)
            out.write(b"]")
        if case is not None:
            out.write(b',"case":' + orjson.dumps(case))
        out.write(b"}\n")


def write_parquet(records: Iterable[dict[str, Any]], path: Path) -> int:
    """Write records to Parquet: the JSONL keys as JSON text columns, plus flat run columns."""
    import polars as pl

    rows = []
    for r in records:
        run = r["run"]
        rows.append(
            {
                "trace_id": r["trace_id"],
                "agent": run.get("agent"),
                "agent_version": run.get("agent_version"),
                "strategy": run.get("strategy"),
                "dataset": run.get("dataset"),
                "case_id": run.get("case_id"),
                "question": run.get("question"),
                "answer": run.get("answer"),
                "status": run.get("status"),
                "started_at": run.get("started_at"),
                "ended_at": run.get("ended_at"),
                "n_steps": len(r["steps"]),
                "n_verdicts": len(r["verdicts"]),
                "run": orjson.dumps(run).decode(),
                "steps": orjson.dumps(r["steps"]).decode(),
                "verdicts": orjson.dumps(r["verdicts"]).decode(),
                "case": orjson.dumps(r["case"]).decode() if "case" in r else None,
            }
        )
    schema = {
        "trace_id": pl.String,
        "agent": pl.String,
        "agent_version": pl.String,
        "strategy": pl.String,
        "dataset": pl.String,
        "case_id": pl.String,
        "question": pl.String,
        "answer": pl.String,
        "status": pl.String,
        "started_at": pl.String,
        "ended_at": pl.String,
        "n_steps": pl.Int64,
        "n_verdicts": pl.Int64,
        "run": pl.String,
        "steps": pl.String,
        "verdicts": pl.String,
        "case": pl.String,
    }
    frame = pl.DataFrame(rows, schema=schema)
    frame = frame.with_columns(
        pl.col("started_at").str.to_datetime(time_zone="UTC"),
        pl.col("ended_at").str.to_datetime(time_zone="UTC"),
    )
    frame.write_parquet(path)
    return len(rows)


def write_verdicts(rows: Iterable[VerdictRow], path: Path, fmt: str) -> int:
    """Verdicts as a flat table (Parquet or CSV): one row per verdict, ``details`` as JSON
    text, and each numeric or boolean detail also as a column ``detail_<name>``."""
    import polars as pl

    flat = []
    for r in rows:
        row = {k: v for k, v in r.items() if k != "details"}
        details = r["details"] or {}
        row["details"] = orjson.dumps(details).decode()
        for key, value in details.items():
            if isinstance(value, bool | int | float):
                row[f"detail_{key}"] = float(value)
        flat.append(row)
    frame = pl.DataFrame(flat, infer_schema_length=None)
    if fmt == "parquet":
        frame.write_parquet(path)
    else:
        frame.write_csv(path)
    return frame.height
