"""``answer.exact``: the final answer against the case's reference answer, exactly: the
exact-match measure of question answering, after the usual normalizing (case, runs of
whitespace, quotes and punctuation at either end). agentdocket's own, not one of the four
source documents' scorers: a reference verdict that needs no model, so that a judge (such as
``answer.reference``) can be calibrated against it (``agentdocket calibrate --judge
answer.reference --against answer.exact``), on data whose reference answers are what a right
answer says word for word, as the demo's are.

It is strict by design: an answer that says the same in other words fails. A case without a
reference answer is outside its reach (no verdict); a run without an answer is
``response:missing``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

from agentdocket.events import Trace
from agentdocket.scorers.base import Outcome, Scorer, register

NAME = "answer.exact"
_ENDS = " \t\n\"'`.,;:!?()[]{}"


def normalized(text: str) -> str:
    """``text`` compared as: Unicode-normalized (NFKC), case-folded, whitespace runs as one
    space, quotes and punctuation stripped from both ends."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(folded.split()).strip(_ENDS)


def answer_exact(trace: Trace, config: Mapping[str, Any]) -> Outcome | None:
    case = trace.case
    if case is None or not case.reference_answer:
        return None
    answer = trace.response
    if answer is None:
        return Outcome(failure_type="response:missing")
    same = normalized(answer) == normalized(case.reference_answer)
    return Outcome(
        passed=same,
        score=1.0 if same else 0.0,
        failure_type=None if same else "answer:not_exact",
        details={"answer_length": len(answer), "reference_length": len(case.reference_answer)},
    )


register(
    Scorer(
        NAME,
        "1",
        "final answer equals the case's reference answer (case, whitespace and end punctuation "
        "ignored): exact match, a reference verdict that needs no model",
        answer_exact,
        inputs=("answer", "case"),
        details={
            "answer_length": "int: characters in the answer",
            "reference_length": "int: characters in the reference answer",
        },
    )
)
