"""The tool-use dashboard: the planner's suffix match, slot filling and procedural accuracy,
by scorer, over time and by tool, and their failures."""

from __future__ import annotations

from agentdocket.dashboards.declared import scorer
from agentdocket.dashboards.panels import run
from agentdocket.dashboards.panels.common import (
    TOOL_SCORERS,
    VERDICTS,
    VERSION_IN,
    failing_runs,
    measures,
    ratio,
    total,
)
from agentdocket.dashboards.spec import PanelSpec, panel

UID = "agentdocket-tool-use"
TITLE = ("agentdocket: tool use", "Planner suffix match, slot filling, procedural accuracy")
PLANNER = f"scorer = {scorer('planner.suffix_match')}"

PANELS: tuple[PanelSpec, ...] = (
    panel(
        UID,
        "Pass rate by scorer",
        "stat",
        f"SELECT scorer, {ratio('passed', 'decided')} AS pass_rate FROM dashboard_verdict_stats "
        f"WHERE {VERDICTS} AND {TOOL_SCORERS} GROUP BY 1 ORDER BY 1",
        "scorer pass_rate",
        unit="percentunit",
        width=24,
        height=5,
    ),
    panel(
        UID,
        "Pass rate over time",
        "timeseries",
        f"SELECT $__timeGroupAlias(time, $__interval), scorer AS metric, "
        f"{ratio('passed', 'decided')} AS pass_rate FROM dashboard_verdict_stats "
        f"WHERE {VERDICTS} AND {TOOL_SCORERS} GROUP BY 1, 2 ORDER BY 1, 2",
        "time metric pass_rate",
        unit="percentunit",
        links={"*": run.FAILING},
    ),
    panel(
        UID,
        "Pass rate by tool",
        "table",
        f"SELECT label AS tool, scorer, {ratio('total', 'n')} AS pass_rate, {total('n')} AS runs "
        f"FROM dashboard_verdict_measures WHERE {measures(TOOL_SCORERS, 'tool')} "
        f"GROUP BY 1, 2 ORDER BY 1, 2",
        "tool scorer pass_rate runs",
        description="Each run counts once for every tool it called.",
        links={"tool": run.runs_link("tool"), "scorer": run.runs_link("failing_scorer")},
    ),
    panel(
        UID,
        "Top failure types",
        "table",
        f"SELECT failure_type, scorer, {total('verdicts')} AS verdicts "
        f"FROM dashboard_verdict_stats WHERE {VERDICTS} AND {TOOL_SCORERS} "
        f"AND failure_type IS NOT NULL GROUP BY 1, 2 ORDER BY verdicts DESC, 1, 2 LIMIT 20",
        "failure_type scorer verdicts",
        links={
            "failure_type": run.runs_link("failure_type"),
            "scorer": run.runs_link("failing_scorer"),
        },
    ),
    panel(
        UID,
        "Extra plan steps (passing plans)",
        "barchart",
        f"SELECT label AS extra_steps, {total('n')} AS runs FROM dashboard_verdict_measures "
        f"WHERE {measures(PLANNER, 'extra_steps')} "
        f"GROUP BY label ORDER BY min(total / n)",
        "extra_steps runs",
    ),
    failing_runs(UID, "tool use", f"{TOOL_SCORERS} AND {VERSION_IN}"),
)
