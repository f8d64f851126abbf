"""People in the loop on the command line: ``rubric``, ``annotator`` and ``feedback``
(labels given here); queues and agreement are in :mod:`agentdocket.commands.annotation`."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from agentdocket.commands.common import (
    FORMAT,
    console,
    echo_json,
    new_table,
    open_from,
    resolve_trace,
)
from agentdocket.events import Label, format_ts
from agentdocket.events.labels import label_event, new_label_id
from agentdocket.events.rubrics import RubricError, parse_rubrics


@click.group()
def rubric() -> None:
    """Rubrics: what annotators are asked about a run, and which answers count.

    \b
    Examples:
      agentdocket rubric add rubrics.toml
      agentdocket rubric list --format json
    """


@rubric.command(name="add")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.pass_context
def rubric_add(ctx: click.Context, file: Path) -> None:
    """Register the rubrics of a TOML file ([[rubric]] tables: name, question, kind, and
    labels, ordered, low, high, version). A version is immutable: change a rubric by giving
    it a new version.

    \b
    Examples:
      agentdocket rubric add rubrics.toml
    """
    rubrics = parse_rubrics(file.read_text(encoding="utf-8"), str(file))
    with open_from(ctx, create=True) as store:
        for r in rubrics:
            new = store.labels.register_rubric(r)
            state = "registered" if new else "already registered"
            console.print(f"rubric {r.name} version {r.version} ({r.kind}): {state}", markup=False)


@rubric.command(name="list")
@FORMAT
@click.pass_context
def rubric_list(ctx: click.Context, fmt: str) -> None:
    """The registered rubrics (every version) and the built-in ones.

    \b
    Examples:
      agentdocket rubric list --format json
    """
    with open_from(ctx) as store:
        rubrics = store.labels.rubrics()
    if fmt == "json":
        echo_json([r.to_json() for r in rubrics])
        return
    table = new_table("name", "version", "kind", "answers", "question")
    for r in rubrics:
        answers = ", ".join(caption for caption, _ in r.choices()) or "text"
        table.add_row(r.name, r.version, r.kind, answers, r.question)
    console.print(table)


@click.group()
def annotator() -> None:
    """People who label runs in annotation queues, each with a sign-in token.

    \b
    Examples:
      agentdocket annotator add ana
      agentdocket annotator add ana --rotate
    """


@annotator.command(name="add")
@click.argument("name")
@click.option("--rotate", is_flag=True, help="Give an existing annotator a new token.")
@click.pass_context
def annotator_add(ctx: click.Context, name: str, rotate: bool) -> None:
    """Make an annotator; prints the sign-in token once (only its digest is kept).

    \b
    Examples:
      agentdocket annotator add ana
      agentdocket annotator add ana --rotate
    """
    with open_from(ctx, create=True) as store:
        token = store.queues.add_annotator(name, rotate=rotate)
    click.echo(token)


@click.group()
def feedback() -> None:
    """People's labels on runs: give one, list them.

    \b
    Examples:
      agentdocket feedback add 4bf92f3577b34da6a3ce929d0e0e4736 --rubric thumbs \\
          --value down --author ana --comment "wrong table"
      agentdocket feedback list --rubric thumbs --format json
    """


@feedback.command(name="add")
@click.argument("trace_id")
@click.option("--rubric", "rubric_name", required=True, help="NAME[@VERSION] (thumbs built in).")
@click.option("--value", required=True, help="The answer, as the rubric takes it.")
@click.option("--author", required=True, help="Who gives the label.")
@click.option("--comment", help="Words to go with it.")
@click.option("--span", "span_id", help="The step labelled (its span id), if not the whole run.")
@click.option("--id", "label_id", help="The label's id (sent again: stored once).")
@click.option(
    "--queue", "queue_name", help="The annotation queue it answers (labels made elsewhere)."
)
@click.pass_context
def feedback_add(
    ctx: click.Context,
    trace_id: str,
    rubric_name: str,
    value: str,
    author: str,
    comment: str | None,
    span_id: str | None,
    label_id: str | None,
    queue_name: str | None,
) -> None:
    """Label a run: TRACE_ID as `runs list` shows it (its first characters), or the whole id
    of a run not stored yet (the label is kept and meets it).

    \b
    Examples:
      agentdocket feedback add 4bf92f3577b34da6a3ce929d0e0e4736 --rubric thumbs --value up \\
          --author ana
    """
    name, _, version = rubric_name.partition("@")
    with open_from(ctx) as store:
        trace_id = resolve_trace(store, trace_id, stored=False)
        found = store.labels.rubric(name, version or None)
        if found is None:
            raise click.BadParameter(f"no rubric {rubric_name!r}", param_hint="--rubric")
        if queue_name is not None:
            queue = store.queues.get(queue_name)
            if queue is None or trace_id not in queue.items:
                raise click.BadParameter(
                    f"no run {trace_id} in queue {queue_name!r}", param_hint="--queue"
                )
            if author not in queue.members:
                raise click.BadParameter(
                    f"{author!r} is not an annotator of {queue_name!r}", param_hint="--author"
                )
        try:
            answer = found.check(value, "--value")
            event = label_event(
                Label(
                    label_id=label_id or new_label_id(),
                    subject_trace_id=trace_id,
                    subject_span_id=span_id,
                    rubric=found.name,
                    rubric_version=found.version,
                    author=author,
                    source="cli",
                    value=answer,
                    comment=comment,
                    queue=queue_name,
                )
            )
        except (RubricError, ValueError) as exc:
            raise click.ClickException(str(exc)) from None
        known = bool(store.reader.known_runs([trace_id]))
        stored = store.append([event], source="feedback add").inserted
    note = "" if known else " (no run with this trace id yet: kept for when it arrives)"
    console.print(f"label {'stored' if stored else 'already stored'}{note}", markup=False)


@feedback.command(name="list")
@click.option("--rubric", "rubric_name", help="Only labels of this rubric.")
@click.option("--queue", "queue_name", help="Only labels given in this queue.")
@click.option("--author", help="Only labels by this author.")
@FORMAT
@click.pass_context
def feedback_list(
    ctx: click.Context,
    rubric_name: str | None,
    queue_name: str | None,
    author: str | None,
    fmt: str,
) -> None:
    """Labels given (superseded ones and skips too), oldest first.

    \b
    Examples:
      agentdocket feedback list --queue triage --format json
    """
    with open_from(ctx) as store:
        given = store.labels.given(rubric=rubric_name, queue=queue_name, author=author)
    rows = [
        {
            "trace_id": g.trace_id,
            "span_id": g.span_id,
            "rubric": g.rubric,
            "author": g.author,
            "value": g.value,
            "skipped": g.skipped,
            "comment": g.comment,
            "queue": g.queue,
            "source": g.source,
            "ts": g.ts,
        }
        for g in given
    ]
    if fmt == "json":
        echo_json(rows)
        return
    table = new_table("time", "run", "rubric", "author", "value", "comment")
    for r in rows:
        ts = r["ts"]
        shown = f"skipped: {r['skipped']}" if r["skipped"] is not None else str(r["value"])
        table.add_row(
            format_ts(ts) if isinstance(ts, datetime) else str(ts),
            str(r["trace_id"]),
            str(r["rubric"]),
            str(r["author"]),
            shown,
            str(r["comment"] or ""),
        )
    console.print(table)
