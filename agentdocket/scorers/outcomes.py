"""What a scorer's verdict on one run comes to, for counting: passed, failed, scored,
measured (a verdict of details alone, such as ``interaction.metrics``), or missing, with the
kind of what is missing. A run a scorer was asked to judge always has one of
these: none is dropped from a denominator.

Missing outcomes have a kind:

- ``agent:error`` and ``agent:timeout``: the run ended in an error (a timeout when its error
  says so); whatever a scorer made of its partial trace, the agent gave no answer;
- ``response:missing``: the run gave no answer to judge;
- ``judge:error`` and ``judge:unparseable``: the judge failed (no reply, or none that parses
  after its retries);
- any other failure type on a verdict with neither pass nor score, as it is.

A verdict with neither pass, score nor failure type measured something (its details) and is
not missing.

The first three are the agent's (:data:`AGENT_SIDE`: a comparison counts them against the
side that lost the answer); the judge's are nobody's answer, and a comparison cannot tell
what they would have been.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Status = Literal["passed", "failed", "scored", "measured", "missing"]
AGENT_ERROR, AGENT_TIMEOUT = "agent:error", "agent:timeout"
NO_RESPONSE = "response:missing"
UNPARSEABLE = "judge:unparseable"  # no reply of the judge stated a verdict in its format
_TIMEOUT = re.compile(r"timed out|timeout", re.IGNORECASE)


@dataclass(frozen=True)
class RunOutcome:
    """One run's outcome under one scorer."""

    status: Status
    score: float | None = None  # a scored (or passed / failed) verdict's score
    missing: str | None = None  # the kind, when missing

    @property
    def agent_side(self) -> bool:
        """Missing because of the agent (it erred, timed out, or did not answer)."""
        return self.status == "missing" and not (self.missing or "").startswith("judge:")

    @property
    def judge_side(self) -> bool:
        return self.status == "missing" and (self.missing or "").startswith("judge:")


def outcome(
    passed: bool | None,
    score: float | None,
    failure_type: str | None,
    run_status: str | None = None,
    run_error: str | None = None,
) -> RunOutcome:
    """The outcome of a verdict (``passed``, ``score``, ``failure_type``; all None when the
    scorer wrote none) on a run that ended with ``run_status`` and ``run_error``."""
    if run_status == "error":
        timed_out = run_error is not None and _TIMEOUT.search(run_error) is not None
        return RunOutcome("missing", missing=AGENT_TIMEOUT if timed_out else AGENT_ERROR)
    if passed is not None:
        return RunOutcome("passed" if passed else "failed", score)
    if score is not None:
        return RunOutcome("scored", score)
    if failure_type is None:
        return RunOutcome("measured")
    return RunOutcome("missing", missing=failure_type)
