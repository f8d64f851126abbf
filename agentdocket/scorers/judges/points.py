"""``examiner.points``: the judge's weighted scoring points of an examined conversation
("How to evaluate a LLM agent?"). A point with ``eval_code`` is decided by the check the examiner
harness ran in the agent's working directory (recorded in the run as a call of
``examiner.eval_code``); any other point by the judge model, which reads the chat history
(without the examiner's final stop message) and the statement, and answers in the case's JSON
format ``{"reason": ..., "is_hit": "yes" | "no"}``. Normalized score = weight of the points hit /
total weight; a total weight of 0 is an error, not a score. The details say whether every check
ran without network (``network_isolated``: false when one ran with it)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentdocket.events import Case, Conversation, ToolCall, Trace
from agentdocket.scorers.base import Outcome, Scorer, register, session_scorer
from agentdocket.scorers.judges.client import (
    JUDGE_OPTIONS,
    Answer,
    Ask,
    current_session,
    judge_trace_id,
    linked_trace,
    resolve_model,
)
from agentdocket.scorers.judges.parse import Unparseable

NAME = "examiner.points"
EVAL_TOOL = "examiner.eval_code"
_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_HIT = re.compile(r"[\"']?\bis_hit[\"']?\s*[:=]\s*[\"']?(yes|no)\b", re.IGNORECASE)
_REASON = re.compile(r"[\"']?\breason[\"']?\s*[:=]\s*\"((?:[^\"\\\n]|\\.)*)\"", re.IGNORECASE)


def parse_hit(reply: str) -> tuple[bool, str]:
    """``(is_hit, reason)`` from a reply holding the JSON object the judge was asked for; a
    reply whose object does not parse as JSON (a small model's often does not) is read for its
    last ``"is_hit": "yes"`` or ``"no"`` (any case) and its last ``"reason"``."""
    fenced = _FENCE.search(reply)
    text = fenced.group(1) if fenced else reply.strip()
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start : end + 1]) if start >= 0 < end else None
    except json.JSONDecodeError:
        data = None
    hit = data.get("is_hit") if isinstance(data, dict) else None
    if isinstance(data, dict) and isinstance(hit, str) and hit.strip().lower() in ("yes", "no"):
        return hit.strip().lower() == "yes", str(data.get("reason", ""))
    stated = _HIT.findall(reply)
    if not stated:
        raise Unparseable('a JSON object with "is_hit": "yes" or "no"', reply)
    reasons = _REASON.findall(reply)
    return stated[-1].lower() == "yes", reasons[-1] if reasons else ""


def _history(trace: Trace, stop: str) -> list[dict[str, str]]:
    out = []
    for e in trace.of_kind("message"):
        role, content = e.payload["role"], e.payload["content"]
        if role == "examiner" and stop and stop in content:
            continue  # the judge does not see the examiner's stop message
        out.append({"role": role, "content": content})
    return out


def _checks(calls: Iterable[ToolCall]) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for call in calls:
        if call.tool == EVAL_TOOL and isinstance(call.result, dict) and "point" in call.result:
            found[int(call.result["point"])] = call.result
    return found


def examiner_points_batch(
    traces: Sequence[Trace], config: Mapping[str, Any]
) -> list[Outcome | None]:
    rows: dict[int, list[dict[str, Any]]] = {}  # trace index -> its points' rows
    pending: list[tuple[int, int, Ask]] = []  # (trace index, point index, what to ask)
    for t, trace in enumerate(traces):
        case = trace.case
        if case is not None and case.scoring_points:
            history = _history(trace, str(case.attributes.get("stop_keyword", "")))
            own = judge_trace_id(trace.trace_id, NAME, config)
            rows[t], asks = _rows(case, history, _checks(trace.tool_calls()), own)
            pending += [(t, i, ask) for i, ask in asks]
    out: list[Outcome | None] = [None] * len(traces)
    for t, (trace_rows, linked) in _decided(rows, pending, config).items():
        out[t] = _outcome(trace_rows, linked)
    return out


def _decided(
    rows: dict[int, list[dict[str, Any]]],
    pending: list[tuple[int, int, Ask]],
    config: Mapping[str, Any],
) -> dict[int, tuple[list[dict[str, Any]], str | None]]:
    """Each subject's rows with the judge's answers filled in, and the judge trace its verdict
    links to (None: no point needed the judge)."""
    answered: dict[int, list[Answer]] = {}
    if pending:
        model, name = resolve_model(config.get("model"))
        answers = current_session().ask(
            model,
            name,
            config.get("temperature", 0.0),
            [a for _, _, a in pending],
            retries=int(config.get("retries", 2)),
            max_concurrency=config.get("max_concurrency"),
        )
        for (t, i, _), answer in zip(pending, answers, strict=True):
            answered.setdefault(t, []).append(answer)
            if answer.failure is not None:
                rows[t][i].update(hit=False, reason=answer.error, failure=answer.failure)
            else:
                hit, reason = answer.parsed
                rows[t][i].update(hit=hit, reason=reason)
    own = {t: ask.trace_id for t, _, ask in pending}
    return {
        t: (trace_rows, linked_trace(own[t], answered[t]) if t in answered else None)
        for t, trace_rows in rows.items()
    }


def _rows(
    case: Case,
    history: list[dict[str, Any]],
    checks: dict[int, dict[str, Any]],
    judge_trace: str,
) -> tuple[list[dict[str, Any]], list[tuple[int, Ask]]]:
    """Each scoring point's row (decided here when its check ran) and what to ask the judge
    of the others, by the point's index."""
    total = sum(p.weight for p in case.scoring_points)
    if total <= 0:
        raise ValueError(
            f"case {case.case_id}: the scoring points' total weight is 0, so no "
            "normalized score exists"
        )
    # what every point's question to the judge starts with, and where its call is recorded
    asked = (
        f"{case.attributes.get('judge_instruction', '')}\n\nThe chat history is:\n"
        f"{json.dumps(history, ensure_ascii=False, indent=1)}\n\n"
    )
    rows: list[dict[str, Any]] = []
    asks: list[tuple[int, Ask]] = []
    for i, point in enumerate(case.scoring_points):
        row: dict[str, Any] = {"point": point.point, "weight": point.weight}
        if point.eval_code is not None:
            check = checks.get(i)
            row.update(
                by="eval_code",
                hit=bool(check and check.get("passed")),
                reason=(check or {}).get("error") or ("passed" if check else "not checked"),
            )
            if check is not None:
                row["network_isolated"] = check.get("network_isolated")
        else:
            row["by"] = "llm"
            prompt = f"{asked}The statement is: {point.point}"
            asks.append((i, Ask(judge_trace, prompt, parse_hit)))
        rows.append(row)
    return rows, asks


def _outcome(rows: list[dict[str, Any]], judge_trace: str | None) -> Outcome:
    total = sum(r["weight"] for r in rows)
    got = sum(r["weight"] for r in rows if r.get("hit"))
    failed = [r["failure"] for r in rows if "failure" in r]
    score = got / total
    isolated = [r["network_isolated"] for r in rows if "network_isolated" in r]
    return Outcome(
        passed=None,
        score=score,
        failure_type=failed[0] if failed else None,
        details={
            "points": rows,
            "hit_weight": got,
            "total_weight": total,
            "normalized_score": score,
            # False when one check ran with network; None when none ran (or none recorded it)
            "network_isolated": (
                False if False in isolated else True if isolated and all(isolated) else None
            ),
        },
        judge_trace_id=judge_trace,
    )


def examiner_points(trace: Trace, config: Mapping[str, Any]) -> Outcome | None:
    return examiner_points_batch([trace], config)[0]


register(
    Scorer(
        "examiner.points",
        "1",
        "weighted scoring points of an examined conversation, by eval_code or by the judge; "
        "normalized score = weight hit / total weight",
        examiner_points,
        config={"model": None, "temperature": 0.0, "retries": 2},
        inputs=("message", "tool.called", "tool.returned", "case"),
        batch=examiner_points_batch,
        metrics={"normalized_score": ("normalized_score", "mean")},
        judge=True,
        options=JUDGE_OPTIONS,
        details={
            "points": "list[dict]: each point, its weight, how it was decided and whether hit",
            "hit_weight": "float: weight of the points hit",
            "total_weight": "float: weight of all points",
            "normalized_score": "float: hit_weight / total_weight",
            "network_isolated": "bool | None: every eval_code check ran without network "
            "(false: one ran with it; null: no check ran)",
        },
    )
)


# --- the same points over a session ---------------------------------------------------------


def session_points(
    conversations: Sequence[Conversation], config: Mapping[str, Any]
) -> list[Outcome | None]:
    """The case's scoring points over a whole session: the chat history is its turns' (user
    message, answer), the checks those any turn ran."""
    rows: dict[int, list[dict[str, Any]]] = {}
    pending: list[tuple[int, int, Ask]] = []
    for t, c in enumerate(conversations):
        if c.case is not None and c.case.scoring_points:
            own = judge_trace_id(c.last.trace_id, SESSION_NAME, config)
            calls = [call for turn in c.turns for call in turn.tool_calls()]
            rows[t], asks = _rows(c.case, c.transcript(), _checks(calls), own)
            pending += [(t, i, ask) for i, ask in asks]
    out: list[Outcome | None] = [None] * len(conversations)
    for t, (found, linked) in _decided(rows, pending, config).items():
        judged = _outcome(found, linked)
        details = {"session_id": conversations[t].session_id, "turns": len(conversations[t].turns)}
        out[t] = Outcome(
            passed=judged.passed,
            score=judged.score,
            failure_type=judged.failure_type,
            details={**details, **judged.details},
            judge_trace_id=judged.judge_trace_id,
        )
    return out


SESSION_NAME = "session.points"
register(
    session_scorer(
        SESSION_NAME,
        "1",
        "the case's weighted scoring points over a whole session (by eval_code or by the judge, "
        "reading every turn); normalized score = weight hit / total weight",
        session_points,
        config={"model": None, "temperature": 0.0, "retries": 2},
        inputs=("answer", "question", "run.finished", "tool.called", "tool.returned", "case"),
        metrics={"normalized_score": ("normalized_score", "mean")},
        judge=True,
        options=JUDGE_OPTIONS,
        details={
            "session_id": "str: the session judged",
            "turns": "int: how many turns it had when judged",
            "points": "list[dict]: each point, its weight, how it was decided and whether hit",
            "hit_weight": "float: weight of the points hit",
            "total_weight": "float: weight of all points",
            "normalized_score": "float: hit_weight / total_weight",
            "network_isolated": "bool | None: every eval_code check ran without network",
        },
    )
)
