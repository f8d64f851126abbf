"""`agentdocket grammar ...`: GRAMMAR (002_614c9023fb85ae41.txt)."""

from __future__ import annotations

from pathlib import Path

import click

from agentdocket.commands.common import console, open_from
from agentdocket.store import StoreError


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
    variant (group = the filled query)."""
    from agentdocket.adapters import grammar_gen

    try:
        sql = grammar_gen.read_sql_templates(sql_templates)
        texts = grammar_gen.read_text_templates(text_templates, sql)
        made = grammar_gen.generate(db_url, sql, texts, dataset, version, max_per_template)
    except grammar_gen.GrammarGenError as exc:
        raise click.ClickException(f"{exc}; nothing was stored") from None
    with open_from(ctx) as store:
        try:
            store.register_dataset(made.dataset)
        except StoreError as exc:
            raise click.ClickException(f"{exc}; nothing was stored") from None
    dropped = ", ".join(f"{n} {reason}" for reason, n in sorted(made.dropped.items())) or "none"
    console.print(
        f"{made.templates} SQL templates, {made.filled} filled queries: {made.kept} with a "
        f"single answer kept, dropped {dropped}; dataset {dataset} v{version}: "
        f"{len(made.dataset.cases)} cases in {made.kept} groups",
        soft_wrap=True,
    )
