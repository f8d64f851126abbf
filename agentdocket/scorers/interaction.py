"""Interaction metrics (Table 2 of "On Evaluating the Integration of Reasoning and Action in LLM
Agents with Database Question Answering"): how much an agent planned and queried, and how long its
answer was."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentdocket.events import Trace
from agentdocket.scorers.base import Outcome, Scorer, register


def _words(text: str | None) -> int:
    return len(text.split()) if text else 0


def interaction_metrics(trace: Trace, config: Mapping[str, Any]) -> Outcome | None:
    """Plan length in words, SQL queries generated, valid ones (ran without error and returned
    rows), and answer length in words. No pass/fail: the metrics are the verdict."""
    plan_words = plan_steps = 0
    for event in trace.of_kind("plan"):
        plan = event.payload  # valid at its current version (see Trace)
        plan_steps += len(plan["steps"])  # what len(trace.plan()) counts, without its objects
        if plan.get("text"):
            plan_words += _words(plan["text"])
        else:
            plan_words += sum(_words(s.get("text") or s.get("tool")) for s in plan["steps"])
    sql = trace.sql()
    valid = sum(1 for q in sql if q.error is None and (q.row_count or len(q.rows)) > 0)
    return Outcome(
        details={
            "plan_length": plan_words,
            "plan_steps": plan_steps,
            "sql_generated": len(sql),
            "sql_valid": valid,
            "answer_length": _words(trace.response),
        }
    )


register(
    Scorer(
        "interaction.metrics",
        "1",
        "plan length (words), SQL generated, valid SQL (no error, rows returned), answer length",
        interaction_metrics,
        inputs=("plan", "sql.executed", "answer"),
        metrics={
            m: (m, "mean")
            for m in ("plan_length", "plan_steps", "sql_generated", "sql_valid", "answer_length")
        },
        details={
            "plan_length": "int: words in the plan's text",
            "plan_steps": "int: steps in the plan",
            "sql_generated": "int: SQL queries the agent ran",
            "sql_valid": "int: those that ran without error and returned rows",
            "answer_length": "int: words in the response",
        },
    )
)
