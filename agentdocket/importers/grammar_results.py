"""GRAMMAR's result files: a JSON list of records ``{query, answer, true_document_ids,
retrieved_document_ids, gpt_response, judgement, query_tag}``.

Each record becomes a run (its query, a retrieval step with the retrieved document ids, the
response: ``gpt_response`` is a string, or a list whose first element is the response) and a
case (the query, the answer as reference, ``group`` = ``query_tag``, the true document ids).
The answer judge's ``judgement`` (Correct / Incorrect) becomes a verdict of the scorer
``grammar.judge``, version ``imported``; a null judgement gives none (the run then counts as
incorrect). Ids derive from the record's position and content, so importing twice adds nothing.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentdocket.events import (
    Case,
    Dataset,
    Document,
    Event,
    Response,
    Retrieval,
    RunFinished,
    RunStarted,
    Verdict,
)
from agentdocket.importers.common import RunBuilder, SourceFormatError, read_json_list

NAMESPACE = uuid.UUID("b1c7a3e2-5d4f-5e6a-9b8c-0d1e2f3a4b5c")
EPOCH = datetime(2024, 6, 1, tzinfo=UTC)
JUDGE = "grammar.judge"


class GrammarFormatError(SourceFormatError):
    """A record is not in GRAMMAR's result format; the message names its index."""


def _ids(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise GrammarFormatError(f"{where}: expected a list of document ids")
    return [str(v) for v in value]


def load(path: Path, dataset: str, agent: str | None = None) -> tuple[Dataset, list[Event]]:
    records = read_json_list(path, "result records", GrammarFormatError)
    agent = agent or path.stem
    cases: dict[str, Case] = {}
    events: list[Event] = []
    for n, record in enumerate(records):
        where = f"{path.name}: record [{n}]"
        if not isinstance(record, dict) or not isinstance(record.get("query"), str):
            raise GrammarFormatError(f"{where}: expected an object with a query")
        tag = record.get("query_tag")
        if tag is None:
            raise GrammarFormatError(f"{where}: no query_tag (the semantic group)")
        response = record.get("gpt_response")
        if isinstance(response, list):
            response = response[0] if response else ""
        judgement = record.get("judgement")
        if judgement not in ("Correct", "Incorrect", None):
            raise GrammarFormatError(
                f"{where}: judgement {judgement!r} is not Correct, Incorrect or null"
            )
        true_ids = _ids(record.get("true_document_ids"), f"{where}.true_document_ids")
        retrieved = _ids(record.get("retrieved_document_ids"), f"{where}.retrieved_document_ids")
        key = f"{tag}\x1f{record['query']}\x1f{record.get('answer')}\x1f{sorted(true_ids)}"
        case_id = hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:16]
        cases.setdefault(
            case_id,
            Case(
                case_id=case_id,
                question=record["query"],
                reference_answer=None if record.get("answer") is None else str(record["answer"]),
                group=str(tag),
                true_document_ids=true_ids,
            ),
        )
        run = RunBuilder(
            uuid.uuid5(NAMESPACE, f"{agent}/{n}/{key}").hex, EPOCH + timedelta(seconds=n)
        )
        run.add(
            RunStarted(
                agent=agent,
                question=record["query"],
                dataset=dataset,
                dataset_version="1",
                case_id=case_id,
                attributes={"record": n},
            )
        )
        run.add(Retrieval(query=record["query"], documents=[Document(id=d) for d in retrieved]))
        run.add(Response(text=str(response or "")))
        run.add(RunFinished(status="ok"))
        if judgement is not None:
            verdict = Verdict(
                scorer=JUDGE,
                scorer_version="imported",
                input_hash=hashlib.sha256(f"{key}/{response}".encode()).hexdigest(),
                subject_trace_id=run.trace_id,
                passed=judgement == "Correct",
                label=judgement,
            )
            run.add(verdict)
        events += run.events
    description = f"GRAMMAR results: {path.name}"
    return Dataset(dataset, "1", tuple(cases.values()), description), events
