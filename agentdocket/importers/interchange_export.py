"""Export of runs in the interchange format (see :mod:`agentdocket.importers.interchange`):
JSONL, one run per line, and Parquet with flat run columns for analysis."""

from __future__ import annotations

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
    """The interchange records of the stored runs (of ``dataset``), events as stored."""
    for run in store.reader.stored_runs(dataset=dataset, batch_size=batch_size):
        yield to_record(run.trace_id, run.events, run.case, run.dataset, run.dataset_version)


def to_record(
    trace_id: str,
    events: Iterable[Event],
    case: Case | None,
    dataset: str | None,
    dataset_version: str | None,
) -> dict[str, Any]:
    """One export line: a trace's events as stored (not upcast), in trace order."""
    run: dict[str, Any] = {}
    steps, verdicts = [], []
    question: Candidate | None = None
    answer: Candidate | None = None
    for event in events:
        question = best(question, question_candidate(event))
        answer = best(answer, answer_candidate(event))
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
            verdicts.append({"kind": "verdict", "payload": dict(event.payload), **_envelope(event)})
        else:
            steps.append({"kind": event.kind, "payload": dict(event.payload), **_envelope(event)})
    # the run's question and answer as the runs projection has them (the question may come from
    # a model call: imported again, it becomes the run's own)
    if question is not None and question.text is not None:
        run["question"] = question.text
    if answer is not None and answer.text is not None:
        run["answer"] = answer.text
    record: dict[str, Any] = {
        "trace_id": trace_id,
        "run": run,
        "steps": steps,
        "verdicts": verdicts,
    }
    if case is not None and dataset:
        record["case"] = {"dataset": dataset, "dataset_version": dataset_version, **case.to_json()}
    return record


def write_jsonl(records: Iterable[dict[str, Any]], out: Any) -> int:
    """Write records to a binary file object, one per line; return how many."""
    n = 0
    for record in records:
        out.write(orjson.dumps(record) + b"\n")
        n += 1
    return n


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
