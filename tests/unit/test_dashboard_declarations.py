"""The dashboards read scorer names and detail keys from the scorers' declarations."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentdocket import dashboards, scorers
from agentdocket.dashboards import alerts, panels
from agentdocket.dashboards.declared import detail, family, scorer
from agentdocket.dashboards.macros import expand
from agentdocket.dashboards.measures import MEASURES
from agentdocket.dashboards.panels import run, sessions
from agentdocket.dashboards.panels.common import measures

# What scripts/build_dashboards.py writes: the dashboards' JSON and the alert rules.
BUILT = Path(__file__).resolve().parents[2] / "dashboards"


def test_a_name_or_key_no_scorer_declares_fails_naming_it() -> None:
    assert scorer("response.similarity") == "'response.similarity'"
    assert detail("response.similarity", "cosine") == "'cosine'"
    assert family("review.peer") == "'review.peer.%'"
    with pytest.raises(KeyError, match=r"no scorer named 'response\.likeness'"):
        scorer("response.likeness")
    with pytest.raises(KeyError, match=r"detail 'cosines' of scorer response\.similarity.*rougeL"):
        detail("response.similarity", "cosines")
    with pytest.raises(KeyError, match=r"scorer review\.peer\.information_synthesis"):
        detail("review.peer.*", "cosine")  # checked on every scorer of the family
    with pytest.raises(KeyError, match="no scorer is named nothing"):
        family("nothing")
    with pytest.raises(KeyError, match="no measure named cosine_mean"):
        measures("true", "cosine cosine_mean")


def test_a_plugin_version_without_declared_details_changes_nothing() -> None:
    before = dashboards.objects()
    plugin = dataclasses.replace(
        scorers.get("planner.suffix_match"), version="99", details={}, metrics={}
    )
    scorers.register(plugin)
    try:
        assert dashboards.objects() == before
    finally:
        scorers.unregister("planner.suffix_match", "99")


def test_the_panels_read_only_declared_measures() -> None:
    read = {
        m
        for spec in panels.PANELS
        for found in re.findall(r"measure IN \(([^)]*)\)", spec.sql)
        for m in re.findall(r"'(\w+)'", found)
    }
    assert read and read <= set(MEASURES)


# --- template variables in the SQL ------------------------------------------------------------

SQLSTRING = re.compile(r"\$\{(\w+):sqlstring\}")
# A literal in single quotes (a quote in it doubled), or a name in double quotes.
QUOTED = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"")


def _unescaped(sql: str, declared: set[str]) -> list[str]:
    """What in ``sql`` takes a variable other than as a quoted value: any dollar sign or
    ``[[`` that is not one of Grafana's macros (``$__name``) or a declared variable in the
    sqlstring format outside quotes."""
    bad = [f"{m[0]} (not declared)" for m in SQLSTRING.finditer(sql) if m[1] not in declared]
    bad += re.findall(r"\$(?!__\w)[^\s,)]*|\[\[", SQLSTRING.sub("", sql))
    if len(SQLSTRING.findall(QUOTED.sub("''", sql))) != len(SQLSTRING.findall(sql)):
        bad += [q for q in QUOTED.findall(sql) if SQLSTRING.search(q)]
    return bad


def _sql_texts() -> dict[str, str]:
    """Every query that reaches Grafana, by where it is: the panels', the template variables'
    and the alert rules' as declared, and every rawSql and variable query of the committed
    JSON."""
    texts = {f"{s.dashboard} / {s.title}": s.sql for s in panels.PANELS}
    texts |= {f"variable {name}": sql for name, sql in panels.VARIABLE_SQL.items()}
    texts |= {f"alert {rule.uid}": rule.sql for rule in alerts.rules()}
    for path in [
        *sorted(BUILT.glob("json/*.json")),
        BUILT / "provisioning/alerting/agentdocket.json",
    ]:
        for i, sql in enumerate(_queries(json.loads(path.read_text()))):
            texts[f"{path.name} #{i}"] = sql
    return texts


def _queries(found: Any) -> list[str]:
    """Every rawSql, and every query variable's query, in a dashboard's or the alert rules'
    JSON."""
    out = []
    if isinstance(found, dict):
        if isinstance(found.get("rawSql"), str):
            out.append(found["rawSql"])
        if found.get("type") == "query" and isinstance(found.get("query"), str):
            out.append(found["query"])
        for value in found.values():
            out += _queries(value)
    elif isinstance(found, list):
        for value in found:
            out += _queries(value)
    return out


def test_every_query_takes_its_variables_quoted_by_grafana() -> None:
    """Grafana pastes a single value in a variable's default format unescaped: every panel,
    template variable and alert rule takes a variable in the sqlstring format, outside
    quotes, and only Grafana's macros otherwise."""
    declared = set(panels.VARIABLE_SQL) | set(run.VARIABLES) | set(sessions.VARIABLES)
    texts = _sql_texts()
    assert len([t for t in texts if t.endswith(".json #0")]) == len(panels.TITLES) + 1
    found = {where: bad for where, sql in texts.items() if (bad := _unescaped(sql, declared))}
    assert found == {}
    taken = {m for sql in texts.values() for m in SQLSTRING.findall(sql)}
    assert taken == declared  # every variable is taken somewhere, and the check saw them
    # what the check refuses
    for sql in (
        "scorer = '$scorer'",
        "agent IN ($agent)",
        "agent IN (${agent})",
        "agent IN (${agent:raw})",
        "agent IN (${agent:csv})",
        "scorer = ${scorer:singlequote}",
        "scorer = [[scorer]]",
        "scorer = '${scorer:sqlstring}'",
        "scorer = 'it''s ${scorer:sqlstring}'",
        '"$scorer" = 1',
        "scorer = ${nothing:sqlstring}",
    ):
        assert _unescaped(sql, declared), sql
    assert not _unescaped(
        "$__timeFilter(time) AND 'a''b' = ${scorer:sqlstring} AND x IN (${agent:sqlstring})",
        declared,
    )


def test_expand_formats_a_variable_as_grafanas_sqlstring_and_nothing_else() -> None:
    sql = "SELECT ${a:sqlstring} WHERE b IN (${b:sqlstring})"
    values = {"a": ["x' OR '1'='1"], "b": ["it's", "\\'; DROP TABLE runs; --", ""]}
    assert expand(sql, values) == (
        "SELECT 'x'' OR ''1''=''1' WHERE b IN ('it''s','\\''; DROP TABLE runs; --','')"
    )
    assert expand(sql, {"a": [""], "b": []}) == "SELECT '' WHERE b IN ()"
    # a value is not read again: neither a variable nor a macro in it is expanded
    tricky = {"a": ["${b:sqlstring}"], "b": ["$__timeFrom()", "$b"]}
    assert expand(sql, tricky) == "SELECT '${b:sqlstring}' WHERE b IN ('$__timeFrom()','$b')"
    assert expand("$__timeFilter(t) AND ${a:sqlstring}", {"a": ["x"]}, "F", "T") == (
        "t BETWEEN 'F' AND 'T' AND 'x'"
    )
    for form in (
        "$a",
        "'$a'",
        "${a}",
        "${a:raw}",
        "${a:singlequote}",
        "${a:csv}",
        "${a.field:sqlstring}",
        "[[a]]",
        "[[a:sqlstring]]",
    ):
        with pytest.raises(ValueError, match="not in the sqlstring format"):
            expand(f"SELECT {form}", {"a": ["x"]})
    with pytest.raises(ValueError, match="no value for the variable c"):
        expand("SELECT ${c:sqlstring}", {"a": ["x"]})
    with pytest.raises(ValueError, match="not expanded here"):
        expand("SELECT $__unixEpochFilter(t)", {})
    with pytest.raises(ValueError, match="neither a macro nor a variable"):
        expand("SELECT $$x$$", {})
