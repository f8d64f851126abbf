"""`agentdocket sessions list|show`: conversations, each turn a run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from agentdocket.commands.common import (
    FORMAT,
    console,
    echo_json,
    new_table,
    open_from,
    shorten,
)


@click.group()
def sessions() -> None:
    """Inspect conversations: the runs that share a conversation id are one session.

    A run's conversation id is its root span's gen_ai.conversation.id (OpenTelemetry's GenAI
    conventions), session.id (OpenInference), or what tracer.run(..., conversation=...) gave.
    """


@sessions.command(name="list")
@click.option("--dataset", help="Only turns of this dataset.")
@click.option("--agent", help="Only turns of this agent.")
@click.option("--limit", default=50, show_default=True, help="At most this many (0: all).")
@FORMAT
@click.pass_context
def sessions_list(
    ctx: click.Context, dataset: str | None, agent: str | None, limit: int, fmt: str = "table"
) -> None:
    """List sessions, the most recently active first.

    \b
    Examples:
      agentdocket sessions list
      agentdocket sessions list --agent support --format json
    """
    with open_from(ctx) as store:
        rows = store.sessions.recent(dataset=dataset, agent=agent, limit=limit or None)
        total = store.sessions.count(dataset=dataset, agent=agent)
    if fmt == "json":
        echo_json({"total": total, "sessions": rows})
        return
    table = new_table(title=f"sessions ({len(rows)} of {total})", title_justify="left")
    for col in ("session", "agent", "turns", "status", "first question", "last answer"):
        table.add_column(col, no_wrap=col == "session")
    for r in rows:
        style = {"ok": "green", "error": "red"}.get(r["status"], "yellow")
        table.add_row(
            r["session_id"],
            r["agent"] or "-",
            str(r["turns"]),
            f"[{style}]{r['status']}[/]",
            shorten(r["first_question"], 40),
            shorten(r["last_answer"], 40),
        )
    console.print(table)


def _resolve(store: Any, given: str) -> str:
    """The session id ``given`` names: itself, or the one session id starting so."""
    if store.sessions.turns(given):
        return given
    matches = store.sessions.with_prefix(given)
    if not matches:
        raise click.ClickException(f"no session {given!r} (agentdocket sessions list)")
    if len(matches) > 1:
        raise click.ClickException(
            f"{given!r} starts several sessions: {', '.join(matches)}; give more characters"
        )
    return str(matches[0])


@sessions.command(name="show")
@click.argument("session_id")
@FORMAT
@click.pass_context
def sessions_show(ctx: click.Context, session_id: str, fmt: str = "table") -> None:
    """Show one session's turns in order: the user's message, the answer, the tools called
    and each turn's verdicts (SESSION_ID may be abbreviated).

    \b
    Examples:
      agentdocket sessions show c-42
      agentdocket sessions show c-42 --format json
    """
    with open_from(ctx) as store:
        sid = _resolve(store, session_id)
        turns: list[dict[str, Any]] = []
        judged: list[dict[str, Any]] = []  # the session scorers' verdicts, on whichever turn
        runs = store.sessions.turns(sid)
        for n, run in enumerate(runs, 1):
            trace = store.reader.read_trace(run["trace_id"])
            events = list(trace.events) if trace is not None else []
            verdicts = sorted(
                (e for e in events if e.kind == "verdict"), key=lambda e: (e.ts, str(e.event_id))
            )
            judged += [
                {
                    **_verdict(e.payload),
                    "failure_type": e.payload.get("failure_type"),
                    "rationale": e.payload.get("rationale"),
                    "at_turn": n,
                    "current": n == len(runs),  # on the last turn: it judged every turn
                }
                for e in verdicts
                if str(e.payload["scorer"]).startswith("session.")
            ]
            turns.append(
                {
                    "trace_id": run["trace_id"],
                    "agent": run["agent"],
                    "status": run["status"] or "running",
                    "started_at": run["started_at"],
                    "ended_at": run["ended_at"],
                    "question": run["question"],
                    "answer": run["answer"],
                    "tools": [e.payload["tool"] for e in events if e.kind == "tool.called"],
                    "verdicts": [
                        _verdict(e.payload)
                        for e in verdicts
                        if not str(e.payload["scorer"]).startswith("session.")
                    ],
                }
            )
    if fmt == "json":
        echo_json({"session_id": sid, "turns": turns, "verdicts": judged})
        return
    console.print(f"[bold]session {sid}[/]: {len(turns)} turns", highlight=False)
    for n, t in enumerate(turns, 1):
        console.print(
            f"\n[bold]turn {n}[/] {t['trace_id'][:12]}  {t['agent'] or '-'}  {t['status']}",
            highlight=False,
        )
        console.print(f"  user:  {t['question'] or '-'}", markup=False, highlight=False)
        console.print(f"  agent: {t['answer'] or '-'}", markup=False, highlight=False)
        if t["tools"]:
            console.print(f"  tools: {', '.join(t['tools'])}", markup=False, highlight=False)
        for v in t["verdicts"]:
            console.print(f"  verdict: {_said(v)}", markup=False, highlight=False)
    if judged:
        console.print("\n[bold]the session[/]", highlight=False)
    for v in judged:
        when = "" if v["current"] else f" (earlier: of its first {v['at_turn']} turns)"
        why = f": {v['rationale']}" if v["rationale"] and v["passed"] is False else ""
        console.print(f"  {_said(v)}{when}{why}", markup=False, highlight=False)


def _verdict(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "scorer": payload["scorer"],
        "scorer_version": payload["scorer_version"],
        "passed": payload.get("passed"),
        "score": payload.get("score"),
        "label": payload.get("label"),
    }


def _said(v: dict[str, Any]) -> str:
    passed = v["passed"]
    outcome = v["label"] or ("pass" if passed else "fail" if passed is not None else "-")
    score = f" {v['score']:.3f}" if v["score"] is not None else ""
    return f"{v['scorer']}@{v['scorer_version']} {outcome}{score}"
