"""The ``agentdocket`` command line."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import click

from agentdocket.commands import annotation as annotation_commands
from agentdocket.commands import compare as compare_commands
from agentdocket.commands import costs as cost_commands
from agentdocket.commands import datasets as dataset_commands
from agentdocket.commands import dead_letters as dead_letter_commands
from agentdocket.commands import examine as examine_commands
from agentdocket.commands import experiment as experiment_commands
from agentdocket.commands import exports, imports, reports
from agentdocket.commands import followers as followers_commands
from agentdocket.commands import grammar as grammar_commands
from agentdocket.commands import people as people_commands
from agentdocket.commands import refresh_dashboards as dashboard_commands
from agentdocket.commands import retention as retention_commands
from agentdocket.commands import runs as runs_commands
from agentdocket.commands import score as scoring
from agentdocket.commands import sessions as session_commands
from agentdocket.commands.common import confirm, console, err, open_from, real
from agentdocket.commands.serve import serve
from agentdocket.errors import AgentdocketError


class _Group(click.Group):
    """The command group, and the one place user errors become messages: any
    :class:`~agentdocket.errors.AgentdocketError` a command did not turn into a message of its
    own is printed as the one line naming the problem (never a traceback), exit status 1.
    One that is a click exception too keeps its own message and exit status."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException:
            raise  # a message of its own already, with its exit status
        except AgentdocketError as exc:
            raise click.ClickException(str(exc)) from None


@click.group(cls=_Group)
@click.option(
    "--database",
    "url",
    envvar="AGENTDOCKET_DATABASE_URL",
    help="postgresql+psycopg://... or sqlite:///path (default: ./agentdocket.db).",
)
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    envvar="AGENTDOCKET_PLUGINS",
    help="A Python module to import first, e.g. one that registers scorers (repeatable; the "
    "variable takes a space-separated list).",
)
@click.version_option(package_name="agentdocket", message="agentdocket %(version)s")
@click.pass_context
def main(ctx: click.Context, url: str | None, plugins: tuple[str, ...]) -> None:
    """Record what AI agents do as an append-only event log, and score it afterwards."""
    ctx.ensure_object(dict)
    ctx.obj["url"] = url
    for module in plugins:
        try:
            importlib.import_module(module)
        except Exception as exc:  # any failure of a plugin is reported as such
            raise click.ClickException(
                f"plugin {module!r} could not be imported: {type(exc).__name__}: {exc}"
            ) from None


@main.command()
@click.argument("revision", default="head")
@click.option("--down", is_flag=True, help="Downgrade to REVISION (e.g. base) instead.")
@click.option("--yes", is_flag=True, help="Downgrade a database that holds data without asking.")
@click.pass_context
def migrate(ctx: click.Context, revision: str, down: bool, yes: bool) -> None:
    """Bring the database schema to REVISION (default: the newest).

    At the newest revision it also re-creates the dashboards' views and functions from this
    agentdocket's scorers, in the same transaction, keeping the grants of roles that read
    them (a scorer change needs no migration: run this again after upgrading agentdocket).

    \b
    Examples:
      agentdocket migrate
      agentdocket --database postgresql+psycopg://u:pw@db/agents migrate
      agentdocket migrate 0010 --down --yes
    """
    from agentdocket import dashboards
    from agentdocket.store import database_url, display_url
    from agentdocket.store import migrate as migrations

    url = database_url(ctx.obj.get("url"))
    if down:
        held = _events_held(url)
        if held:
            confirm(
                ctx,
                yes,
                f"{display_url(url)} holds {held:,} events; migrating down to {revision} drops "
                "what the revisions above it hold (to base: everything)",
            )
        migrations.downgrade(url, revision)
    else:
        migrations.upgrade(url, revision, derived=dashboards.objects())
    current = migrations.current_revision(url)
    console.print(f"{display_url(url)}: schema at revision {current or 'base'}")


def _events_held(url: str) -> int:
    """How many events the database at ``url`` holds (0 with no schema, or no file)."""
    from agentdocket.store import migrate as migrations
    from agentdocket.store import open_store
    from agentdocket.store.backends import backend_of
    from agentdocket.store.config import parse_url

    parsed = parse_url(url)
    if backend_of(parsed).embedded and not Path(str(parsed.database)).is_file():
        return 0
    if migrations.current_revision(url) is None:
        return 0
    with open_store(url, migrate=False) as store:
        return int(store.reader.counts()["events"])


@main.command()
@click.pass_context
def rebuild(ctx: click.Context) -> None:
    """Rebuild the projections (runs, verdicts) from the event log.

    \b
    Examples:
      agentdocket rebuild
      agentdocket --database sqlite:///runs.db rebuild
    """
    with open_from(ctx) as store:
        replayed = store.projections.rebuild()
        counts = {"events": replayed, **store.reader.counts()}
        refreshed = store.projections.refresh_dashboards()
    console.print(
        f"replayed {counts['events']} events: {counts['runs']} runs, {counts['verdicts']} verdicts"
    )
    if refreshed is not None:
        console.print(f"dashboards: {refreshed}")


@main.command()
@click.argument("kind", required=False)
def schemas(kind: str | None) -> None:
    """Print the JSON Schema of each event kind's payload (or of KIND; `case`: one case of a
    case file, as `datasets add` reads it).

    \b
    Examples:
      agentdocket schemas
      agentdocket schemas tool.called
    """
    from agentdocket.events import PAYLOAD_TYPES, Case, json_schema

    if kind == "case":
        click.echo(json.dumps(json_schema(Case), indent=2))
        return
    kinds = [kind] if kind else list(PAYLOAD_TYPES)
    out = {}
    for k in kinds:
        if k not in PAYLOAD_TYPES:
            known = ", ".join([*PAYLOAD_TYPES, "case"])
            raise click.BadParameter(f"unknown kind {k!r}; known: {known}")
        cls = PAYLOAD_TYPES[k]
        out[k] = {"schema_version": cls.VERSION, **json_schema(cls)}  # type: ignore[attr-defined]
    click.echo(json.dumps(out if not kind else out[kind], indent=2))


# --- demo -------------------------------------------------------------------------------------


@main.command()
@click.option(
    "--concerts-db",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Keep the demo's concerts database at this path (default: a temporary file).",
)
@click.option(
    "--judge",
    help="Also judge the answers with answer.reference through this model (local:smollm2, "
    "the one run here; or PROVIDER:MODEL), then calibrate that judge against answer.exact.",
)
@click.pass_context
def demo(ctx: click.Context, concerts_db: Path | None, judge: str | None) -> None:
    """Run a scripted database-QA agent over its own concerts database in three strategies
    (sequential, iterative, no-interaction), recording every step through the tracer; list the
    runs, score them with every scorer and print the report by strategy. With --judge, an LLM
    judge scores the answers too, and is measured against the exact-match verdicts.

    \b
    Examples:
      agentdocket demo
      agentdocket --database sqlite:///demo.db demo --concerts-db concerts.db
      agentdocket demo --judge local:smollm2
    """
    if judge is not None:  # its model found before anything is recorded
        from agentdocket.scorers.judges.client import JudgeUnavailable, resolve_model

        try:
            resolve_model(judge)
        except JudgeUnavailable as exc:
            raise click.BadParameter(str(exc), param_hint="--judge") from None
        judge_scorer = scoring.chosen_scorers(("answer.reference",), {}, judge)
    from rich.progress import Progress

    from agentdocket.demo import DATASET, QUESTIONS, STRATEGIES, run_demo
    from agentdocket.store import database_url, display_url

    url = database_url(ctx.obj.get("url"))
    console.print(f"store: {display_url(url)}")
    total = len(QUESTIONS) * len(STRATEGIES)
    with Progress(console=real(err), transient=True) as progress:
        task = progress.add_task("recording runs", total=total)

        def advance(case_id: str, strategy: str, answer: str) -> None:
            progress.update(task, advance=1, description=f"{strategy} {case_id}")

        result = run_demo(url, concerts_db=concerts_db, progress=advance)
    stats = result.stats
    console.print(
        f"recorded {len(result.trace_ids)} runs ({len(QUESTIONS)} questions x "
        f"{', '.join(STRATEGIES)}): {stats.spans} spans, {stats.events} events, "
        f"{stats.delivered + stats.replayed} stored"
    )
    if stats.spooled:
        err.print(
            f"[yellow]{stats.spooled} events are spooled in {result.spool_dir}: the store was "
            "unavailable; they are delivered when it is reachable again[/]"
        )
    if concerts_db is not None:
        console.print(f"concerts database kept at {concerts_db}")
    ctx.invoke(runs_commands.runs_list, dataset=DATASET, agent=None, limit=len(result.trace_ids))
    _score_demo(ctx, result.trace_ids)
    if judge is not None:
        _judge_demo(ctx, result.trace_ids, judge_scorer)
    _next_steps(result.trace_ids[0][:8] if result.trace_ids else "TRACE_ID")


def _score_demo(ctx: click.Context, trace_ids: list[str]) -> None:
    """Score the demo's runs with the newest version of every scorer, price their model calls
    with the demo's price file, then print the report."""
    from rich.markup import escape

    from agentdocket import scorers
    from agentdocket.costs.prices import price_book
    from agentdocket.costs.refresh import refresh
    from agentdocket.demo import DATASET, PRICES
    from agentdocket.scorers.embeddings import EmbeddingsUnavailable
    from agentdocket.scorers.runner import score_runs

    chosen = scorers.latest()
    with open_from(ctx) as store:
        with err.status("scoring the runs (loading all-MiniLM-L6-v2 the first time)"):
            try:
                score_runs(store, chosen, trace_ids=trace_ids)
            except EmbeddingsUnavailable as exc:
                # escaped: rich would take "[embeddings]" in the message for markup
                err.print(f"[yellow]response.similarity skipped: {escape(str(exc))}[/]")
                chosen = [s for s in chosen if s.name != "response.similarity"]
                score_runs(store, chosen, trace_ids=trace_ids)
        refresh(store, price_book(PRICES))
        report = reports.make_report(store, DATASET, "strategy", ())
    reports.print_report(report)


def _judge_demo(ctx: click.Context, trace_ids: list[str], chosen: list[Any]) -> None:
    """The demo's answers judged by ``answer.reference`` through the model asked for, then
    that judge calibrated against ``answer.exact`` (the demo's reference answers are what a
    right answer says word for word)."""
    from agentdocket.commands.common import scoring_progress
    from agentdocket.demo import DATASET
    from agentdocket.scorers.judges.client import JudgeUnavailable
    from agentdocket.scorers.runner import score_runs

    (scorer,) = chosen
    model = scorer.config["model"]
    console.print(f"judging the answers with answer.reference through {model}", markup=False)
    with open_from(ctx) as store, scoring_progress("judging the answers") as advance:
        try:
            done = score_runs(store, chosen, trace_ids=trace_ids, progress=advance)
        except JudgeUnavailable as exc:
            raise click.ClickException(str(exc)) from None
    console.print(
        f"{done.judge_calls} judge calls in {done.seconds:.0f}s "
        f"({done.judge_cache_hits} answered from the judge-call cache)",
        markup=False,
    )
    ctx.invoke(
        reports.calibrate_command,
        judge_name=f"answer.reference={scorer.version}",
        truth="answer.exact",
        dataset=DATASET,
        samples=1000,
        seed=0,
        fmt="table",
    )


def _next_steps(run: str) -> None:
    """A line for each next step, each a command that works as printed."""
    from agentdocket.demo import DATASET

    for what, command in (
        ("one run, step by step", f"agentdocket runs show {run}"),
        ("the report as JSON", f"agentdocket report --dataset {DATASET} --format json"),
        (
            "two strategies compared",
            f"agentdocket compare --dataset {DATASET} --baseline experiment:sequential "
            "--candidate experiment:no-interaction",
        ),
        ("what the runs cost, by role", "agentdocket costs show --by role"),
        ("the verdicts for analysis", "agentdocket export verdicts -o verdicts.parquet"),
    ):
        console.print(f"next: {what}: {command}", markup=False, highlight=False)


main.add_command(runs_commands.runs)
main.add_command(session_commands.sessions)
main.add_command(imports.import_)
main.add_command(exports.export)
for command in (*scoring.COMMANDS, *reports.COMMANDS):
    main.add_command(command)
main.add_command(examine_commands.examine)
main.add_command(grammar_commands.grammar)
main.add_command(serve)
main.add_command(dead_letter_commands.dead_letters)
main.add_command(dashboard_commands.refresh_dashboards)
main.add_command(compare_commands.compare)
main.add_command(dataset_commands.datasets)
main.add_command(experiment_commands.experiment)
main.add_command(followers_commands.followers)
main.add_command(retention_commands.retention)
for command in (
    people_commands.rubric,
    people_commands.annotator,
    annotation_commands.queue,
    people_commands.feedback,
    annotation_commands.agreement_command,
    cost_commands.costs,
):
    main.add_command(command)


@main.command(name="grafana-role")
@click.option("--name", default="agentdocket_grafana", show_default=True, help="Role name.")
@click.option(
    "--password",
    envvar="AGENTDOCKET_GRAFANA_PASSWORD",
    help="Its password (or $AGENTDOCKET_GRAFANA_PASSWORD; asked when absent).",
)
@click.option("--drop", is_flag=True, help="Take the role's rights away and drop it instead.")
@click.option("--yes", is_flag=True, help="Drop without asking.")
@click.pass_context
def grafana_role(
    ctx: click.Context, name: str, password: str | None, drop: bool, yes: bool
) -> None:
    """Create a read-only PostgreSQL role for Grafana: SELECT on the dashboard_* views only
    (on Citus, also on the tables under them, which Citus reads as the reader of a view).

    Run it again after `agentdocket migrate` adds views; it also resets the password.

    \b
    Examples:
      agentdocket grafana-role --password s3cret
      agentdocket grafana-role --name grafana_ro --password s3cret
      agentdocket grafana-role --name grafana_ro --drop --yes
    """
    from agentdocket.dashboards.grafana_role import drop_dashboard_role, grant_dashboard_role
    from agentdocket.store import StoreError, display_url

    with open_from(ctx) as store:
        readers = store.roles.readers
        if readers is None:
            raise click.ClickException(
                f"{display_url(store.url)}: the dashboards read PostgreSQL; this is not one"
            )
        try:
            if drop:
                confirm(ctx, yes, f"dropping role {name} ends what logs in with it (Grafana)")
                dropped = drop_dashboard_role(readers, name)
                console.print(f"role {name}: {'dropped' if dropped else 'no such role'}")
                return
            if password is None:
                password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
            granted = grant_dashboard_role(readers, name, password)
        except StoreError as exc:
            raise click.ClickException(f"{display_url(store.url)}: {exc}") from None
    views = granted.views
    console.print(f"role {name}: SELECT on {len(views)} views ({', '.join(views)})")
    if granted.tables:
        console.print(
            f"and, as Citus reads the tables under a view as its reader, on "
            f"{len(granted.tables)} tables ({', '.join(granted.tables)})"
        )
