"""Grafana's PostgreSQL macros and template variables: how the panels' SQL writes a variable
(:func:`variable`), and :func:`expand`, which expands both as Grafana expands them: what the
tests and the dashboards benchmark send when they run every panel's query.

Every variable in the dashboards' SQL is written ``${name:sqlstring}``, never ``$name`` or
``'$name'``. In its default format for a SQL datasource Grafana quotes the values of a
multi-value variable, but pastes a single value as it is (newer versions double its quotes,
without adding any), so a value typed into a text box or a URL's ``var-`` parameter would be
SQL run as the dashboard's role. The sqlstring format quotes every value, whatever the
variable and the version of Grafana.
"""

from __future__ import annotations

import re

# Grafana's syntax for a template variable (its variableRegex): $name, [[name]],
# [[name:format]], ${name}, ${name.fieldPath} and ${name:format}.
GRAFANA_VARIABLE = r"\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}"
# The macros expanded here (Grafana's server expands them), then any variable, then a dollar
# sign neither is (which fails).
TOKEN = re.compile(
    r"\$__timeGroupAlias\((?P<group>\w+(?:\.\w+)?),\s*\$__interval\)"
    r"|\$__timeFilter\((?P<filter>\w+(?:\.\w+)?)\)"
    r"|\$__time(?P<edge>From|To)\(\)"
    rf"|{GRAFANA_VARIABLE}"
    r"|\$"
)
# The one format the panels write a variable in.
SQLSTRING = "sqlstring"


def variable(name: str) -> str:
    """Template variable ``name`` as the panels' SQL writes it: in Grafana's sqlstring format,
    a quoted literal, or a multi-value variable's values as quoted literals joined by commas
    (for ``IN (...)``)."""
    return "${" + name + ":" + SQLSTRING + "}"


def sqlstring(chosen: list[str]) -> str:
    """Grafana's sqlstring format: each value in single quotes with its single quotes doubled,
    joined by commas (nothing when none is chosen). Backslashes are left as they are, which
    PostgreSQL reads as themselves in a quoted literal (standard_conforming_strings, on since
    9.1)."""
    return ",".join("'" + v.replace("'", "''") + "'" for v in chosen)


def expand(
    text: str,
    values: dict[str, list[str]],
    time_from: str = "2000-01-01T00:00:00Z",
    time_to: str = "2100-01-01T00:00:00Z",
    interval_s: int = 3600,
) -> str:
    """The SQL Grafana's PostgreSQL datasource sends for ``text``: the macros used here
    expanded as Grafana expands them, and each ``${name:sqlstring}`` as Grafana formats the
    value or values chosen in ``values[name]``. In one pass over ``text``: a value is not read
    again for variables, as in Grafana, nor for macros (Grafana's server would expand a macro
    written in a value, inside its quotes). Any other form of a variable, a variable with no
    value and a macro not known here raise :class:`ValueError`."""

    def one(m: re.Match[str]) -> str:
        if m["group"]:
            return rf'floor(extract(epoch from {m["group"]})/{interval_s})*{interval_s} AS "time"'
        if m["filter"]:
            return f"{m['filter']} BETWEEN '{time_from}' AND '{time_to}'"
        if m["edge"]:
            return f"'{time_from if m['edge'] == 'From' else time_to}'"
        found = re.fullmatch(GRAFANA_VARIABLE, m[0])
        if found is None:
            raise ValueError(f"a dollar sign that is neither a macro nor a variable in: {text}")
        name = found[1] or found[2] or found[4]
        if name.startswith("__"):
            raise ValueError(f"a macro or built-in variable not expanded here: {m[0]}")
        if found[4] is None or found[5] is not None or found[6] != SQLSTRING:
            raise ValueError(
                f"{m[0]}: a variable not in the sqlstring format ({variable(name)}), which "
                "Grafana may paste into the SQL unescaped"
            )
        if name not in values:
            raise ValueError(f"no value for the variable {name} in: {text}")
        return sqlstring(values[name])

    return TOKEN.sub(one, text)
