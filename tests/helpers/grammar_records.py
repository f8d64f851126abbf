"""GRAMMAR result records of our own making that reach every group tag and both blames (the
authors' files have no licence: never copied, only their shape)."""

from __future__ import annotations

from typing import Any


def record(tag: str, judgement: str | None, true: list[str], got: list[str], n: int) -> Any:
    return {
        "query": f"question {tag} phrasing {n}",
        "answer": f"answer {tag}",
        "true_document_ids": true,
        "retrieved_document_ids": got,
        "gpt_response": [f"response {tag} {n}", "extra"],
        "judgement": judgement,
        "query_tag": tag,
    }


RECORDS = [
    # A: robust, both right
    record("A", "Correct", ["d1"], ["d1"], 1),
    record("A", "Correct", ["d1"], ["d1"], 2),
    # B: gap; the second is judged Correct but retrieved the wrong document (closed domain)
    record("B", "Incorrect", ["d2"], ["d2"], 1),
    record("B", "Correct", ["d2"], ["d7"], 2),
    # C: non-robust; C2 had the context of the correct C1 (blame the language model), C3
    # did not (blame retrieval)
    record("C", "Correct", ["d3"], ["d3"], 1),
    record("C", "Incorrect", ["d3"], ["d3"], 2),
    record("C", "Correct", ["d3"], ["d9"], 3),
    # D: non-robust; no judgement counts as incorrect, with sufficient context
    record("D", "Correct", ["d4", "d5"], ["d5", "d4"], 1),
    record("D", None, ["d4", "d5"], ["d4", "d5"], 2),
]

# What grammar.groups reports on RECORDS (closed domain), whichever shape they came in.
METRICS = {
    "accuracy": 4 / 9,
    "retrieval_accuracy": 7 / 9,
    "knowledge_accuracy": 3 / 4,
    "refined_accuracy": 4 / 7,
    "refined_retrieval_accuracy": 6 / 7,
    "gap": 1,
    "robust": 1,
    "non_robust": 2,
    "runs_per_group": 2.25,
    "blame_retrieval": 1,
    "blame_language_model": 2,
}


def authors_shape(
    records: list[Any], no_response: tuple[int, ...] = ()
) -> tuple[list[Any], dict[str, list[str]]]:
    """``records`` as the authors' files have them: document ids as Python list literals in
    strings, ``retrieval_judgement``, no ``judgement`` (it goes to a judgement cache keyed by
    the Python literal of (query, answer, response)), and ``gpt_response`` null for the records
    at ``no_response`` (their judgement must then be Incorrect or missing)."""
    results, cache = [], {}
    for n, r in enumerate(records):
        response = None if n in no_response else r["gpt_response"]
        judgement = r["judgement"]
        if response is None:
            assert judgement != "Correct", "a record without a response cannot be correct"
        elif judgement is not None:
            cache[repr((r["query"], r["answer"], response[0]))] = [judgement]
        results.append(
            {
                "query": r["query"],
                "answer": r["answer"],
                "true_document_ids": repr(r["true_document_ids"]),
                "retrieved_documents": "the documents' text",
                "gpt_response": response,
                "retrieval_judgement": int(
                    set(r["true_document_ids"]) <= set(r["retrieved_document_ids"])
                ),
                "retrieved_document_ids": repr(r["retrieved_document_ids"]),
                "query_tag": r["query_tag"],
            }
        )
    return results, cache
