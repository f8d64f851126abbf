"""People in the loop on the command line: ``rubric``, ``annotator``, ``queue`` and
``feedback`` (labels given here)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click
from rich.table import Table

from agentdocket.commands.common import FORMAT, console, echo_json, open_from
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
    with open_from(ctx) as store:
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
    table = Table("name", "version", "kind", "answers", "question")
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
    with open_from(ctx) as store:
        token = store.queues.add_annotator(name, rotate=rotate)
    click.echo(token)


@click.group()
def queue() -> None:
    """Annotation queues: runs to label, how many annotators each, and who.

    \b
    Examples:
      agentdocket queue create review-week-48 --rubric helpful --annotator ana \\
          --annotator ben --per-item 2 --failing tools.slot_fill --sample 50
      agentdocket queue progress review-week-48 --format json
    """


@queue.command(name="create")
@click.argument("name")
@click.option("--rubric", "rubrics", multiple=True, required=True, help="NAME[@VERSION].")
@click.option("--annotator", "members", multiple=True, required=True, help="A member (repeat).")
@click.option("--per-item", default=1, show_default=True, help="Annotators per run.")
@click.option("--dataset", help="Runs of this dataset.")
@click.option("--agent", help="Runs of this agent.")
@click.option("--failing", help="Runs this scorer failed: NAME[=VERSION].")
@click.option("--disagree", help="Runs two scorers judge differently: A,B.")
@click.option("--trace", "traces", multiple=True, help="A run by trace id (repeat).")
@click.option(
    "--traces-from",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="A file of trace ids, one a line.",
)
@click.option("--sample", type=click.IntRange(min=1), help="Keep this many (deterministic).")
@click.option("--show-verdicts", is_flag=True, help="Show the judges' verdicts once labelled.")
@click.pass_context
def queue_create(
    ctx: click.Context,
    name: str,
    rubrics: tuple[str, ...],
    members: tuple[str, ...],
    per_item: int,
    dataset: str | None,
    agent: str | None,
    failing: str | None,
    disagree: str | None,
    traces: tuple[str, ...],
    traces_from: Path | None,
    sample: int | None,
    show_verdicts: bool,
) -> None:
    """Make a queue of the runs a selection finds (filters combine).

    \b
    Examples:
      agentdocket queue create triage --rubric thumbs --annotator ana --failing tools.slot_fill
      agentdocket queue create judges --rubric helpful@1 --annotator ana --annotator ben \\
          --per-item 2 --disagree review.peer.tool_employment,answer.reference --sample 100
    """
    from agentdocket.people.selection import Selection, parse_pair, read_trace_list, select

    listed = traces + (read_trace_list(traces_from.read_text().splitlines()) if traces_from else ())
    selection = Selection(
        dataset=dataset,
        agent=agent,
        failing=failing,
        disagree=parse_pair(disagree),
        traces=listed,
        sample=sample,
    )
    with open_from(ctx) as store:
        chosen = []
        for given in rubrics:
            rname, _, version = given.partition("@")
            found = store.labels.rubric(rname, version or None)
            if found is None:
                raise click.BadParameter(f"no rubric {given!r} (rubric add)", param_hint="--rubric")
            chosen.append((found.name, found.version))
        items = select(store, name, selection)
        made = store.queues.create(
            name,
            rubrics=chosen,
            per_item=per_item,
            items=items,
            members=members,
            selection=selection.to_json(),
            show_verdicts=show_verdicts,
        )
    console.print(
        f"queue {made.name}: {len(made.items)} runs, {made.per_item} annotators each, "
        f"members {', '.join(made.members)}",
        markup=False,
    )


@queue.command(name="list")
@FORMAT
@click.pass_context
def queue_list(ctx: click.Context, fmt: str) -> None:
    """Every queue with its progress.

    \b
    Examples:
      agentdocket queue list --format json
    """
    with open_from(ctx) as store:
        found = [store.queues.get(n) for n in store.queues.names()]
        rows = [(q, store.queues.progress(q)) for q in found if q is not None]
    if fmt == "json":
        echo_json(
            [
                {
                    "name": q.name,
                    "rubrics": [f"{n}@{v}" for n, v in q.rubrics],
                    "items": p.items,
                    "per_item": q.per_item,
                    "complete": p.complete,
                    "members": list(q.members),
                    "created_at": q.created_at,
                }
                for q, p in rows
            ]
        )
        return
    table = Table("queue", "rubrics", "runs", "per run", "complete", "members")
    for q, p in rows:
        table.add_row(
            q.name,
            ", ".join(f"{n}@{v}" for n, v in q.rubrics),
            str(p.items),
            str(q.per_item),
            str(p.complete),
            ", ".join(q.members),
        )
    console.print(table)


@queue.command(name="progress")
@click.argument("name")
@FORMAT
@click.pass_context
def queue_progress(ctx: click.Context, name: str, fmt: str) -> None:
    """How far a queue is, in all and per annotator.

    \b
    Examples:
      agentdocket queue progress triage
    """
    with open_from(ctx) as store:
        found = store.queues.get(name)
        if found is None:
            raise click.BadParameter(f"no queue {name!r}", param_hint="NAME")
        p = store.queues.progress(found)
    if fmt == "json":
        echo_json(
            {
                "queue": p.queue,
                "items": p.items,
                "per_item": p.per_item,
                "complete": p.complete,
                "labels": p.labels,
                "skipped": p.skipped,
                "annotators": p.by_annotator,
            }
        )
        return
    console.print(
        f"queue {p.queue}: {p.complete} of {p.items} runs complete ({p.labels} labels of "
        f"{p.items * p.per_item} wanted, {p.skipped} skipped)",
        markup=False,
    )
    table = Table("annotator", "labelled", "skipped", "remaining")
    for who, counts in sorted(p.by_annotator.items()):
        table.add_row(who, *(str(counts[k]) for k in ("labelled", "skipped", "remaining")))
    console.print(table)


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
) -> None:
    """Label a run (it need not be stored yet: the label is kept and meets it).

    \b
    Examples:
      agentdocket feedback add 4bf92f3577b34da6a3ce929d0e0e4736 --rubric thumbs --value up \\
          --author ana
    """
    name, _, version = rubric_name.partition("@")
    with open_from(ctx) as store:
        found = store.labels.rubric(name, version or None)
        if found is None:
            raise click.BadParameter(f"no rubric {rubric_name!r}", param_hint="--rubric")
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
    table = Table("time", "run", "rubric", "author", "value", "comment")
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
