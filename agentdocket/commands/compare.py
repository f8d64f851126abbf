"""``agentdocket compare``: did a change help? Two sets of runs of a dataset, case by case."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from agentdocket.commands.common import console, echo_json, open_from
from agentdocket.commands.costs import PRICES
from agentdocket.experiments.comparison_text import HEADERS, changed_cases, markdown, rows
from agentdocket.store import Store

if TYPE_CHECKING:
    from agentdocket.experiments.compare import Judged, Side
    from agentdocket.store.rows import CaseRun

SELECTION = "AGENT[@VERSION] or experiment:NAME"


def run_comparison(
    store: Store,
    dataset: str,
    baseline: str,
    candidate: str,
    scorers: tuple[str, ...],
    alpha: float,
    resamples: int,
    pins: dict[str, str] | None = None,
    primary: tuple[str, ...] = (),
    max_drop: float | None = None,
    prices: Path | None = None,
) -> dict[str, Any]:
    """The comparison of two selections of ``dataset``'s runs (see :mod:`..experiments.compare`),
    and of what they cost (:mod:`..experiments.costs`)."""
    from agentdocket.experiments.compare import compare

    sides = _sides(store.scoring.case_runs(dataset), dataset, baseline, candidate)
    base_ids, cand_ids = ({t for traces in side.runs.values() for t in traces} for side in sides)
    ids = base_ids | cand_ids
    stored = store.scoring.scorer_versions(dataset)
    pins = pins or {}
    names = list(scorers) or sorted(pins) or sorted(stored)
    names += [n for n in sorted(pins) if n not in names]
    missing = [n for n in names if n not in stored]
    if missing:
        raise click.UsageError(
            f"no verdicts of {', '.join(missing)} on dataset {dataset!r}: run `agentdocket "
            f"score --dataset {dataset}` first (it has {', '.join(sorted(stored)) or 'none'})"
        )
    versions: dict[str, str] = {}
    verdicts: dict[str, dict[str, Judged]] = {}
    for n in names:
        versions[n], verdicts[n] = _version(
            store, dataset, n, pins.get(n), stored[n], (base_ids, cand_ids)
        )

    @functools.cache  # a run that changed under several scorers is read once
    def calls(trace_id: str) -> list[tuple[str, Any]]:
        trace = store.reader.read_trace(trace_id)
        return [(c.tool, c.arguments) for c in trace.tool_calls()] if trace else []

    unknown = sorted(set(primary) - set(names))
    if unknown:
        raise click.UsageError(
            f"--primary {', '.join(unknown)}: not among the scorers compared ({', '.join(names)})"
        )
    result = compare(
        sides[0],
        sides[1],
        verdicts,
        alpha=alpha,
        resamples=resamples,
        calls=calls,
        primary=primary,
        max_drop=max_drop,
    )
    result["dataset"] = dataset
    for name, entry in result["scorers"].items():
        entry["version"] = versions[name]
    result["cost"] = _cost(store, sides[0], sides[1], sorted(ids), resamples, prices)
    return result


def _sides(runs: list[CaseRun], dataset: str, baseline: str, candidate: str) -> list[Side]:
    """The baseline's and the candidate's runs, by case; a selection of no run is an error
    naming the agents the dataset's runs are of."""
    from agentdocket.experiments.compare import Side, group_runs, selected

    sides = []
    for label, selection in (("baseline", baseline), ("candidate", candidate)):
        chosen = [(r["trace_id"], r["case_id"]) for r in selected(runs, selection)]
        if not chosen:
            agents = sorted(
                {
                    (r["agent"] or "-") + (f"@{r['agent_version']}" if r["agent_version"] else "")
                    for r in runs
                }
            )
            raise click.UsageError(
                f"--{label} {selection!r} selects no run of dataset {dataset!r}; its runs are "
                f"of {', '.join(agents) or 'no agent'}"
            )
        sides.append(Side(selection, group_runs(chosen)))
    return sides


def _version(
    store: Store,
    dataset: str,
    name: str,
    pinned: str | None,
    stored: list[str],
    sides: tuple[set[str], set[str]],
) -> tuple[str, dict[str, Judged]]:
    """The version of scorer ``name`` to compare at and its verdicts of the runs of ``sides``
    (the baseline's and the candidate's trace ids): the version ``pinned``, else the newest
    that judged runs of both sides (a scorer upgraded between two experiments is compared at
    the version both have)."""
    from agentdocket.experiments.compare import Judged
    from agentdocket.scorers.base import version_key

    base_ids, cand_ids = sides
    tried = [pinned] if pinned is not None else sorted(stored, key=version_key, reverse=True)
    for version in tried:
        judged = {
            v.trace_id: Judged(v.passed, v.score, v.failure_type)
            for v in store.scoring.report_verdicts({name: version}, dataset)
            if v.trace_id in base_ids or v.trace_id in cand_ids
        }
        if (judged.keys() & base_ids and judged.keys() & cand_ids) or pinned is not None:
            return version, judged
    raise click.UsageError(
        f"no version of {name} judged runs of both sides; score them with the same "
        f"version (`agentdocket score --dataset {dataset} --scorer {name}`)"
    )


def _cost(
    store: Store,
    baseline: Side,
    candidate: Side,
    ids: list[str],
    resamples: int,
    prices: Path | None,
) -> dict[str, Any]:
    """Each run's model calls priced at their own times, and the two sides' costs compared."""
    from agentdocket.costs.prices import price_book
    from agentdocket.costs.refresh import calls_of, run_costs
    from agentdocket.experiments.costs import cost_difference

    book = price_book(prices)
    costs: dict[str, float | None] = {}
    for trace in store.scoring.traces(ids, {"llm.called"}):
        # a run costs the sum of its calls, only when every one of them is priced
        priced = run_costs(calls_of(trace.events), book)
        costs[trace.trace_id] = None if priced["unpriced_calls"] else priced["total_usd"]
    out = cost_difference(baseline, candidate, costs, resamples=resamples)
    out["priced_by"] = book.version
    return out


@click.command()
@click.option("--dataset", required=True, help="The dataset whose runs are compared.")
@click.option("--baseline", required=True, help=f"The runs compared against: {SELECTION}.")
@click.option("--candidate", required=True, help=f"The runs of the change: {SELECTION}.")
@click.option("--scorer", "scorers", multiple=True, help="Only these scorers (repeatable).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "markdown"]),
    default="table",
    show_default=True,
)
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help="Exit 1 when the gate fails: a gating scorer significantly worse, or over --max-drop.",
)
@click.option(
    "--primary",
    multiple=True,
    metavar="SCORER",
    help="Gate on these scorers only, adjusted among themselves (repeatable); the others are "
    "reported. Default: every scorer gates.",
)
@click.option(
    "--max-drop",
    type=click.FloatRange(min=0),
    help="Fail the gate when a gating scorer's estimated drop is larger, significant or not "
    "(a pass rate's, as a fraction: 0.1 is 10 points; a score's, in its units).",
)
@click.option(
    "--version",
    "pinned",
    multiple=True,
    metavar="SCORER=VERSION",
    help="Read SCORER at VERSION (default: the newest that judged runs of both sides).",
)
@click.option("--alpha", default=0.05, show_default=True, type=click.FloatRange(0, 1))
@click.option(
    "--resamples",
    default=2000,
    show_default=True,
    type=click.IntRange(min=100),
    help="Bootstrap resamples for the intervals.",
)
@PRICES
@click.pass_context
def compare(
    ctx: click.Context,
    dataset: str,
    baseline: str,
    candidate: str,
    scorers: tuple[str, ...],
    fmt: str,
    fail_on_regression: bool,
    primary: tuple[str, ...],
    max_drop: float | None,
    pinned: tuple[str, ...],
    alpha: float,
    resamples: int,
    prices: Path | None,
) -> None:
    """Compare two sets of runs of a dataset, case by case: is the candidate better, worse,
    or is the difference noise?

    Runs pair by case (repeats averaged). Pass/fail scorers get the exact McNemar test on the
    cases that changed, scores the Wilcoxon signed-rank test; both a paired bootstrap 95%
    interval of the difference. p-values are adjusted within the gating scorers (Holm with
    Tarone's refinement: a scorer with no data, or too few changed cases to ever be
    significant, is not counted). What the runs cost is compared too: the typical case's
    cost ratio with a paired bootstrap interval (the calls priced at their own times).

    \b
    Examples:
      agentdocket compare --dataset support --baseline qa@1.0 --candidate qa@1.1
      agentdocket compare --dataset support --baseline experiment:main \\
          --candidate experiment:pr-42 --format markdown --fail-on-regression
      agentdocket compare --dataset support --baseline qa@1.0 --candidate qa@1.1 \\
          --primary tools.slot_fill --max-drop 0.05 --fail-on-regression
    """
    pins = {}
    for pin in pinned:
        name, sep, version = pin.partition("=")
        if not sep or not name or not version:
            raise click.BadParameter(f"{pin!r}: give SCORER=VERSION", param_hint="--version")
        pins[name] = version
    with open_from(ctx) as store:
        result = run_comparison(
            store,
            dataset,
            baseline,
            candidate,
            scorers,
            alpha,
            resamples,
            pins,
            primary,
            max_drop,
            prices,
        )
    if fmt == "json":
        echo_json(result)
    elif fmt == "markdown":
        click.echo(markdown(result), nl=False)
    else:
        table = Table(
            title=f"{result['candidate']} against {result['baseline']} on {dataset}",
            title_justify="left",
        )
        for header in HEADERS:
            table.add_column(header)
        for row in rows(result):
            table.add_row(*row)
        console.print(table)
        for s in result["scorers"].values():
            console.print(f"- {s['summary']}", markup=False, highlight=False)
        if "cost" in result:
            console.print(f"- {result['cost']['summary']}", markup=False, highlight=False)
        console.print(result["gate"]["verdict"], markup=False, highlight=False)
        for line in changed_cases(result):
            console.print(line, markup=False, highlight=False)
    if fail_on_regression and result["regression"]:
        raise click.ClickException(result["gate"]["verdict"])


__all__ = ["compare"]
