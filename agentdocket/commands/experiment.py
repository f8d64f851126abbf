"""``agentdocket experiment run``: an agent over a dataset, every call a recorded, scored run."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

from agentdocket.commands.common import console, echo_json, new_table, open_from, progress_bar

if TYPE_CHECKING:
    from agentdocket.experiments.runner import Experiment, Outcome


@click.group()
def experiment() -> None:
    """Run an agent over a dataset of cases, as an experiment to compare with another."""


@experiment.command(name="run")
@click.option("--dataset", required=True, metavar="DATASET[@VERSION]")
@click.option(
    "--agent",
    "spec",
    required=True,
    metavar="MODULE:ATTR",
    help="A callable taking the case and returning its answer (sync or async); for a dataset "
    "of conversations, taking the case and the messages so far and returning its reply. "
    "MODULE is imported from the current directory too.",
)
@click.option(
    "--user-model",
    metavar="MODEL",
    help="The chat model playing the simulated user of cases with a `user`: provider:model "
    "(langchain's init_chat_model) or python:MODULE:ATTR (a BaseChatModel, or a function "
    "making one).",
)
@click.option("--agent-version", required=True, help="The agent's version, e.g. a commit.")
@click.option("--agent-name", help="The runs' agent name (default: MODULE's last part).")
@click.option("--name", help="The experiment's name (default: AGENT@VERSION).")
@click.option("--repeat", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--concurrency", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Seconds per call.")
@click.option(
    "--scorer",
    "scorer_names",
    multiple=True,
    help="Score with these (default: every rule-based one).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.pass_context
def run(
    ctx: click.Context,
    dataset: str,
    spec: str,
    agent_version: str,
    agent_name: str | None,
    name: str | None,
    repeat: int,
    concurrency: int,
    timeout: float | None,
    scorer_names: tuple[str, ...],
    fmt: str,
    user_model: str | None = None,
) -> None:
    """Call the agent once per case and repeat, each call recorded as a run linked to the
    experiment, case and repeat; then score the experiment's runs. Runs already finished
    are not run again: an interrupted experiment resumes.

    A case with `user_turns` or a `user` is a conversation: its question opens, then each
    scripted turn, or each reply of the simulated user (--user-model), until the stop
    phrase or the turn limit; every turn is a run, the conversation one session, judged by
    the session scorers.

    \b
    Examples:
      agentdocket experiment run --dataset support --agent my_agent:answer --agent-version 1.0
      agentdocket experiment run --dataset support@3 --agent my_agent:answer \\
          --agent-version "$(git rev-parse --short HEAD)" --repeat 3 --concurrency 4
    """
    from agentdocket import scorers
    from agentdocket.experiments.compare import selected
    from agentdocket.experiments.runner import AgentSpecError, Experiment, finished, load_agent
    from agentdocket.scorers.runner import Result, score_runs
    from agentdocket.scorers.session_runner import score_sessions, session_scorers

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        agent = load_agent(spec)
    except AgentSpecError as exc:
        raise click.BadParameter(str(exc), param_hint="--agent") from None
    dataset_name, _, version = dataset.partition("@")
    agent_name = agent_name or spec.partition(":")[0].rsplit(".", 1)[-1]
    name = name or f"{agent_name}@{agent_version}"
    try:
        chosen = [scorers.get(n) for n in scorer_names] if scorer_names else scorers.latest()
    except KeyError as exc:
        raise click.BadParameter(str(exc.args[0]), param_hint="--scorer") from None
    with open_from(ctx) as store:
        data = store.datasets.get(dataset_name, version or None)
        done = finished(store.scoring.case_runs(dataset_name), name)
        url = store.url
    plan = Experiment(name, data, agent_name, agent_version, repeat, concurrency, timeout)
    simulator = _user_model(user_model)
    outcome = _call_agent(plan, agent, spec, url, done, simulator)
    per_run, per_session = session_scorers(chosen)
    with open_from(ctx) as store:
        ids = [
            r["trace_id"]
            for r in selected(store.scoring.case_runs(dataset_name), f"experiment:{name}")
        ]
        conversations = store.sessions.of_runs(ids)
        scored = Result()
        if per_run:
            with progress_bar("scoring") as advance:
                scored = score_runs(store, per_run, trace_ids=ids, progress=advance)
        if per_session and conversations:
            with progress_bar("scoring sessions") as advance:
                judged = score_sessions(
                    store, per_session, session_ids=conversations, progress=advance
                )
            scored.tallies.update(judged.tallies)
    summary: dict[str, Any] = {
        "experiment": name,
        "dataset": f"{data.name}@{data.version}",
        "agent": agent_name,
        "agent_version": agent_version,
        "calls": len(plan.calls()),
        "ran": outcome.ran,
        "errored": outcome.errored,
        "skipped": outcome.skipped,
        "runs": len(ids),
        "sessions": len(conversations),
        "turns": outcome.turns,
        "ended": outcome.ended,
        "verdicts": {f"{n}@{v}": t.added for (n, v), t in scored.tallies.items()},
        "errors": outcome.errors[:20],
    }
    if fmt == "json":
        echo_json(summary)
        return
    _say(summary, data.name, outcome.errors)


def _user_model(spec: str | None) -> Any:
    """The simulated user's chat model, loaded as a judge's is."""
    if spec is None:
        return None
    from agentdocket.scorers.judges.client import JudgeUnavailable, resolve_model

    try:
        return resolve_model(spec)[0]
    except JudgeUnavailable as exc:
        raise click.BadParameter(str(exc), param_hint="--user-model") from None


def _call_agent(
    plan: Experiment,
    agent: Any,
    spec: str,
    url: str,
    done: set[tuple[str, int]],
    user_model: Any = None,
) -> Outcome:
    """Every call of the plan not ``done`` yet, recorded into ``url`` through the tracer."""
    from agentdocket import tracer
    from agentdocket.experiments.conversations import ConversationError
    from agentdocket.experiments.runner import run_experiment

    try:
        configured = tracer.configure(url)
    except RuntimeError:
        raise click.ClickException(
            f"{spec}: its module configures agentdocket.tracer itself; leave that to "
            "`experiment run`, which records into the store given to it"
        ) from None
    try:
        with progress_bar(f"experiment {plan.name}") as advance:
            import asyncio

            outcome = asyncio.run(
                run_experiment(
                    plan,
                    agent,
                    configured.tracer,
                    done,
                    progress=advance,
                    flush=configured.flush,
                    user_model=user_model,
                )
            )
        configured.flush()
    except ConversationError as exc:  # refused before any call was made
        raise click.ClickException(str(exc)) from None
    finally:
        tracer.shutdown()
    return outcome


def _say(summary: dict[str, Any], dataset_name: str, errors: list[str]) -> None:
    name, dataset = summary["experiment"], summary["dataset"]
    console.print(
        f"experiment {name} on {dataset}: ran {summary['ran']} of {summary['calls']} "
        f"calls ({summary['skipped']} already done, {summary['errored']} errored); "
        f"{summary['runs']} runs scored"
        + (
            f", {summary['sessions']} sessions of {summary['turns']} turns"
            if summary["sessions"]
            else ""
        )
    )
    for line in errors[:10]:
        console.print(f"  [red]error[/] {line}", highlight=False)
    console.print(
        f"compare: agentdocket compare --dataset {dataset_name} "
        f"--baseline experiment:OTHER --candidate experiment:{name}",
        highlight=False,
    )


@experiment.command(name="plan")
@click.option("--dataset", required=True, help="The dataset the experiment ran on.")
@click.option(
    "--runs",
    "selection",
    required=True,
    metavar="SELECTION",
    help="The finished runs to learn the variance from: experiment:NAME or AGENT[@VERSION].",
)
@click.option(
    "--detect",
    required=True,
    type=click.FloatRange(min=0, min_open=True),
    help="The drop to catch: a pass rate's as a fraction (0.1 is 10 points), a score's in "
    "its units.",
)
@click.option("--scorer", "scorer_names", multiple=True, help="Only these scorers (repeatable).")
@click.option("--alpha", default=0.05, show_default=True, type=click.FloatRange(0, 1))
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.pass_context
def plan(
    ctx: click.Context,
    dataset: str,
    selection: str,
    detect: float,
    scorer_names: tuple[str, ...],
    alpha: float,
    fmt: str,
) -> None:
    """How many cases, at how many repeats, a comparison needs to catch a drop of --detect
    80% of the time, from a finished experiment's variance (between cases and within a
    case). Pass/fail scorers through the gate's sign test, scores through its signed-rank
    test; see docs/experiments.md for the model.

    \b
    Examples:
      agentdocket experiment plan --dataset support --runs experiment:main --detect 0.1
      agentdocket experiment plan --dataset support --runs qa@1.0 --detect 0.05 \\
          --scorer tools.slot_fill --format json
    """
    from agentdocket.experiments.planning import pass_fail_plan, score_plan

    with open_from(ctx) as store:
        found = _plan_inputs(store, dataset, selection, scorer_names)
    plans: dict[str, Any] = {}
    for name, (tallies, scores) in found.items():
        if tallies:
            plans[name] = pass_fail_plan(tallies, detect, alpha)
        elif scores:
            plans[name] = score_plan(scores, detect, alpha)  # details alone: nothing to plan
    result = {
        "dataset": dataset,
        "runs": selection,
        "detect": detect,
        "alpha": alpha,
        "power": 0.8,
        "scorers": plans,
    }
    if fmt == "json":
        echo_json(result)
        return
    _print_plan(result)


def _plan_inputs(
    store: Any, dataset: str, selection: str, names: tuple[str, ...]
) -> dict[str, tuple[dict[str, Any], dict[str, list[float]]]]:
    """Per scorer (its newest version), each case's tally (pass/fail) or its scores."""
    from agentdocket.experiments.compare import selected
    from agentdocket.scorers.base import version_key
    from agentdocket.scorers.outcomes import outcome
    from agentdocket.scorers.repeats import Tally

    runs = selected(store.scoring.case_runs(dataset), selection)
    if not runs:
        raise click.UsageError(f"--runs {selection!r} selects no run of dataset {dataset!r}")
    stored = store.scoring.scorer_versions(dataset)
    unknown = sorted(set(names) - set(stored))
    if unknown:
        raise click.UsageError(
            f"no verdicts of {', '.join(unknown)} on dataset {dataset!r} (it has "
            f"{', '.join(sorted(stored)) or 'none'})"
        )
    by_id = {r["trace_id"]: r for r in runs}
    out = {}
    for name in names or sorted(stored):
        version = max(stored[name], key=version_key)
        verdicts = {
            v.trace_id: v
            for v in store.scoring.report_verdicts({name: version}, dataset)
            if v.trace_id in by_id
        }
        if not verdicts:
            continue
        decides = any(v.passed is not None for v in verdicts.values())
        tallies: dict[str, list[int]] = {}
        scores: dict[str, list[float]] = {}
        for trace_id, run in by_id.items():
            v = verdicts.get(trace_id)
            if run["case_id"] is None or (v is None and run["status"] != "error"):
                continue
            got = outcome(
                v.passed if v else None,
                v.score if v else None,
                v.failure_type if v else None,
                run["status"],
                run["error"],
            )
            if decides and (got.status in ("passed", "failed") or got.agent_side):
                tally = tallies.setdefault(run["case_id"], [0, 0])
                tally[0] += 1
                tally[1] += got.status == "passed"
            elif not decides and got.score is not None:
                scores.setdefault(run["case_id"], []).append(got.score)
        out[name] = ({c: Tally(r, p) for c, (r, p) in tallies.items()}, scores)
    return out


def _print_plan(result: dict[str, Any]) -> None:

    detect = result["detect"]
    for name, found in result["scorers"].items():
        pass_fail = found["kind"] == "pass_fail"
        size = f"{100 * detect:.3g} points" if pass_fail else f"{detect:g}"
        table = new_table(
            title=f"{name}: to catch a drop of {size} 80% of the time (alpha {result['alpha']})",
            title_justify="left",
        )
        for col in ("repeats", "cases", "runs a side"):
            table.add_column(col)
        for row in found["plan"]:
            cases = row["cases"]
            table.add_row(
                str(row["repeats"]),
                "-" if cases is None else str(cases),
                "-" if cases is None else str(cases * row["repeats"]),
            )
        console.print(table)
        icc = found["variance"]["icc"]
        now = f"now {found['cases']} cases"
        if icc is not None:
            now += f"; {icc:.0%} of the variance between cases, {1 - icc:.0%} within a case"
        if not found["estimated_from_repeats"]:
            now += (
                "; no repeats to split the variance: every case taken at the mean (cases: an "
                "upper bound)"
                if pass_fail
                else "; scores need runs with --repeat 2 or more"
            )
        console.print(now, markup=False, highlight=False)
