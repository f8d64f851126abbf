"""``response.similarity``: the final response against the case's stub response
("coalitions-for-tool-use: Assessing Single Pretrained Model approach"): all-MiniLM-L6-v2 cosine,
and ROUGE-L precision, recall and F.

Orientation: reference = the stub, so precision = LCS / response tokens and recall = LCS / stub
tokens. (The IBM study called ``rouge_score`` the other way round; its published "precision" is
our recall and vice versa. F is the same either way.)

No pass / fail: the numbers are the verdict, ``score`` is the cosine. A run without a response
event gets ``response:missing`` and no numbers, so it does not drag the averages. Embeddings of a
batch are computed together and cached by text hash.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentdocket.events import Trace
from agentdocket.scorers import embeddings
from agentdocket.scorers.arguments import Similarity
from agentdocket.scorers.base import Outcome, Scorer, register
from agentdocket.scorers.rouge import rouge_l
from agentdocket.scorers.tool_use import SIMILARITY, similarity_function


def _reference(trace: Trace) -> tuple[str, str] | None:
    case = trace.case
    if case is None:
        return None
    if case.stub_response is not None:
        return case.stub_response, "stub_response"
    if case.reference_answer is not None:
        return case.reference_answer, "reference_answer"
    return None


def response_similarity_batch(
    traces: Sequence[Trace], config: Mapping[str, Any]
) -> list[Outcome | None]:
    """Outcomes for a batch: one embedding call for every response and reference in it."""
    similarity: Similarity | None = similarity_function(config.get("similarity"))
    out: list[Outcome | None] = [None] * len(traces)
    pairs: list[tuple[str, str]] = []
    judged: list[tuple[int, str]] = []
    for i, trace in enumerate(traces):
        found = _reference(trace)
        if found is None:
            continue
        reference, source = found
        response = trace.response
        if response is None:
            out[i] = Outcome(
                failure_type="response:missing",
                rationale="the run has no response event",
                details={"reference": source},
            )
            continue
        pairs.append((response, reference))
        judged.append((i, source))
    cosines: Sequence[float | None] = (
        similarity(pairs) if similarity is not None and pairs else [None] * len(pairs)
    )
    for (i, source), (response, reference), cosine in zip(judged, pairs, cosines, strict=True):
        rouge = rouge_l(reference, response)
        details: dict[str, Any] = {
            "reference": source,
            "rougeL_precision": rouge.precision,
            "rougeL_recall": rouge.recall,
            "rougeL_fmeasure": rouge.fmeasure,
        }
        if cosine is not None:
            details["cosine"] = cosine
        out[i] = Outcome(score=cosine, details=details)
    return out


def response_similarity(trace: Trace, config: Mapping[str, Any]) -> Outcome | None:
    return response_similarity_batch([trace], config)[0]


register(
    Scorer(
        "response.similarity",
        "1",
        "final response vs the case's stub response: all-MiniLM-L6-v2 cosine, ROUGE-L P/R/F "
        "(reference = stub)",
        response_similarity,
        config={"similarity": "all-MiniLM-L6-v2"},
        inputs=("answer", "case"),
        batch=response_similarity_batch,
        metrics={
            m: (m, "mean")
            for m in ("cosine", "rougeL_precision", "rougeL_recall", "rougeL_fmeasure")
        },
        options={"similarity": SIMILARITY},
        warm=embeddings.model,
        details={
            "reference": "str: what the response was compared with: 'stub' or 'reference'",
            "cosine": "float: cosine similarity of the two embeddings",
            "rougeL_precision": "float: LCS / response tokens (reference = stub)",
            "rougeL_recall": "float: LCS / reference tokens",
            "rougeL_fmeasure": "float: their harmonic mean",
        },
    )
)
