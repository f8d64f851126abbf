"""The tables `runs show` prints of a run's steps: each step's one-line summary, a timeline
indented by span depth, and the verdicts."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

from agentdocket.commands.common import new_table
from agentdocket.events import Event

if TYPE_CHECKING:
    from rich.table import Table


def step_summary(event: Event) -> str:
    """One line of what an event says."""
    p = event.payload
    k = event.kind
    if k == "run.started":
        return f"{p['agent']} {p.get('agent_version') or ''} · {p.get('question') or ''}".strip()
    if k == "plan":
        return " → ".join(s.get("tool") or s.get("text") or "?" for s in p["steps"])
    if k == "tool.called":
        return f"{p['tool']}({json.dumps(p['arguments'], ensure_ascii=False)})"
    if k == "tool.returned":
        if p.get("error"):
            return f"error: {p['error']}"
        return json.dumps(p.get("result"), ensure_ascii=False)
    if k == "sql.executed":
        if p.get("error"):
            return f"{p['query']}  → error: {p['error']}"
        return f"{p['query']}  → {p.get('row_count')} rows"
    if k == "retrieval":
        return f"{p['query']} → {', '.join(d['id'] for d in p['documents'])}"
    if k == "llm.called":
        out = p.get("output_messages") or []
        text = out[-1]["content"] if out else ""
        return f"{p['model']} ({p.get('role') or '-'}) {text}"
    if k in ("message",):
        return f"{p['role']}: {p['content']}"
    if k == "response":
        return str(p["text"])
    if k == "run.finished":
        return str(p["status"]) + (f": {p['error']}" if p.get("error") else "")
    if k == "step":
        return str(p["name"])
    return json.dumps(p, ensure_ascii=False)


def steps_table(
    steps: list[Event],
    start: datetime,
    width: int,
    max_steps: int,
    parents: dict[str, str | None] | None = None,
) -> Table:
    """The steps, indented by span depth (among the steps, or by ``parents``, each span's
    parent, when given); past ``max_steps`` (0: no limit) the first and the last tenth of that
    many, with a row saying how many are left out between them."""
    table = new_table(show_header=True, header_style="bold")
    for col in ("seq", "+ms", "kind", "what"):
        table.add_column(col, overflow="fold")
    depth = _depths(
        parents if parents is not None else {e.span_id: e.parent_span_id for e in steps}
    )
    shown: list[Event | None] = list(steps)
    if 0 < max_steps < len(steps):
        tail = max_steps // 10
        shown = [*steps[: max_steps - tail], None, *steps[len(steps) - tail :]]
    for e in shown:
        if e is None:
            table.add_row("⋮", "", "", f"[dim]{len(steps) - max_steps:,} more steps[/]")
            continue
        offset = (e.ts - start).total_seconds() * 1000
        text = step_summary(e)
        if len(text) > width:
            text = text[: width - 1] + "…"
        style = "red" if e.payload.get("error") else ""
        indent = "  " * min(depth.get(e.span_id, 0), 40)
        table.add_row(
            str(e.seq), f"{offset:.0f}", indent + e.kind, f"[{style}]{text}[/]" if style else text
        )
    return table


def verdicts_table(verdicts: list[Event]) -> Table:
    """Every verdict on the run, newest last: outcome, score, failure type and why."""
    table = new_table(title="verdicts", title_justify="left", show_header=True, header_style="bold")
    for col in ("scorer", "version", "outcome", "score", "failure", "why"):
        table.add_column(col, overflow="fold")
    for e in sorted(verdicts, key=lambda e: (e.ts, str(e.event_id))):
        p = e.payload
        passed = p.get("passed")
        outcome = p.get("label") or ("pass" if passed else "fail" if passed is not None else "-")
        style = "green" if passed else "red" if passed is not None else ""
        table.add_row(
            p["scorer"],
            p["scorer_version"],
            f"[{style}]{outcome}[/]" if style else outcome,
            f"{p['score']:.3f}" if p.get("score") is not None else "-",
            p.get("failure_type") or "-",
            p.get("rationale") or "-",
        )
    return table


def _depths(parent: dict[str, str | None]) -> dict[str, int]:
    """Each span's depth below the run's top (``parent``: each span's parent), each span
    walked once: a chain of thousands of nested spans costs no more than a flat run. A parent
    cycle counts as the top where it closes."""
    depth: dict[str, int] = {}
    for span in parent:
        chain: list[str] = []
        on_chain: set[str] = set()
        cur: str | None = span
        while cur is not None and cur in parent and cur not in depth and cur not in on_chain:
            chain.append(cur)
            on_chain.add(cur)
            cur = parent[cur]
        d = depth[cur] + 1 if cur is not None and cur in depth else 0
        for s in reversed(chain):
            depth[s] = d
            d += 1
    return depth
