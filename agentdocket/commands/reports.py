"""`agentdocket report` and `agentdocket calibrate`: what the verdicts add up to."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from typing import TYPE_CHECKING, Any

import click

from agentdocket.commands.common import console, new_table, open_from

if TYPE_CHECKING:
    from agentdocket.store import Store


def make_report(
    store: Store,
    dataset: str | None,
    by: str | None,
    versions: tuple[str, ...],
    experiment: str | None = None,
) -> dict[str, Any]:
    from agentdocket.scorers.report import ReportError, build_report, choose_versions

    chosen = choose_versions(store.scoring.scorer_versions(dataset), versions)
    runs = store.scoring.report_runs(dataset)
    if experiment is not None:
        named = {(r.attributes or {}).get("experiment") for r in runs} - {None}
        runs = [r for r in runs if (r.attributes or {}).get("experiment") == experiment]
        if not runs:
            raise ReportError(
                f"--experiment {experiment}: no run of it"
                + (f" in dataset {dataset!r}" if dataset else "")
                + f" (experiments: {', '.join(sorted(map(str, named))) or 'none'})"
            )
    verdicts = store.scoring.report_verdicts(chosen, dataset)
    last = (
        store.sessions.last_turns([r.trace_id for r in runs])
        if any(name.startswith("session.") for name in chosen)
        else None
    )
    report = build_report(dataset, runs, verdicts, by, last_turns=last)
    costs = {r["trace_id"]: r for r in store.costs.by("run")}
    priced_by = store.costs.priced_by()
    report["cost"] = _cost([r.trace_id for r in runs], costs, priced_by)
    if by is not None:
        from agentdocket.scorers.report import group_value

        members: dict[str, list[str]] = {}
        for run in runs:
            members.setdefault(group_value(run, by), []).append(run.trace_id)
        for value, group in report["groups"].items():
            group["cost"] = _cost(members.get(value, []), costs, priced_by)
    return report


def _cost(ids: list[str], costs: dict[str, dict[str, Any]], priced_by: list[str]) -> dict[str, Any]:
    """What these runs' model calls cost, as `costs refresh` last priced them."""
    rows = [costs[t] for t in ids if t in costs]
    total = sum(r["cost_usd"] or 0.0 for r in rows)
    return {
        "priced_by": priced_by,
        "runs_with_calls": len(rows),
        "calls": sum(r["calls"] for r in rows),
        "unpriced_calls": sum(r["unpriced_calls"] for r in rows),
        "total_usd": total if rows else None,
        "per_run_usd": total / len(ids) if rows and ids else None,
    }


def _cost_line(name: str, cost: dict[str, Any]) -> str:
    if not cost["priced_by"]:
        return f"{name}: no cost yet (agentdocket costs refresh prices the model calls)"
    if cost["total_usd"] is None:
        return f"{name}: no model calls"
    unpriced = f"; {cost['unpriced_calls']} calls unpriced" if cost["unpriced_calls"] else ""
    return (
        f"{name}: ${cost['total_usd']:.6f} for {cost['calls']} model calls, "
        f"${cost['per_run_usd']:.6f} a run{unpriced}"
    )


def print_report(report: dict[str, Any]) -> None:
    from agentdocket.scorers.report import format_number, rows

    title = f"dataset {report['dataset']}: {report['runs']} runs, {report['errored']} errored"
    table = new_table(title=title, title_justify="left")
    grouped = "groups" in report
    columns = (["group"] if grouped else []) + [
        "scorer",
        "version",
        "judged",
        "passed",
        "failed",
        "missing",
        "pass rate",
        "metrics",
    ]
    for col in columns:
        table.add_column(col, overflow="fold")
    fixed = {
        "group",
        "runs",
        "errored",
        "scorer",
        "version",
        "scored",
        "passed",
        "failed",
        "missing",
        "pass_rate",
        "pass_rate_answered",
        "coverage",
        "pass_at_1",
        "flaky_cases",
    }
    sections = [("(all)", report), *report.get("groups", {}).items()]
    details = {(g, name): s for g, section in sections for name, s in section["scorers"].items()}
    for row in rows(report):
        s = details[(row["group"], row["scorer"])]
        metrics = ", ".join(
            f"{k}={format_number(v)}"
            for k, v in row.items()
            if k not in fixed
            and v is not None
            and not k.startswith(("pass_at_", "pass_hat_"))
            and not (k == "score_mean" and s["passed"] is not None)
        )
        if s["missing"] and row["coverage"] is not None and s["passed"] is None:
            metrics = f"coverage={row['coverage']:.1%}" + (f", {metrics}" if metrics else "")
        values = [row["group"]] if grouped else []
        values += [
            row["scorer"],
            row["version"],
            str(row["scored"]) + (f" ({s['unjudged']} unjudged)" if s["unjudged"] else ""),
            format_number(row["passed"]),
            format_number(row["failed"]),
            _missing(s),
            _rate(s),
            metrics or "-",
        ]
        table.add_row(*values)
    console.print(table)
    for group, section in sections:
        for name, s in section["scorers"].items():
            line = _repeats_line(s.get("repeats", {}))
            if line:
                where = f"{name}" if group == "(all)" else f"{group} {name}"
                console.print(f"{where}: {line}", markup=False, highlight=False)
    if "cost" in report:
        console.print(_cost_line("cost", report["cost"]), markup=False, highlight=False)
        for value, group in report.get("groups", {}).items():
            console.print(_cost_line(f"  {value}", group["cost"]), markup=False, highlight=False)


def _missing(s: dict[str, Any]) -> str:
    if not s["missing"]:
        return "0"
    kinds = ", ".join(f"{k} {v}" for k, v in s["missing_kinds"].items())
    return f"{s['missing']} ({kinds})"


def _rate(s: dict[str, Any]) -> str:
    if s["pass_rate"] is None:
        return "-"
    text = f"{s['pass_rate']:.1%}"
    if s["missing"]:
        text += f" ({s['pass_rate_answered']:.1%} of answered)"
    return text


def _repeats_line(found: dict[str, Any]) -> str:
    """pass@1 with its interval, pass@k and pass^k, flaky cases, the variance split."""
    if not found:
        return ""
    spread = found["runs_per_case"]
    runs = (
        str(spread["min"]) if spread["min"] == spread["max"] else f"{spread['min']}-{spread['max']}"
    )
    parts = []
    if "pass_at_1" in found:
        p = found["pass_at_1"]
        top = max(found["pass_at_k"], key=int)
        parts.append(
            f"pass@1 {p['estimate']:.1%} [{p['ci_low']:.1%}, {p['ci_high']:.1%}] over "
            f"{found['cases']} cases of {runs} runs"
        )
        if top != "1":
            parts.append(
                f"pass@{top} {found['pass_at_k'][top]:.1%}, pass^{top} "
                f"{found['pass_hat_k'][top]:.1%}"
            )
        flaky = found["flaky_cases"]
        shown = ", ".join(flaky[:10]) + (f" and {len(flaky) - 10} more" if len(flaky) > 10 else "")
        parts.append(f"{len(flaky)} flaky cases" + (f" ({shown})" if flaky else ""))
    else:
        m = found["mean"]
        interval = f" [{m['ci_low']:.3f}, {m['ci_high']:.3f}]" if m["ci_low"] is not None else ""
        parts.append(
            f"mean {m['estimate']:.3f}{interval} over {found['cases']} cases of {runs} runs"
        )
    icc = found["variance"]["icc"]
    if icc is not None:
        parts.append(f"{icc:.0%} of the variance between cases, {1 - icc:.0%} within")
    return "; ".join(parts)


@click.command()
@click.option("--dataset", help="Only runs of this dataset (default: every run).")
@click.option(
    "--by", type=click.Choice(["agent", "version", "strategy", "model"]), help="Group runs."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv"]),
    default="table",
    show_default=True,
)
@click.option(
    "--version",
    "versions",
    multiple=True,
    help="Scorer version to report instead of the newest: V (every scorer that has it) or "
    "NAME=V (repeatable).",
)
@click.option(
    "--experiment",
    help="Only the runs of this experiment (`experiment run --name`): its repeats give "
    "pass@k, pass^k and the flaky cases of one agent.",
)
@click.pass_context
def report(
    ctx: click.Context,
    dataset: str | None,
    by: str | None,
    fmt: str,
    versions: tuple[str, ...],
    experiment: str | None,
) -> None:
    """Aggregate the verdicts of each scorer over a dataset's runs (errored runs are counted
    and left out of the numbers), and what their model calls cost (as `costs refresh` last
    priced them; unpriced calls counted apart).

    \b
    Examples:
      agentdocket report --dataset support
      agentdocket report --dataset support --by version --format json
      agentdocket report --dataset support --version tools.slot_fill=1 --format csv
    """
    from agentdocket.scorers.report import ReportError, to_csv

    with open_from(ctx) as store:
        if dataset is not None and not any(d["name"] == dataset for d in store.datasets.versions()):
            raise click.ClickException(f"no dataset {dataset!r} in the store")
        try:
            result = make_report(store, dataset, by, versions, experiment)
        except ReportError as exc:
            raise click.ClickException(str(exc)) from None
    if fmt == "json":
        click.echo(json.dumps(result, indent=2))
    elif fmt == "csv":
        click.echo(to_csv(result), nl=False)
    else:
        print_report(result)


@click.command(name="calibrate")
@click.option("--judge", "judge_name", required=True, help="The judge's verdicts: NAME[=VERSION].")
@click.option(
    "--against",
    "--truth",
    "truth",
    required=True,
    help="The truth: a scorer's verdicts, NAME[=VERSION], or people's labels, people:RUBRIC "
    "(the annotators' majority on a pass/fail rubric).",
)
@click.option("--dataset", help="Only runs of this dataset.")
@click.option("--samples", default=1000, show_default=True, help="Bootstrap resamples.")
@click.option("--seed", default=0, show_default=True, help="Bootstrap seed.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
def calibrate_command(
    ctx: click.Context,
    judge_name: str,
    truth: str,
    dataset: str | None,
    samples: int,
    seed: int,
    fmt: str,
) -> None:
    """Treat one scorer's verdicts as predictions of a truth (reference-based verdicts, or
    what people said): precision (low = optimistic), recall (low = cynical), F1, agreement
    and Cohen's kappa, with bootstrap intervals, the confusion matrix and the runs where they
    disagree. Runs judged by both count; errored runs not.

    \b
    Examples:
      agentdocket calibrate --judge review.peer --against answer.reference
      agentdocket calibrate --judge answer.reference --against people:helpful --format json
      agentdocket calibrate --judge review.peer=1 --truth answer.reference --dataset db-qa
    """
    from agentdocket.people.majority import majority
    from agentdocket.people.selection import SelectionError, decisions, undecided
    from agentdocket.scorers.calibration import calibrate

    note = ""
    with open_from(ctx) as store:
        errored = {r.trace_id for r in store.scoring.report_runs(dataset) if r.status == "error"}
        try:
            judged = decisions(store, judge_name, dataset, "--judge")
            silent = undecided(store, judge_name, dataset, "--judge")
            if truth.startswith("people:"):
                rubric = truth.removeprefix("people:")
                found = store.labels.rubric(rubric)
                if found is None or found.kind != "pass_fail":
                    raise SelectionError(f"--against {truth}: no pass/fail rubric {rubric!r}")
                people = majority(store.labels.given(rubric=rubric))
                truths = people.decided
                note = (
                    f" (majority of {people.annotators} annotators, {people.labels} labels; "
                    f"{len(people.ties)} runs tied, left out)"
                )
            else:
                truths = decisions(store, truth, dataset, "--against")
        except SelectionError as exc:
            raise click.ClickException(str(exc)) from None
    both = sorted((judged.keys() & truths.keys()) - errored)
    pairs = [(judged[t], truths[t]) for t in both]
    # runs the truth decided and the judge judged without deciding: not in the figures, said
    left = Counter(k for t, k in silent.items() if t in truths and t not in errored)
    if not pairs and not left:
        raise click.ClickException(f"no run has a pass / fail from both {judge_name} and {truth}")
    result = calibrate(pairs, samples=samples, seed=seed)
    coverage = {
        "decided": len(pairs),
        "undecided": sum(left.values()),
        "undecided_kinds": dict(sorted(left.items())),
    }
    disagree = [
        {"trace_id": t, "judge": judged[t], "truth": truths[t]}
        for t in both
        if judged[t] != truths[t]
    ]
    if fmt == "json":
        out = dataclasses.asdict(result)
        out["judge_coverage"] = coverage
        out["disagreements"] = disagree
        click.echo(json.dumps(out, indent=2))
        return
    title = f"{judge_name} as a judge of {truth}{note}"
    _print_calibration(result, title, samples, disagree, coverage)


def _print_calibration(
    result: Any,
    title: str,
    samples: int,
    disagree: list[dict[str, Any]],
    coverage: dict[str, Any],
) -> None:
    console.print(
        f"{title}: {result.n} runs ({result.level:.0%} intervals, {samples} resamples)",
        markup=False,
    )
    if coverage["undecided"]:
        kinds = ", ".join(f"{k} {v}" for k, v in coverage["undecided_kinds"].items())
        total = coverage["decided"] + coverage["undecided"]
        console.print(
            f"the judge decided {coverage['decided']} of the {total} runs the truth decided; "
            f"no decision on {coverage['undecided']} ({kinds}), which the figures leave out",
            markup=False,
        )
    matrix = new_table("", "truth: pass", "truth: fail")
    matrix.add_row("judge: pass", f"TP {result.tp}", f"FP {result.fp}")
    matrix.add_row("judge: fail", f"FN {result.fn}", f"TN {result.tn}")
    console.print(matrix)
    table = new_table()
    for col in ("metric", "value", "interval", "reads as"):
        table.add_column(col)
    meaning = {
        "precision": "low: optimistic (failing runs judged passing)",
        "recall": "low: cynical (passing runs judged failing)",
        "f1": "the two together (harmonic mean)",
        "agreement": "share of runs judged as the truth has them",
        "kappa": "agreement beyond chance (0: chance, 1: perfect)",
    }
    for metric, text in meaning.items():
        value = getattr(result, metric)
        interval = result.intervals.get(metric)
        table.add_row(
            metric,
            "-" if value is None else f"{value:.3f}",
            "-" if interval is None else f"[{interval[0]:.3f}, {interval[1]:.3f}]",
            text,
        )
    console.print(table)
    if disagree:
        shown = ", ".join(d["trace_id"] for d in disagree[:10])
        more = (
            f" and {len(disagree) - 10} more (--format json lists all)"
            if len(disagree) > 10
            else ""
        )
        console.print(f"they disagree on {len(disagree)} runs: {shown}{more}", markup=False)


COMMANDS = (report, calibrate_command)
