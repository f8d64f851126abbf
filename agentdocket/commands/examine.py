"""`agentdocket examine`: an examiner model converses with an agent over examiner / judge cases,
then the judge scores the weighted points."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import click

from agentdocket.commands.common import FORMAT, console, echo_json, err, new_table, open_from

if TYPE_CHECKING:
    from agentdocket.examiner.harness import Examination


def _env_names(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[str, ...]:
    """--pass-env's names, each an environment variable name."""
    from agentdocket.importers.common import ENV_NAME

    for name in value:
        if not ENV_NAME.fullmatch(name):
            raise click.BadParameter(f"{name!r} is not an environment variable name")
    return value


@click.command()
@click.option("--agent", "agent_spec", required=True, help="MODULE:FACTORY making the agent.")
@click.option(
    "--cases",
    "folder",
    required=True,
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="A TaskWeaver auto_eval folder (evaluator_prompt.yaml, cases/...).",
)
@click.option(
    "--examiner", required=True, help="Examiner model: PROVIDER:MODEL or python:MODULE:ATTR."
)
@click.option("--judge", help="Judge model for LLM-judged points (default: the examiner's).")
@click.option("--case", "case_ids", multiple=True, help="Only these cases (e.g. echo/echo).")
@click.option("--dataset", default="taskweaver-auto_eval", show_default=True)
@click.option("--max-rounds", type=int, help="Examiner turns at most (default: the case's, 5).")
@click.option("--eval-timeout", default=30.0, show_default=True, help="Seconds per eval_code.")
@click.option(
    "--pass-env",
    "pass_env",
    multiple=True,
    metavar="NAME",
    callback=_env_names,
    help="An environment variable eval_code also sees (repeatable). By default it sees only "
    "PATH, LANG, LC_ALL, LC_CTYPE, TZ, TMPDIR, SYSTEMROOT and those its case's eval_env lists.",
)
@click.option(
    "--require-isolation",
    is_flag=True,
    help="Refuse to run (nothing recorded) where eval_code cannot run without network "
    "(`unshare -rn`).",
)
@FORMAT
@click.pass_context
def examine(
    ctx: click.Context,
    agent_spec: str,
    folder: Path,
    examiner: str,
    judge: str | None,
    case_ids: tuple[str, ...],
    dataset: str,
    max_rounds: int | None,
    eval_timeout: float,
    pass_env: tuple[str, ...],
    require_isolation: bool,
    fmt: str,
) -> None:
    """Examine an agent: for each case an examiner model sends the task and converses (up to
    the maximum of rounds, until it says the stop keyword); every turn is recorded through the
    tracer; eval_code points are checked in the agent's working directory, without network
    where the system allows (said when it does not) and with only a few environment variables;
    then the judge scores the points and the normalized scores are printed.

    \b
    Examples:
      agentdocket examine --agent my_agent:reply --cases cases/ --examiner openai:gpt-4o
      agentdocket examine --agent my_agent:reply --cases cases/ --examiner openai:gpt-4o --case \\
          refund --format json
      agentdocket examine --agent my_agent:reply --cases cases/ --examiner openai:gpt-4o \\
          --require-isolation --pass-env HOME
    """
    from agentdocket import scorers
    from agentdocket.examiner.harness import (
        case_env,
        load_factory,
        network_isolation,
        require_network_isolation,
    )
    from agentdocket.examiner.harness import examine as run_examination
    from agentdocket.importers.taskweaver import load
    from agentdocket.scorers.judges.client import JudgeUnavailable, resolve_model
    from agentdocket.scorers.runner import score_runs
    from agentdocket.tracer import configure, shutdown

    if require_isolation:
        require_network_isolation()  # before anything is recorded
    try:
        data, _ = load(folder, dataset)
        factory = load_factory(agent_spec)
        model, model_name = resolve_model(examiner)
    except (ValueError, JudgeUnavailable) as exc:  # format errors, a bad --agent
        raise click.ClickException(str(exc)) from None
    chosen = [c for c in data.cases if not case_ids or c.case_id in case_ids]
    unknown = sorted(set(case_ids) - {c.case_id for c in data.cases})
    if unknown:
        raise click.BadParameter(f"no case {', '.join(unknown)} in {folder}", param_hint="--case")
    from agentdocket.store import database_url

    with open_from(ctx, create=True) as store:
        store.datasets.register(data)
    configured = configure(database_url(ctx.obj.get("url")), set_global=False)
    done = []
    try:
        for case in chosen:
            added = [*case_env(case), *pass_env]
            sees = f" (eval_code also sees {', '.join(added)})" if added else ""
            err.print(f"examining {case.case_id}{sees}")
            done.append(
                run_examination(
                    configured.tracer,
                    case,
                    factory,
                    model,
                    model_name,
                    agent_name=agent_spec,
                    dataset=dataset,
                    dataset_version=data.version,
                    max_rounds=max_rounds,
                    eval_timeout_s=eval_timeout,
                    pass_env=pass_env,
                    require_isolation=require_isolation,
                )
            )
    finally:
        configured.flush()
        shutdown()
    scorer = scorers.get("examiner.points")
    scorer = dataclasses.replace(scorer, config={**scorer.config, "model": judge or examiner})
    ids = [e.trace_id for e in done if e.trace_id]
    with open_from(ctx) as store:
        try:
            result = score_runs(store, [scorer], trace_ids=ids)
        except JudgeUnavailable as exc:
            raise click.ClickException(str(exc)) from None
        latest = store.scoring.report_verdicts({scorer.name: scorer.version}, dataset)
        scores = {v.trace_id: v.score for v in latest if v.trace_id in ids}
    _show(done, scores, fmt)
    exposed = [e.case_id for e in done if e.network_isolated is False]
    if exposed:
        why = network_isolation()[1] or "`unshare -rn` failed then"
        err.print(
            f"[yellow]warning:[/] eval_code ran with network (not isolated) in "
            f"{', '.join(exposed)}: {why} (--require-isolation refuses to run so)"
        )
    for line in result.errors:
        err.print(f"[red]error:[/] {line}")


def _show(done: list[Examination], scores: dict[str, float | None], fmt: str) -> None:
    """Each examined case: its rounds, how it ended, its checks and its score."""
    if fmt == "json":
        echo_json(
            [
                {
                    "case_id": e.case_id,
                    "rounds": e.rounds,
                    "stopped_by": e.stopped_by,
                    "eval_passed": e.eval_passed,
                    "eval_total": e.eval_total,
                    "network_isolated": e.network_isolated,
                    "score": scores.get(e.trace_id or ""),
                    "trace_id": e.trace_id,
                }
                for e in done
            ]
        )
        return
    table = new_table(title=f"examined {len(done)} cases", title_justify="left")
    for col in ("case", "rounds", "ended by", "eval_code", "score", "trace"):
        table.add_column(col)
    for e in done:
        value = scores.get(e.trace_id or "")
        table.add_row(
            e.case_id,
            str(e.rounds),
            e.stopped_by,
            f"{e.eval_passed}/{e.eval_total}",
            "-" if value is None else f"{value:.2f}",
            (e.trace_id or "-")[:12],
        )
    console.print(table)
