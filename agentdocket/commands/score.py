"""`agentdocket score` and `agentdocket scorers`."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from agentdocket.commands.common import (
    FORMAT,
    console,
    echo_json,
    err,
    new_table,
    open_from,
    scoring_progress,
)

if TYPE_CHECKING:
    from agentdocket.scorers.base import Scorer
    from agentdocket.scorers.runner import Result
    from agentdocket.store import Store


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not an ISO 8601 date or time (e.g. 2026-11-01 or "
            "2026-11-01T12:00:00+00:00)",
            param_hint="--since",
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


@click.command()
@click.option("--dataset", help="Only runs of this dataset.")
@click.option(
    "--scorer",
    "names",
    multiple=True,
    help="A scorer to run, NAME or NAME=VERSION (repeatable; a prefix such as review.peer "
    "names every scorer under it; default: the newest version of every scorer but the LLM "
    "judges).",
)
@click.option("--since", help="Only runs that started at or after this ISO 8601 date/time.")
@click.option(
    "--judge",
    help="Judge model for LLM-judge scorers, e.g. openai:gpt-4o (needs langchain and the "
    "provider's package); judges run only when named with --scorer or given a model.",
)
@click.option("--workers", default=1, show_default=True, help="Worker processes.")
@click.option("--batch-size", default=2000, show_default=True, help="Runs per batch.")
@click.option(
    "--follow",
    is_flag=True,
    help="Keep running: judge each run as it finishes (and again when a late event changes "
    "its inputs), until stopped.",
)
@click.option(
    "--config",
    "configs",
    multiple=True,
    help="KEY=VALUE: an option of the scorers named with --scorer, typed as they declare it "
    "(repeatable; `agentdocket scorers --format json` lists them); it becomes part of the "
    "version (1+KEY=VALUE), so its verdicts stand beside the default's. With --follow, "
    "also FILE: a scoring config (TOML: scorers, their options, filters, sampling, judge "
    "budgets; see docs/scoring-live.md).",
)
@click.option("--agent", "agents", multiple=True, help="With --follow: only runs of this agent.")
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    help="With --follow: serve Prometheus metrics on this port (GET /metrics).",
)
@click.option(
    "--metrics-host", default="127.0.0.1", show_default=True, help="Address for --metrics-port."
)
@FORMAT
@click.pass_context
def score(
    ctx: click.Context,
    dataset: str | None,
    names: tuple[str, ...],
    since: str | None,
    judge: str | None,
    workers: int,
    batch_size: int,
    follow: bool,
    configs: tuple[str, ...],
    agents: tuple[str, ...],
    metrics_port: int | None,
    metrics_host: str,
    fmt: str = "table",
) -> None:
    """Score stored runs and append the verdicts as events.

    Idempotent: a scorer version that already judged a run's current inputs adds nothing, so an
    interrupted run resumes where it stopped. A new scorer version adds its verdicts beside the
    old ones.

    With --follow it keeps running and judges runs as they finish, exactly once across any
    number of followers of the same config (PostgreSQL), resuming where it stopped.

    \b
    Examples:
      agentdocket score --dataset ibm-coalitions
      agentdocket score --scorer review.peer --judge openai:gpt-4o
      agentdocket score --scorer grammar.groups --config closed_domain=false
      agentdocket score --follow --config scoring.toml --metrics-port 9464
    """
    options = dict(c.partition("=")[::2] for c in configs if "=" in c)
    files = [Path(c) for c in configs if "=" not in c]
    if len(files) > 1 or (files and not follow):
        raise click.UsageError(
            "--config takes KEY=VALUE (a scorer option), or one FILE with --follow"
        )
    config_file = files[0] if files else None
    if follow:
        if options and not names:
            raise click.UsageError("--config KEY=VALUE needs the scorers it is for: --scorer NAME")
        if since is not None or workers != 1:
            raise click.UsageError("--since and --workers are for batch scoring, not --follow")
        from agentdocket.commands.follower_options import follow_config, follow_until_stopped

        config = follow_config(
            config_file,
            names,
            agents=agents,
            datasets=[dataset] if dataset else [],
            judge=judge,
            options=options,
        )
        follow_until_stopped(ctx, config, metrics_host, metrics_port)
        return
    if agents or metrics_port is not None:
        raise click.UsageError("--agent and --metrics-port go with --follow")
    from agentdocket.scorers.embeddings import EmbeddingsUnavailable
    from agentdocket.scorers.judges.client import JudgeUnavailable
    from agentdocket.scorers.runner import Result
    from agentdocket.scorers.session_runner import score_sessions, session_scorers

    chosen = chosen_scorers(names, options, judge)
    per_run, per_session = session_scorers(chosen)
    if workers < 1 or batch_size < 1:
        raise click.BadParameter("--workers and --batch-size must be at least 1")
    with open_from(ctx) as store:
        if dataset is not None and not any(d["name"] == dataset for d in store.datasets.versions()):
            raise click.ClickException(f"no dataset {dataset!r} in the store")
        try:
            result = _score_runs(store, per_run, dataset, since, workers, batch_size)
            sessions = Result()
            if per_session:
                with scoring_progress("scoring sessions") as advance:
                    sessions = score_sessions(
                        store,
                        per_session,
                        dataset=dataset,
                        active_from=_since(since),
                        progress=advance,
                        refresh_dashboards=result.dashboards is None,
                    )
        except (EmbeddingsUnavailable, JudgeUnavailable) as exc:
            raise click.ClickException(f"{exc}; the batches scored so far are stored") from None
    result.tallies.update(sessions.tallies)
    result.errors += sessions.errors
    result.seconds += sessions.seconds
    result.dashboards = result.dashboards or sessions.dashboards
    rate = result.runs / result.seconds if result.seconds else 0.0
    if fmt == "json":
        echo_json(
            {
                "runs": result.runs,
                "sessions": sessions.runs,
                "seconds": result.seconds,
                "scorers": [dataclasses.asdict(t) for t in result.tallies.values()],
                "dashboards": result.dashboards,
                "errors": result.errors,
            }
        )
    else:
        _print_tallies(result, rate, sessions.runs)
    for line in result.errors:
        err.print(f"[red]error:[/] {line}")
    if result.error_count:
        failed = result.error_count - sessions.error_count
        what = " and ".join(
            f"{n} {noun}"
            for n, noun in ((failed, "runs"), (sessions.error_count, "sessions"))
            if n or (noun == "runs" and not sessions.error_count)
        )
        raise click.ClickException(f"{what} could not be scored (no verdict written for them)")


def _score_runs(
    store: Store,
    chosen: list[Scorer],
    dataset: str | None,
    since: str | None,
    workers: int,
    batch_size: int,
) -> Result:
    """The run (and group) scorers over the stored runs, with a progress bar."""
    from agentdocket.scorers.runner import Result, score_runs

    if not chosen:
        return Result()
    with scoring_progress("scoring runs") as advance:
        return score_runs(
            store,
            chosen,
            dataset=dataset,
            since=_since(since),
            workers=workers,
            batch_size=batch_size,
            progress=advance,
        )


def _rate(rate: float) -> str:
    """Runs a second: whole numbers, and two significant digits below 10 (a judge's rate)."""
    return f"{rate:,.0f}" if rate >= 10 else f"{rate:.2g}"


def chosen_scorers(
    names: tuple[str, ...], options: dict[str, str], judge: str | None
) -> list[Scorer]:
    """The scorers ``--scorer``, ``--config KEY=VALUE`` and ``--judge`` select, configured."""
    from agentdocket.scorers.selection import Selection, SelectionError, resolve_scorers

    try:
        return resolve_scorers(Selection(names, options, judge))
    except SelectionError as exc:
        if exc.part == "config" and not names:
            raise click.UsageError(
                "--config KEY=VALUE needs the scorers it is for: --scorer NAME"
            ) from None
        raise click.BadParameter(str(exc), param_hint=f"--{exc.part}") from None


def _print_tallies(result: Result, rate: float, sessions: int) -> None:
    also = f" and {sessions} sessions" if sessions else ""
    table = new_table(
        title=f"scored {result.runs} runs{also} in {result.seconds:.1f}s ({_rate(rate)} runs/s)",
        title_justify="left",
    )
    for col in (
        "scorer",
        "version",
        "new verdicts",
        "already stored",
        "nothing to judge",
        "errors",
    ):
        table.add_column(col, justify="left" if col in ("scorer", "version") else "right")
    for t in result.tallies.values():
        table.add_row(t.scorer, t.version, str(t.added), str(t.kept), str(t.nothing), str(t.errors))
    console.print(table)
    if result.dashboards is not None:
        console.print(f"dashboards: {result.dashboards}")


@click.command(name="scorers")
@FORMAT
def list_scorers(fmt: str) -> None:
    """List the registered scorers, their versions and what they measure.

    \b
    Examples:
      agentdocket scorers
      agentdocket scorers --format json
    """
    from agentdocket import scorers

    if fmt == "json":
        echo_json(
            [
                {
                    "name": s.name,
                    "version": s.version,
                    "reads": list(s.inputs),
                    "measures": s.description,
                    "config": {k: v for k, v in s.config.items()},
                    "options": {
                        name: {
                            "types": [t.__name__ for t in o.types],
                            "default": o.default,
                            "description": o.description,
                            "choices": list(o.choices) or None,
                        }
                        for name, o in s.options.items()
                    },
                    "details": dict(s.details),
                    "metrics": {name: list(m) for name, m in s.metrics.items()},
                }
                for s in scorers.scorers()
            ]
        )
        return

    table = new_table(title="scorers", title_justify="left")
    for col in ("name", "version", "reads", "measures", "config"):
        table.add_column(col, overflow="fold")
    for s in scorers.scorers():
        config = json.dumps(dict(s.config), default=str) if s.config else "-"
        table.add_row(s.name, s.version, ", ".join(s.inputs) or "all", s.description, config)
    console.print(table)


COMMANDS = (score, list_scorers)
