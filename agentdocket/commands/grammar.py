"""`agentdocket grammar ...`: GRAMMAR ("GRAMMAR: Grounded and Modular Methodology for Assessment of
Closed-Domain Retrieval-Augmented Language Models")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from agentdocket.commands.common import console, new_table, open_from


@click.group()
def grammar() -> None:
    """GRAMMAR: grounded cases from a database, and their evaluation."""


@grammar.command()
@click.option("--db", "db_url", required=True, help="SQLAlchemy URL of the database to ground in.")
@click.option(
    "--sql-templates",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="One SQL template per line, with '[Table.Column]' placeholders.",
)
@click.option(
    "--text-templates",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="JSON or YAML: each SQL template -> its text templates.",
)
@click.option("--dataset", required=True, help="Name of the dataset of generated cases.")
@click.option("--version", "version", default="1", show_default=True)
@click.option("--max-per-template", default=1000, show_default=True)
@click.pass_context
def generate(
    ctx: click.Context,
    db_url: str,
    sql_templates: Path,
    text_templates: Path,
    dataset: str,
    version: str,
    max_per_template: int,
) -> None:
    """Fill the templates' placeholders with the database's values, execute each filled query
    for its ground truth, keep those with exactly one answer, and store one case per text
    variant (group = the filled query).

    \b
    Examples:
      agentdocket grammar generate --db shop.db --sql-templates sql.yaml --text-templates \\
          text.yaml --dataset shop-grammar
    """
    from agentdocket.generators import grammar_gen
    from agentdocket.store import StoreError

    try:
        sql = grammar_gen.read_sql_templates(sql_templates)
        texts = grammar_gen.read_text_templates(text_templates, sql)
        made = grammar_gen.generate(db_url, sql, texts, dataset, version, max_per_template)
    except grammar_gen.GrammarGenError as exc:
        raise click.ClickException(f"{exc}; nothing was stored") from None
    with open_from(ctx, create=True) as store:
        try:
            store.datasets.register(made.dataset)
        except StoreError as exc:
            raise click.ClickException(f"{exc}; nothing was stored") from None
    dropped = ", ".join(f"{n} {reason}" for reason, n in sorted(made.dropped.items())) or "none"
    console.print(
        f"{made.templates} SQL templates, {made.filled} filled queries: {made.kept} with a "
        f"single answer kept, dropped {dropped}; dataset {dataset} v{version}: "
        f"{len(made.dataset.cases)} cases in {made.kept} groups",
        soft_wrap=True,
    )


@grammar.command()
@click.option("--a", "dataset_a", required=True, help="Dataset of condition A.")
@click.option("--b", "dataset_b", required=True, help="Dataset of condition B.")
@click.option("--version", help="grammar.groups version (default: the newest stored).")
@click.option("--samples", default=1000, show_default=True, help="Bootstrap resamples.")
@click.option("--seed", default=0, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
def compare(
    ctx: click.Context,
    dataset_a: str,
    dataset_b: str,
    version: str | None,
    samples: int,
    seed: int,
    fmt: str,
) -> None:
    """Hypothesis testing across two conditions over the same semantic groups (e.g. short vs
    long query forms, scored by grammar.groups): mutual gap groups, and the accuracy difference
    A - B with a paired bootstrap interval over the groups.

    \b
    Examples:
      agentdocket grammar compare --a grammar.groups=1 --b grammar.groups=2
      agentdocket grammar compare --a grammar.groups=1 --b grammar.groups=2 --format json
    """
    import json

    from agentdocket.scorers.grammar import compare_conditions
    from agentdocket.scorers.report import ReportError, choose_versions

    sides = []
    with open_from(ctx) as store:
        for dataset in (dataset_a, dataset_b):
            stored = store.scoring.scorer_versions(dataset)
            if "grammar.groups" not in stored:
                raise click.ClickException(
                    f"dataset {dataset!r} has no grammar.groups verdicts: run "
                    f"`agentdocket score --dataset {dataset} --scorer grammar.groups`"
                )
            asked = [f"grammar.groups={version}"] if version else []
            try:
                chosen = choose_versions({"grammar.groups": stored["grammar.groups"]}, asked)
            except ReportError as exc:
                raise click.ClickException(str(exc)) from None
            sides.append([v.details for v in store.scoring.report_verdicts(chosen, dataset)])
    try:
        result = compare_conditions(sides[0], sides[1], samples=samples, seed=seed)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if fmt == "json":
        click.echo(json.dumps(result, indent=2))
        return
    low, high = result["interval"]
    console.print(
        f"{result['groups']} common groups; mutual gaps {result['mutual_gap']}, gaps only in "
        f"A {result['gap_only_a']}, only in B {result['gap_only_b']}\n"
        f"accuracy A {result['accuracy_a']:.3f}, B {result['accuracy_b']:.3f}; difference "
        f"{result['difference']:+.3f}, {result['level']:.0%} interval [{low:+.3f}, {high:+.3f}]"
    )


@grammar.command(name="report")
@click.option("--short", "short", required=True, help="Dataset of the short (robust) form.")
@click.option("--long", "long_", required=True, help="Dataset of the long (non-robust) form.")
@click.option("--short-balanced", help="Dataset of the short form with gap examples balanced.")
@click.option("--long-balanced", help="Dataset of the long form with gap examples balanced.")
@click.option(
    "--version",
    help="grammar.groups version (default: the newest stored; e.g. 1+closed_domain=false).",
)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
def report_table(
    ctx: click.Context,
    short: str,
    long_: str,
    short_balanced: str | None,
    long_balanced: str | None,
    version: str | None,
    fmt: str,
) -> None:
    """Table 3 of the GRAMMAR paper for one benchmark: accuracy under No Action, Remove Gap
    Groups (the refined accuracy, gap groups left out) and Balance Gap Examples (the balanced
    datasets' accuracy), the robust (short) and non-robust (long) text forms side by side, from
    the grammar.groups verdicts of each dataset.

    The Context Comparison rows need responses regenerated with the context of correctly
    answered queries, which result files do not hold: they are not computed.

    \b
    Examples:
      agentdocket grammar report --short aurp-short --long aurp-long \\
          --short-balanced aurp-short-b --long-balanced aurp-long-b
      agentdocket grammar report --short open-short --long open-long --version 1+closed_domain=false
    """
    import json

    from agentdocket.scorers.report import ReportError

    forms = {"short": short, "long": long_, "short_balanced": short_balanced}
    forms["long_balanced"] = long_balanced
    metrics: dict[str, dict[str, object] | None] = {}
    with open_from(ctx) as store:
        for form, dataset in forms.items():
            if dataset is None:
                metrics[form] = None
                continue
            try:
                metrics[form] = _groups_metrics(store, dataset, version)
            except ReportError as exc:
                raise click.ClickException(str(exc)) from None
    rows = _table3(metrics)
    if fmt == "json":
        click.echo(json.dumps({"datasets": forms, "version": version, "rows": rows}, indent=2))
        return
    table = new_table(title="GRAMMAR, Table 3 layout", title_justify="left")
    for col in (
        "isolating errors from the retrieval database",
        "robust (short)",
        "non-robust (long)",
    ):
        table.add_column(col, justify="left" if col.startswith("isolating") else "right")
    for row in rows:
        table.add_row(str(row["method"]), _cell(row["robust"]), _cell(row["non_robust"]))
    console.print(table)
    console.print(
        "Context Comparison (isolating errors from the LLM) needs regenerated responses: "
        "not computed from result files."
    )


def _cell(value: object) -> str:
    return "-" if value is None else f"{value:.2f}"


def _groups_metrics(store: Any, dataset: str, version: str | None) -> dict[str, object]:
    """The grammar.groups report metrics of ``dataset`` (its newest version, or ``version``)."""
    from agentdocket.commands.reports import make_report
    from agentdocket.scorers.report import ReportError

    if not any(d["name"] == dataset for d in store.datasets.versions()):
        raise ReportError(f"no dataset {dataset!r} in the store")
    if "grammar.groups" not in store.scoring.scorer_versions(dataset):
        raise ReportError(
            f"dataset {dataset!r} has no grammar.groups verdicts: run "
            f"`agentdocket score --dataset {dataset} --scorer grammar.groups`"
        )
    asked = (f"grammar.groups={version}",) if version else ()
    found = make_report(store, dataset, None, asked)["scorers"]["grammar.groups"]
    return {"version": found["version"], "runs": found["scored"], **found["metrics"]}


def _table3(metrics: dict[str, dict[str, object] | None]) -> list[dict[str, object]]:
    def get(form: str, key: str) -> object:
        found = metrics.get(form)
        return None if found is None else found.get(key)

    return [
        {
            "method": "No Action",
            "robust": get("short", "accuracy"),
            "non_robust": get("long", "accuracy"),
        },
        {
            "method": "Remove Gap Groups",
            "robust": get("short", "refined_accuracy"),
            "non_robust": get("long", "refined_accuracy"),
        },
        {
            "method": "Balance Gap Examples",
            "robust": get("short_balanced", "accuracy"),
            "non_robust": get("long_balanced", "accuracy"),
        },
    ]
