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
