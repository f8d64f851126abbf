"""GRAMMAR's result files, in two shapes: a JSON list of records

- ours: ``{query, answer, true_document_ids, retrieved_document_ids, gpt_response, judgement,
  query_tag}``;
- the authors' (``benchmarks/<dataset>/eval_results/results_<form>[_balanced].json``): the
  same without ``judgement``, with ``retrieval_judgement`` (0 or 1), the document ids as lists
  or as Python list literals in strings (``"['d1', 'd2']"``), and ``gpt_response`` null when
  retrieval already failed. Their answer judge's verdicts come from a judgement cache
  (``SemanticsMatch/<form>.json``): a dict keyed by the Python literal of the tuple (query,
  answer, response), with values such as ``["Correct"]``.

Each record becomes a run (its query, a retrieval step with the retrieved document ids, the
response: ``gpt_response`` is a string, or a list whose first element is the response) and a
case (the query, the answer as reference, ``group`` = ``query_tag``, the true document ids).
The judgement (Correct / Incorrect) becomes a verdict of the scorer ``grammar.judge``, version
``imported``. A record without one gets no verdict, and grammar.groups counts the run as
incorrect, as the paper does: those without a response, and those whose response the cache
does not judge, are counted apart so that the import can say so. Ids derive from the record's
position and content, so importing twice adds nothing.
"""

from __future__ import annotations

import ast
import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
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
from agentdocket.importers.common import (
    RunBuilder,
    SourceFormatError,
    read_json,
    read_json_list,
)

NAMESPACE = uuid.UUID("b1c7a3e2-5d4f-5e6a-9b8c-0d1e2f3a4b5c")
EPOCH = datetime(2024, 6, 1, tzinfo=UTC)
JUDGE = "grammar.judge"


class GrammarFormatError(SourceFormatError):
    """A record is not in GRAMMAR's result format; the message names its index."""


JUDGEMENTS = ("Correct", "Incorrect")
Key = tuple[str, str, str]  # (query, answer, response), as the judgement cache keys them


@dataclass(frozen=True)
class Imported:
    """A results file read: its dataset and events, and how its records were judged."""

    dataset: Dataset
    events: list[Event]
    records: int
    judged: int  # a judgement, in the record or the cache
    no_response: int  # no response (retrieval failed first): incorrect
    unjudged: int  # a response the cache does not judge: incorrect

    def summary(self) -> str:
        return (
            f"{self.records} records: {self.judged} judged, {self.no_response} without a "
            f"response and {self.unjudged} with a response but no judgement (both counted "
            "incorrect)"
        )


def _literal(value: str, where: str) -> Any:
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise GrammarFormatError(f"{where}: {value[:80]!r} is not a Python literal") from None


def _ids(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):  # the authors' files: a Python list literal in a string
        value = _literal(value, where)
    if not isinstance(value, list | tuple):
        raise GrammarFormatError(f"{where}: expected a list of document ids")
    return [str(v) for v in value]


def read_judgements(path: Path) -> dict[Key, str]:
    """A judgement cache (the authors' ``SemanticsMatch/<form>.json``): (query, answer,
    response) -> Correct or Incorrect."""
    data = read_json(path, GrammarFormatError)
    if not isinstance(data, dict):
        raise GrammarFormatError(f"{path}: expected an object keyed by (query, answer, response)")
    out: dict[Key, str] = {}
    for key, value in data.items():
        where = f"{path.name}: key {key[:60]!r}"
        parts = _literal(key, where)
        if not isinstance(parts, tuple) or len(parts) != 3:
            raise GrammarFormatError(f"{where}: expected a (query, answer, response) tuple")
        label = value[0] if isinstance(value, list) and value else value
        if label not in JUDGEMENTS:
            raise GrammarFormatError(f"{where}: judgement {value!r} is not Correct or Incorrect")
        out[(str(parts[0]), str(parts[1]), str(parts[2]))] = label
    return out


def load(
    path: Path,
    dataset: str,
    agent: str | None = None,
    judgements: Mapping[Key, str] | None = None,
) -> Imported:
    """Read a results file (either shape); ``judgements`` judge the records that carry no
    judgement of their own."""
    records = read_json_list(path, "result records", GrammarFormatError)
    agent = agent or path.stem
    cases: dict[str, Case] = {}
    events: list[Event] = []
    judged = no_response = unjudged = 0
    for n, record in enumerate(records):
        rec = _Record.of(record, f"{path.name}: record [{n}]", judgements)
        if rec.judgement is not None:
            judged += 1
        elif rec.response is None:
            no_response += 1
        else:
            unjudged += 1
        cases.setdefault(rec.case.case_id, rec.case)
        events += rec.events(n, agent, dataset)
    description = f"GRAMMAR results: {path.name}"
    return Imported(
        Dataset(dataset, "1", tuple(cases.values()), description),
        events,
        len(records),
        judged,
        no_response,
        unjudged,
    )


@dataclass(frozen=True)
class _Record:
    """One result record, checked: the case it is of, the agent's response, its judgement."""

    record: Mapping[str, Any]
    response: Any
    judgement: str | None
    retrieved: list[str]
    key: str  # what makes its case: group, question, answer and true documents
    case: Case

    @classmethod
    def of(cls, record: Any, where: str, judgements: Mapping[Key, str] | None) -> _Record:
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
        if judgement is None and response is not None and judgements is not None:
            judgement = judgements.get((record["query"], str(record.get("answer")), str(response)))
        true_ids = _ids(record.get("true_document_ids"), f"{where}.true_document_ids")
        retrieved = _ids(record.get("retrieved_document_ids"), f"{where}.retrieved_document_ids")
        key = f"{tag}\x1f{record['query']}\x1f{record.get('answer')}\x1f{sorted(true_ids)}"
        case_id = hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:16]
        case = Case(
            case_id=case_id,
            question=record["query"],
            reference_answer=None if record.get("answer") is None else str(record["answer"]),
            group=str(tag),
            true_document_ids=true_ids,
        )
        return cls(record, response, judgement, retrieved, key, case)

    def events(self, n: int, agent: str, dataset: str) -> list[Event]:
        """The run of record ``n``: its question, retrieval, response and imported verdict."""
        record = self.record
        run = RunBuilder(
            uuid.uuid5(NAMESPACE, f"{agent}/{n}/{self.key}").hex, EPOCH + timedelta(seconds=n)
        )
        extra = (
            {"retrieval_judgement": record["retrieval_judgement"]}
            if "retrieval_judgement" in record
            else {}
        )
        run.add(
            RunStarted(
                agent=agent,
                question=record["query"],
                dataset=dataset,
                dataset_version="1",
                case_id=self.case.case_id,
                attributes={"record": n} | extra,
            )
        )
        documents = [Document(id=d) for d in self.retrieved]
        run.add(Retrieval(query=record["query"], documents=documents))
        run.add(Response(text=str(self.response or "")))
        run.add(RunFinished(status="ok"))
        if self.judgement is not None:
            verdict = Verdict(
                scorer=JUDGE,
                scorer_version="imported",
                input_hash=hashlib.sha256(f"{self.key}/{self.response}".encode()).hexdigest(),
                subject_trace_id=run.trace_id,
                passed=self.judgement == "Correct",
                label=self.judgement,
            )
            run.add(verdict)
        return run.events
