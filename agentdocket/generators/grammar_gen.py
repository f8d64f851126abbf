"""GRAMMAR-Gen ("GRAMMAR: Grounded and Modular Methodology for Assessment of Closed-Domain
Retrieval-Augmented Language Models", section 4.2): grounded cases from a relational database.

SQL templates hold placeholders ``'[Table.Column]'``. Each placeholder is filled with the values
of ``SELECT DISTINCT Column FROM Table``; a template with several placeholders takes their
Cartesian product. Every filled query is executed against the database for its ground-truth
answer, and only queries with exactly one answer row are kept (the others are counted by
reason: no row, several rows, error). Each kept query is paired with its text variants (the
text templates given for its SQL template, filled with the same values): one case per variant,
``group`` = the filled SQL query, so that a semantic group holds the phrasings of one question.

The database is the user's data, read through SQLAlchemy (any URL it takes); nothing here
touches agentdocket's store. Template generation by an LLM is not part of this step.

Files:

- SQL templates: one template per line (the format the paper's generator prompt asks for);
  blank lines and lines starting with ``#`` are skipped;
- text templates: a JSON or YAML mapping from each SQL template (as written in the SQL file) to
  a list of text templates using the same placeholders, e.g.
  ``{"SELECT age FROM singer WHERE name = '[singer.name]';": ["How old is [singer.name]?"]}``.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from agentdocket.events import Case, Dataset
from agentdocket.importers.common import SourceFormatError, read_yaml_mapping

# '[Table.Column]' (quoted: a text value) or [Table.Column] (bare: a number)
PLACEHOLDER = re.compile(r"'\[(\w+)\.(\w+)\]'|\[(\w+)\.(\w+)\]")


class GrammarGenError(SourceFormatError):
    """A template file or template is unusable; the message names the file and line."""


@dataclass
class Generation:
    """What a generation produced and dropped."""

    dataset: Dataset
    templates: int = 0
    filled: int = 0
    kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)


def read_sql_templates(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise GrammarGenError(f"{path}: cannot read it ({exc.strerror})") from None
    templates = []
    for n, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if not PLACEHOLDER.search(text):
            raise GrammarGenError(f"{path}:{n}: no '[Table.Column]' placeholder in {text!r}")
        if text in templates:
            raise GrammarGenError(f"{path}:{n}: the template {text!r} is there twice")
        templates.append(text)
    if not templates:
        raise GrammarGenError(f"{path}: no SQL templates")
    return templates


def read_text_templates(path: Path, sql_templates: list[str]) -> dict[str, list[str]]:
    data = read_yaml_mapping(path, "a mapping from SQL template to text templates", GrammarGenError)
    out: dict[str, list[str]] = {}
    for sql, texts in data.items():
        if sql not in sql_templates:
            raise GrammarGenError(f"{path}: {sql!r} is not one of the SQL templates")
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise GrammarGenError(f"{path}: the text templates of {sql!r} must be a list of text")
        wanted = _placeholders(sql)
        for text in texts:
            if _placeholders(text) != wanted:
                raise GrammarGenError(
                    f"{path}: {text!r} does not use the placeholders of {sql!r}: "
                    f"{sorted(f'{t}.{c}' for t, c in wanted)}"
                )
        out[sql] = texts
    missing = [t for t in sql_templates if t not in out]
    if missing:
        raise GrammarGenError(f"{path}: no text templates for {missing[0]!r}")
    return out


def _placeholders(template: str) -> set[tuple[str, str]]:
    found = set()
    for m in PLACEHOLDER.finditer(template):
        table, column = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        found.add((table, column))
    return found


def _fill_sql(template: str, values: dict[tuple[str, str], Any]) -> str:
    def put(m: re.Match[str]) -> str:
        if m.group(1):
            value = str(values[(m.group(1), m.group(2))]).replace("'", "''")
            return f"'{value}'"
        return str(values[(m.group(3), m.group(4))])

    return PLACEHOLDER.sub(put, template)


def _fill_text(template: str, values: dict[tuple[str, str], Any]) -> str:
    for (table, column), value in values.items():
        template = template.replace(f"[{table}.{column}]", str(value))
    return template


def _answer(rows: Sequence[Any]) -> str:
    (row,) = rows
    return ", ".join(str(v) for v in row)


def generate(
    db_url: str,
    sql_templates: list[str],
    text_templates: dict[str, list[str]],
    dataset: str,
    version: str = "1",
    max_per_template: int = 1000,
) -> Generation:
    """Fill, execute, keep the single-answer queries, and pair them with their texts."""
    engine = sa.create_engine(db_url)
    preparer = engine.dialect.identifier_preparer
    result = Generation(Dataset(dataset, version, ()), templates=len(sql_templates))
    cases: list[Case] = []
    try:
        with engine.connect() as conn:
            distinct: dict[tuple[str, str], list[Any]] = {}
            for template in sql_templates:
                slots = sorted(_placeholders(template))
                for table, column in slots:
                    if (table, column) not in distinct:
                        query = (
                            f"SELECT DISTINCT {preparer.quote(column)} FROM "
                            f"{preparer.quote(table)} ORDER BY 1"
                        )
                        try:
                            rows = conn.execute(sa.text(query)).fetchall()
                        except sa.exc.DBAPIError as exc:
                            raise GrammarGenError(
                                f"placeholder [{table}.{column}] of {template!r}: {exc.orig}"
                            ) from None
                        distinct[(table, column)] = [r[0] for r in rows if r[0] is not None]
                combos = itertools.product(*(distinct[s] for s in slots))
                for combo in itertools.islice(combos, max_per_template):
                    values = dict(zip(slots, combo, strict=True))
                    sql = _fill_sql(template, values)
                    result.filled += 1
                    try:
                        rows = conn.execute(sa.text(sql.replace(":", "\\:"))).fetchall()
                    except sa.exc.DBAPIError:
                        conn.rollback()
                        result.dropped["error"] += 1
                        continue
                    if len(rows) != 1:
                        result.dropped["no answer" if not rows else "several answers"] += 1
                        continue
                    result.kept += 1
                    answer = _answer(rows)
                    digest = hashlib.sha1(sql.encode(), usedforsecurity=False).hexdigest()[:12]
                    for k, text in enumerate(text_templates[template]):
                        cases.append(
                            Case(
                                case_id=f"{digest}-{k}",
                                question=_fill_text(text, values),
                                reference_answer=answer,
                                group=sql,
                                attributes={
                                    "sql": sql,
                                    "sql_template": template,
                                    "text_template": text,
                                    "answer_row": [str(v) for v in rows[0]],
                                },
                            )
                        )
    finally:
        engine.dispose()
    description = f"GRAMMAR-Gen: {len(sql_templates)} SQL templates over {db_url.split('://')[0]}"
    result.dataset = Dataset(dataset, version, tuple(cases), description)
    return result
