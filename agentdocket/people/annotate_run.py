"""A run as the annotation page shows it: the question, each step (the plan, tool calls with
their arguments and results, SQL queries with their row counts, retrievals, model calls,
errors), the answer, the case's reference answer, and the judges' verdicts. Pure functions
of the run's row, events and case; every text escaped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

from agentdocket.events import Case, Event
from agentdocket.store.rows import Run

MAX_SHOWN = 4000  # characters of one value (arguments, a result, a document) shown in full
ONE_LINE = 80  # JSON up to this long stays on one line


def esc(value: object) -> str:
    return escape(str(value), quote=True)


def shown(value: Any, limit: int = MAX_SHOWN) -> str:
    """A value as a person reads it (a text as it is; anything else as JSON, on one line when
    short, else indented), cut at ``limit`` characters with a note of how much more there is."""
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
        if len(text) > ONE_LINE:
            text = json.dumps(value, ensure_ascii=False, indent=2, default=str)
    if len(text) > limit:
        text = text[:limit] + f"\n… ({len(text) - limit:,} more characters)"
    return text


def _pre(value: Any, cls: str = "") -> str:
    attribute = f' class="{cls}"' if cls else ""
    return f"<pre{attribute}>{esc(shown(value))}</pre>"


def _error(p: Mapping[str, Any]) -> str:
    if not p.get("error"):
        return ""
    return f'<div class="error"><small>error</small>{_pre(p["error"], "error")}</div>'


def _returns(events: Sequence[Event]) -> dict[str, Event]:
    """Each tool call's return, by call id (the first one, as the steps view joins them)."""
    found: dict[str, Event] = {}
    for e in events:
        if e.kind == "tool.returned":
            found.setdefault(str(e.payload.get("call_id")), e)
    return found


def _tool_outcome(returned: Event | None) -> str:
    if returned is None:
        return '<div class="muted">no result recorded</div>'
    p = returned.payload
    return _error(p) or f"<div><small>result</small>{_pre(p.get('result'))}</div>"


def _plan(p: Mapping[str, Any]) -> str:
    steps = "".join(
        "<li>"
        + (f"<code>{esc(s['tool'])}</code> " if s.get("tool") else "")
        + esc(s.get("text") or "")
        + "</li>"
        for s in p.get("steps") or []
    )
    text = f"<p>{esc(p['text'])}</p>" if p.get("text") else ""
    return f"<strong>Plan</strong>{text}<ol>{steps}</ol>"


def _sql(p: Mapping[str, Any]) -> str:
    rows = p.get("row_count")
    if rows is None:
        rows = len(p.get("rows") or [])
    outcome = _error(p) or f"<div>{rows} row{'s' if rows != 1 else ''}</div>"
    return f"<strong>SQL query</strong>{_pre(p.get('query'))}{outcome}"


def _document(d: Mapping[str, Any]) -> str:
    score = f" <small>score {float(d['score']):.3f}</small>" if d.get("score") is not None else ""
    text = _pre(d["text"]) if d.get("text") else ""
    return f"<li><code>{esc(d.get('id'))}</code>{score}{text}</li>"


def _retrieval(p: Mapping[str, Any]) -> str:
    docs = "".join(_document(d) for d in p.get("documents") or []) or "<li>no document</li>"
    query = f"<q>{esc(p.get('query'))}</q>"
    return f"<strong>Retrieval</strong> for {query}{_error(p)}<ol>{docs}</ol>"


def _llm(p: Mapping[str, Any]) -> str:
    said = [m.get("content") for m in p.get("output_messages") or [] if m.get("content")]
    role = f" as {esc(p['role'])}" if p.get("role") else ""
    text = f"<details><summary>what it said</summary>{_pre(said[-1])}</details>" if said else ""
    return f"<strong>Model call</strong> <code>{esc(p.get('model'))}</code>{role}{_error(p)}{text}"


def _message(p: Mapping[str, Any]) -> str:
    return f"<strong>{esc(p.get('role'))}</strong>: {esc(shown(p.get('content') or ''))}"


def _generic(p: Mapping[str, Any]) -> str:
    return f"<strong>Step</strong> <code>{esc(p.get('name'))}</code>{_error(p)}"


def _finished(p: Mapping[str, Any]) -> str:
    return f"<strong>The run ended with an error</strong>{_error(p)}" if p.get("error") else ""


# how each kind of step reads (the response is the answer, below the steps)
STEPS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "plan": _plan,
    "sql.executed": _sql,
    "retrieval": _retrieval,
    "llm.called": _llm,
    "message": _message,
    "step": _generic,
    "run.finished": _finished,
}


def steps_html(events: Sequence[Event]) -> str:
    """The run's steps as list items, in trace order; a tool call with its return."""
    returns = _returns(events)
    joined: set[str] = set()
    items = []
    for e in events:
        p = e.payload
        if e.kind == "tool.called":
            call_id = str(p.get("call_id"))
            joined.add(call_id)
            text = (
                f"<strong>Tool call</strong> <code>{esc(p.get('tool'))}</code>"
                f"<div><small>arguments</small>{_pre(p.get('arguments'))}</div>"
                + _tool_outcome(returns.get(call_id))
            )
        elif e.kind == "tool.returned":
            if str(p.get("call_id")) in joined:
                continue
            text = f"<strong>Tool result</strong> <code>{esc(p.get('tool') or '?')}</code>"
            text += _tool_outcome(e)
        elif e.kind in STEPS:
            text = STEPS[e.kind](p)
        else:
            continue
        if text:
            items.append(f'<li class="step">{text}</li>')
    return "".join(items)


def answer_of(run: Run | None, events: Sequence[Event]) -> str | None:
    """The run's answer: its last ``response``, else its row's answer."""
    for e in reversed(events):
        if e.kind == "response":
            return str(e.payload.get("text") or "")
    return run["answer"] if run is not None else None


def question_of(run: Run | None, events: Sequence[Event]) -> str | None:
    if run is not None and run["question"]:
        return run["question"]
    for e in events:
        if e.kind == "run.started" and e.payload.get("question"):
            return str(e.payload["question"])
    return None


def run_html(run: Run | None, events: Sequence[Event], case: Case | None) -> str:
    """The run as a person reads it: the question, what the agent did, its answer, and the
    case's reference answer when it names one."""
    parts = [f'<h2>Question</h2><div class="question">{esc(question_of(run, events) or "-")}</div>']
    if run is not None:
        who = " ".join(x for x in (run["agent"], run["agent_version"]) if x) or "an agent"
        case_name = (
            f" · case {esc(run['dataset'] or '-')}/{esc(run['case_id'])}" if run["case_id"] else ""
        )
        parts.append(
            f'<p class="muted">{esc(who)} · {esc(run["status"] or "running")}{case_name}</p>'
        )
    steps = steps_html(events) or "<li>no step</li>"
    parts.append(f'<h2>What it did</h2><ol class="steps">{steps}</ol>')
    answer = answer_of(run, events)
    parts.append(
        f'<h2>Answer</h2><div class="answer">{esc(answer) if answer else "(no answer recorded)"}'
        "</div>"
    )
    if case is not None and (case.reference_answer or case.stub_response):
        parts.append(
            f"<h2>Reference answer <small>case {esc(case.case_id)}</small></h2>"
            f'<div class="reference">{esc(case.reference_answer or case.stub_response)}</div>'
        )
    return "".join(parts)


def latest_verdicts(events: Sequence[Event]) -> list[Event]:
    """The latest verdict of each scorer version (and step) among a run's events."""
    found: dict[tuple[str, str, str | None], Event] = {}
    for e in events:
        if e.kind != "verdict":
            continue
        p = e.payload
        key = (str(p["scorer"]), str(p["scorer_version"]), p.get("subject_span_id"))
        held = found.get(key)
        if held is None or (e.ts, str(e.event_id)) > (held.ts, str(held.event_id)):
            found[key] = e
    return sorted(found.values(), key=lambda e: (e.payload["scorer"], e.payload["scorer_version"]))


def verdicts_html(verdicts: Sequence[Event] | None, later: bool) -> str:
    if verdicts is None:
        return (
            '<h2>Judges\' verdicts</h2><p class="muted">Shown once you have labelled this item.</p>'
            if later
            else ""
        )
    if not verdicts:
        return '<h2>Judges\' verdicts</h2><p class="muted">No verdict on this run.</p>'
    rows = []
    for e in verdicts:
        p = e.payload
        passed = p.get("passed")
        outcome = p.get("label") or ("pass" if passed else "fail" if passed is not None else "-")
        score = f"{p['score']:.3f}" if p.get("score") is not None else "-"
        rows.append(
            f"<tr><td><code>{esc(p['scorer'])}</code> "
            f"<small>{esc(p['scorer_version'])}</small></td>"
            f"<td>{esc(outcome)}</td><td>{score}</td><td>{esc(p.get('failure_type') or '')}</td>"
            f"<td>{esc(shown(p.get('rationale') or '', 600))}</td></tr>"
        )
    return (
        "<h2>Judges' verdicts</h2><table><thead><tr><th>scorer</th><th>outcome</th>"
        f"<th>score</th><th>failure</th><th>why</th></tr></thead><tbody>{''.join(rows)}"
        "</tbody></table>"
    )
