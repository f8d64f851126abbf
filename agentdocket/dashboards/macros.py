"""Grafana's PostgreSQL macros and template variables, expanded as Grafana expands them:
what the tests and the dashboards benchmark send when they run every panel's query."""

from __future__ import annotations

import re


def expand(
    text: str,
    values: dict[str, list[str]],
    time_from: str = "2000-01-01T00:00:00Z",
    time_to: str = "2100-01-01T00:00:00Z",
    interval_s: int = 3600,
) -> str:
    """The SQL Grafana's PostgreSQL datasource sends for ``text``: the macros used here
    expanded as Grafana expands them, a multi-value variable as a quoted list, a single value
    as itself. For the tests and the benchmark, which run every panel's query."""
    text = re.sub(
        r"\$__timeGroupAlias\((\w+(?:\.\w+)?),\s*\$__interval\)",
        rf'floor(extract(epoch from \1)/{interval_s})*{interval_s} AS "time"',
        text,
    )
    text = text.replace("$__timeFrom()", f"'{time_from}'").replace("$__timeTo()", f"'{time_to}'")
    text = re.sub(
        r"\$__timeFilter\((\w+(?:\.\w+)?)\)",
        rf"\1 BETWEEN '{time_from}' AND '{time_to}'",
        text,
    )
    for name in sorted(values, key=len, reverse=True):
        chosen = values[name]
        quoted = ",".join("'" + v.replace("'", "''") + "'" for v in chosen)
        text = text.replace(f"'${name}'", quoted if len(chosen) == 1 else "NULL")
        text = text.replace(f"${name}", quoted)
    if "$" in text:
        raise ValueError(f"unexpanded variable or macro in: {text}")
    return text
