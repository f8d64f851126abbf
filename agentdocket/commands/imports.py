"""`agentdocket import ...`: runs, datasets and published results from files."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentdocket.commands.common import console, err, open_from

if TYPE_CHECKING:
    from agentdocket.store import Store


@click.group(name="import")
def import_() -> None:
    """Import runs into the store."""


def _import_traces(store: Store, path: Path) -> tuple[int, int, int]:
    from agentdocket.importers.interchange import InterchangeError, read_file
    from agentdocket.store import RecordRefused, StoreError

    try:
        parsed = read_file(path)
    except InterchangeError as exc:
        raise click.ClickException(f"{exc}; nothing was imported") from None
    try:
        result = store.import_all(parsed.datasets, parsed.events)
    except RecordRefused as exc:
        column = f" (column {exc.column})" if exc.column else ""
        raise click.ClickException(
            f"{path}: {parsed.where(exc.event_id)}: the database refused it{column}: "
            f"{exc.reason}; nothing was imported"
        ) from None
    except StoreError as exc:
        raise click.ClickException(f"{path}: {exc}; nothing was imported") from None
    return parsed.runs, result.inserted, result.duplicates


@import_.command(name="traces")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
@click.pass_context
def import_traces(ctx: click.Context, path: Path) -> None:
    """Import a JSONL (or Parquet) file of runs, as written by `export traces`.

    The whole file is validated first; a bad line is reported with its number and nothing of the
    file is written. Re-importing adds nothing.

    \b
    Examples:
      agentdocket import traces runs.jsonl
      agentdocket import traces export.parquet
    """
    with open_from(ctx, create=True) as store:
        runs, inserted, dupes = _import_traces(store, path)
    console.print(f"{path}: {runs} runs, {inserted} events added, {dupes} already stored")


@contextmanager
def _source_errors() -> Iterator[None]:
    """An importer's format error, which names the file and the place, as the command's error."""
    from agentdocket.importers.common import SourceFormatError

    try:
        yield
    except SourceFormatError as exc:
        raise click.ClickException(f"{exc}; nothing was imported") from None


def _store_import(
    ctx: click.Context,
    path: Path,
    datasets: list[Any],
    events: list[Any],
    problems: Sequence[object] = (),
) -> None:
    """Warn of what the importer noticed, store everything in one transaction, tell the counts."""
    from agentdocket.store import RecordRefused, StoreError

    for problem in problems:
        err.print(f"[yellow]warning:[/] {problem}")
    with open_from(ctx, create=True) as store:
        try:
            result = store.import_all(datasets, events)
        except RecordRefused as exc:
            found = next((e for e in events if str(e.event_id) == exc.event_id), None)
            where = (
                f"{found.kind} event (seq {found.seq}) of trace {found.trace_id}" if found else ""
            )
            column = f" (column {exc.column})" if exc.column else ""
            raise click.ClickException(
                f"{path}: {where}: the database refused it{column}: {exc.reason}; "
                "nothing was imported"
            ) from None
        except StoreError as exc:
            raise click.ClickException(f"{path}: {exc}; nothing was imported") from None
    runs = len({e.trace_id for e in events})
    cases = sum(len(d.cases) for d in datasets)
    console.print(
        f"{path}: dataset {datasets[0].name} ({cases} cases), {runs} runs: "
        f"{result.inserted} events added, {result.duplicates} already stored",
        soft_wrap=True,
    )


def _ibm_source(path: Path, expected: Path | None) -> tuple[str, Path, Path | None]:
    """Which format ``path`` holds, the file to read, and the expected responses file."""
    if path.is_dir():
        for name in ("corrected_result.json", "api_data_0_11.json"):
            if (path / name).is_file():
                path = path / name
                break
        else:
            raise click.ClickException(
                f"{path}: holds neither corrected_result.json nor api_data_0_11.json"
            )
    if path.name.startswith("api_data"):
        if expected is None:
            for folder in (path.parent, path.parent.parent):
                if (folder / "expected_final_responses.json").is_file():
                    expected = folder / "expected_final_responses.json"
                    break
            else:
                raise click.ClickException(
                    f"{path}: a fine-tuned model's results need --expected "
                    "expected_final_responses.json (not found beside it or one folder up)"
                )
        return "fine-tuned", path, expected
    return "single", path, None


@import_.command(name="ibm-coalitions")
@click.argument("path", type=click.Path(path_type=Path, exists=True))
@click.option(
    "--dataset",
    default="ibm-coalitions",
    show_default=True,
    help="Name of the dataset the cases go into (every model's: they answer the same tests).",
)
@click.option("--agent", help="Agent name of the runs (default: the folder's name).")
@click.option(
    "--expected",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="expected_final_responses.json, for a fine-tuned api_data_0_11.json "
    "(default: found beside it or one folder up).",
)
@click.option(
    "--duplicates",
    type=click.Choice(["refuse", "first", "each"]),
    default="refuse",
    show_default=True,
    help="Results repeating a test_run_uuid: refuse the file, keep the first of each, or make "
    "each a run of its own (single models' files).",
)
@click.pass_context
def import_ibm(
    ctx: click.Context,
    path: Path,
    dataset: str,
    agent: str | None,
    expected: Path | None,
    duplicates: str,
) -> None:
    """Import raw outputs of the IBM coalitions study: a corrected_result.json (single models)
    or an api_data_0_11.json (fine-tuned), or a folder holding one. Tests become runs, with
    cases carrying the study's argument rules. Re-importing adds nothing. A file that repeats
    a test_run_uuid is refused (naming how many and the first), unless --duplicates says what
    to do with the repeats.

    \b
    Examples:
      agentdocket import ibm-coalitions ibm-coalitions/mistral_all
      agentdocket import ibm-coalitions results/mixtral-all --dataset ibm --agent mixtral
    """
    from agentdocket.importers import ibm_coalitions, ibm_fine_tuned

    fmt, source, expected = _ibm_source(path, expected)
    agent = agent or (path.name if path.is_dir() else source.parent.name)
    with _source_errors():
        if fmt == "single":
            data, events, notes = ibm_coalitions.load(source, dataset, agent, duplicates)
            problems: list[Any] = list(notes)
        else:
            assert expected is not None
            data, events, problems = ibm_fine_tuned.load(source, expected, dataset, agent)
    _store_import(ctx, source, [data], events, problems)


@import_.command(name="toolalpaca")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--dataset", required=True, help="Name of the dataset the cases go into.")
@click.pass_context
def import_toolalpaca(ctx: click.Context, path: Path, dataset: str) -> None:
    """Import a ToolAlpaca evaluation set (eval_real.json, eval_simulated.json) as a dataset of
    cases: expected plan = the golden actions, expected calls = those with their parsed inputs.
    An input that is not JSON is reported and kept as its raw string.

    \b
    Examples:
      agentdocket import toolalpaca eval_real.json --dataset toolalpaca
    """
    from agentdocket.importers import toolalpaca

    with _source_errors():
        data, problems = toolalpaca.load(path, dataset)
    _store_import(ctx, path, [data], [], problems)


@import_.command(name="taskweaver-cases")
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--dataset", required=True, help="Name of the dataset the cases go into.")
@click.pass_context
def import_taskweaver(ctx: click.Context, folder: Path, dataset: str) -> None:
    """Import TaskWeaver auto_eval cases (FOLDER holds evaluator_prompt.yaml,
    virtual_user_prompt.yaml and cases/*/*.yaml) as examiner / judge cases: task description,
    weighted scoring points (with eval_code), data files, the examiner's and judge's prompts.

    \b
    Examples:
      agentdocket import taskweaver-cases auto_eval/cases --dataset taskweaver
    """
    from agentdocket.importers.taskweaver import load

    with _source_errors():
        data, problems = load(folder, dataset)
    _store_import(ctx, folder, [data], [], problems)


@import_.command(name="grammar-results")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--dataset", required=True, help="Name of the dataset the cases go into.")
@click.option("--agent", help="Agent name of the runs (default: the file's name).")
@click.option(
    "--judgements",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="The answer judge's cache for records without a judgement of their own (the "
    "authors' SemanticsMatch/<form>.json).",
)
@click.pass_context
def import_grammar(
    ctx: click.Context, path: Path, dataset: str, agent: str | None, judgements: Path | None
) -> None:
    """Import a GRAMMAR results file (JSON records of query, answer, true and retrieved document
    ids, response, judgement, query_tag; or the authors' records with their judgement cache) as
    runs with their retrieval and response, cases grouped by query_tag, and the judgement as a
    verdict of grammar.judge. A record without a judgement counts as incorrect.

    \b
    Examples:
      agentdocket import grammar-results results.json --dataset g
      agentdocket import grammar-results eval_results/results_short.json \\
          --judgements SemanticsMatch/short.json --dataset aurp-short
    """
    from agentdocket.importers.grammar_results import load, read_judgements

    with _source_errors():
        cache = read_judgements(judgements) if judgements is not None else None
        imported = load(path, dataset, agent, cache)
    console.print(f"{path}: {imported.summary()}", soft_wrap=True)
    _store_import(ctx, path, [imported.dataset], imported.events)
