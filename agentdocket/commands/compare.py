"""``agentdocket compare``: did a change help? Two sets of runs of a dataset, case by case."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentdocket.commands.common import console, echo_json, new_table, open_from
from agentdocket.commands.costs import PRICES
from agentdocket.errors import AgentdocketError
from agentdocket.experiments.comparison_text import HEADERS, changed_cases, markdown, rows, unseen

if TYPE_CHECKING:
    from agentdocket.experiments.compare import Judged, Side
    from agentdocket.store import Store
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
    and of what they cost (:mod:`..experiments.costs`). A selection, scorer or pinned version
    with nothing to compare is an error naming what there is."""
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
    if not names:
        raise click.UsageError(
            f"no scorer has judged runs of dataset {dataset!r}: run `agentdocket score "
            f"--dataset {dataset}` first"
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
        calls=calls,
        primary=primary,
        max_drop=max_drop,
        sessions=_sessions(store, sides) if any(n.startswith("session.") for n in names) else None,
    )
    result["dataset"] = dataset
    for name, entry in result["scorers"].items():
        entry["version"] = versions[name]
    result["cost"] = _cost(store, sides[0], sides[1], sorted(ids), resamples, prices)
    return result


def _sides(runs: list[CaseRun], dataset: str, baseline: str, candidate: str) -> list[Side]:
    """The baseline's and the candidate's runs, by case, with the errors of those that erred;
    a selection of no run is an error naming the agents the dataset's runs are of."""
    from agentdocket.experiments.compare import Side, group_runs, selected

    sides = []
    for label, selection in (("baseline", baseline), ("candidate", candidate)):
        chosen = selected(runs, selection)
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
        errors = {r["trace_id"]: r["error"] for r in chosen if r["status"] == "error"}
        by_case = group_runs([(r["trace_id"], r["case_id"]) for r in chosen])
        sides.append(Side(selection, by_case, errors))
    return sides


def _sessions(store: Store, sides: list[Side]) -> tuple[Side, Side]:
    """Each side's sessions, as their last turns (which hold the session scorers' verdicts),
    by case: a conversation is one unit, however many turns it took."""
    from agentdocket.experiments.compare import Side

    ids = [t for side in sides for traces in side.runs.values() for t in traces]
    last = store.sessions.last_turns(ids)
    base, cand = (
        Side(
            side.label,
            {
                c: kept
                for c, traces in side.runs.items()
                if (kept := [t for t in traces if t in last])
            },
            {t: e for t, e in side.errors.items() if t in last},
        )
        for side in sides
    )
    return base, cand


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
    the version both have). A pinned version that does not exist, or judged no run of a side,
    is an error naming the versions that did."""
    from agentdocket.experiments.compare import Judged
    from agentdocket.scorers.base import version_key

    base_ids, cand_ids = sides
    ordered = sorted(stored, key=version_key, reverse=True)
    if pinned is not None and pinned not in stored:
        raise click.UsageError(
            f"--version {name}={pinned}: {name} has no verdicts of version {pinned} on dataset "
            f"{dataset!r} (it has {', '.join(ordered)})"
        )
    judged: dict[str, Judged] = {}
    for version in [pinned] if pinned is not None else ordered:
        judged = {
            v.trace_id: Judged(v.passed, v.score, v.failure_type)
            for v in store.scoring.report_verdicts({name: version}, dataset)
            if v.trace_id in base_ids or v.trace_id in cand_ids
        }
        if judged.keys() & base_ids and judged.keys() & cand_ids:
            return version, judged
    if pinned is not None:
        raise click.UsageError(
            f"--version {name}={pinned}: version {pinned} judged no run of "
            f"{'the baseline' if not judged.keys() & base_ids else 'the candidate'}; score "
            f"them (`agentdocket score --dataset {dataset} --scorer {name}`) or pin another "
            f"version (it has {', '.join(ordered)})"
        )
    raise click.UsageError(
        f"no version of {name} judged runs of both sides (it has {', '.join(ordered)}); score "
        f"them with the same version (`agentdocket score --dataset {dataset} --scorer {name}`)"
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
    told: dict[str, float] = {}
    for trace in store.scoring.traces(ids, {"llm.called"}):
        # a run costs the sum of its calls, only when every one of them is priced
        priced = run_costs(calls_of(trace.events), book)
        costs[trace.trace_id] = None if priced["unpriced_calls"] else priced["total_usd"]
        if priced["reported_usd"] is not None:
            told[trace.trace_id] = priced["reported_usd"]
    out = cost_difference(baseline, candidate, costs, resamples=resamples)
    out["priced_by"] = book.version
    out["reported"] = _reported(baseline, candidate, told)
    if out["reported"] is not None:
        r = out["reported"]
        out["summary"] += (
            f"; the spans reported ${r['baseline_usd']:.6f} (baseline) and "
            f"${r['candidate_usd']:.6f} (candidate) in all"
        )
    return out


def _reported(baseline: Side, candidate: Side, told: dict[str, float]) -> dict[str, Any] | None:
    """What the spans reported the two sides' runs cost, beside what was computed (None when
    no run's spans reported any)."""
    if not told:
        return None
    sides = {}
    for name, side in (("baseline", baseline), ("candidate", candidate)):
        traces = [t for runs in side.runs.values() for t in runs]
        sides[f"{name}_usd"] = sum(told.get(t, 0.0) for t in traces)
        sides[f"{name}_runs"] = sum(1 for t in traces if t in told)
    return sides


class GateFailed(AgentdocketError, click.ClickException):
    """The gate's outcome is one the command was told to fail on: its exit code says which
    (1 worse, 3 inconclusive, 4 no data)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code

    @property
    def exit_code(self) -> int:  # type: ignore[override]
        return self.code


EXIT_CODES = {"worse": 1, "inconclusive": 3, "no data": 4}


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
    help="Gate: exit 1 when a gating scorer is worse (significantly, after the adjustment; "
    "or a case lost its answer; or over --max-drop), 4 when no gating scorer has data. An "
    "inconclusive comparison exits 0 and says so (see --fail-on-inconclusive).",
)
@click.option(
    "--fail-on-inconclusive",
    is_flag=True,
    help="Also exit 3 when the gate is inconclusive: cases regressed and the test cannot "
    "decide (implies --fail-on-regression).",
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
    help="Fail the gate when a gating scorer's mean drop is larger, significant or not "
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
    help="Bootstrap resamples for the cost ratio's interval.",
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
    fail_on_inconclusive: bool,
    primary: tuple[str, ...],
    max_drop: float | None,
    pinned: tuple[str, ...],
    alpha: float,
    resamples: int,
    prices: Path | None,
) -> None:
    """Compare two sets of runs of a dataset, case by case: is the candidate better, worse,
    or can the data not tell?

    Runs pair by case (repeats averaged); every run asked for counts: a run without an
    answer (an error, a timeout, no response) fails a pass/fail scorer, and a case that lost
    its answer fails the gate. Pass/fail scorers get the exact sign test on the cases that
    changed (McNemar's), with the difference in pass rates and the interval that inverts the
    test; scores the signed-rank test, with the Hodges-Lehmann shift and its interval. The
    verdict, estimate, interval and test agree by construction. p-values are adjusted within
    the gating scorers (Holm with Tarone's refinement). The gate is worse, inconclusive (cases
    regressed and the test cannot decide: it says the smallest drop it could flag and what
    would catch the one seen), no data, or pass. What the runs cost is compared too.

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
        _print(result, dataset)
    outcome = result["gate"]["outcome"]
    failing = {"worse", "no data"} if fail_on_regression or fail_on_inconclusive else set()
    if fail_on_inconclusive:
        failing.add("inconclusive")
    if outcome in failing:
        raise GateFailed(result["gate"]["verdict"], EXIT_CODES[outcome])


def _print(result: dict[str, Any], dataset: str) -> None:
    table = new_table(
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
    for line in [*unseen(result), *changed_cases(result)]:
        console.print(line, markup=False, highlight=False)


__all__ = ["compare"]
