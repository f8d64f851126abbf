"""Annotation queues on the command line: ``queue`` (create, list, progress) and ``agreement``
(how far a queue's annotators agree)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from agentdocket.commands.common import FORMAT, console, echo_json, new_table, open_from


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
    table = new_table("queue", "rubrics", "runs", "per run", "complete", "members")
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
    table = new_table("annotator", "labelled", "skipped", "remaining")
    for who, counts in sorted(p.by_annotator.items()):
        table.add_row(who, *(str(counts[k]) for k in ("labelled", "skipped", "remaining")))
    console.print(table)


@click.command(name="agreement")
@click.option("--queue", "queue_name", required=True, help="The queue whose labels to compare.")
@click.option("--rubric", "rubric_name", help="Only this rubric (default: each of the queue's).")
@click.option("--samples", default=1000, show_default=True, help="Bootstrap resamples.")
@click.option("--seed", default=0, show_default=True, help="Bootstrap seed.")
@FORMAT
@click.pass_context
def agreement_command(
    ctx: click.Context,
    queue_name: str,
    rubric_name: str | None,
    samples: int,
    seed: int,
    fmt: str,
) -> None:
    """How far a queue's annotators agree, per rubric: percent agreement, Fleiss' kappa,
    Krippendorff's alpha (nominal; ordinal too for a scale or ordered labels) and Cohen's
    kappa of each pair, each with a 95% bootstrap interval over runs (BCa).

    \b
    Examples:
      agentdocket agreement --queue triage
      agentdocket agreement --queue triage --rubric helpful --format json
    """
    from agentdocket.people.panels import measure

    with open_from(ctx) as store:
        found = store.queues.get(queue_name)
        if found is None:
            raise click.BadParameter(f"no queue {queue_name!r}", param_hint="--queue")
        names = [r for r in found.rubrics if rubric_name in (None, r[0])]
        if not names:
            raise click.BadParameter(
                f"queue {queue_name!r} has no rubric {rubric_name!r}", param_hint="--rubric"
            )
        rubrics = [store.labels.rubric(n, v) for n, v in names]
        labels = store.labels.given(queue=queue_name)
    results = measure(labels, [r for r in rubrics if r is not None], samples=samples, seed=seed)
    if fmt == "json":
        echo_json(
            [
                {"rubric": r.rubric.name, "version": r.rubric.version, "labels": r.labels}
                | dataclasses.asdict(r.result)
                for r in results
            ]
        )
        return
    for r in results:
        a = r.result
        console.print(
            f"{queue_name} / {r.rubric.name} ({r.rubric.kind}): {a.n_items} runs, "
            f"{a.n_annotators} annotators, {r.labels} labels",
            markup=False,
        )
        table = new_table("measure", "value", "95% interval", "runs")
        rows = [
            ("percent agreement", a.percent),
            ("Fleiss' kappa", a.fleiss),
            ("Krippendorff's alpha (nominal)", a.alpha_nominal),
        ]
        if a.alpha_ordinal is not None:
            rows.append(("Krippendorff's alpha (ordinal)", a.alpha_ordinal))
        rows += [(f"Cohen's kappa {p.first} / {p.second}", p.kappa) for p in a.pairwise]
        for name, e in rows:
            table.add_row(name, _num(e.value), _interval(e.low, e.high), str(e.n_items))
        console.print(table)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _interval(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"
