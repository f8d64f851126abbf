"""The costs dashboard: what the agents spend, by agent, model and role, what a passing run
costs, the judges' spend apart, and the calls no price covers; from ``dashboard_call_costs``
(the ``call_costs`` projection serve's refresher keeps priced)."""

from __future__ import annotations

from agentdocket.dashboards.spec import PanelSpec, panel

UID = "agentdocket-costs"
TITLE = ("agentdocket: costs", "What model calls cost, priced at their own times")
CALLS = "$__timeFilter(time) AND agent IN ($agent) AND dataset IN ($dataset)"
AGENT_CALLS = f"{CALLS} AND NOT judge"
BUCKET = "$__timeGroupAlias(time, $__interval)"


def _spend(title: str, metric: str, where: str, description: str) -> PanelSpec:
    return panel(
        UID,
        title,
        "timeseries",
        f"SELECT {BUCKET}, {metric} AS metric, sum(cost) AS usd FROM dashboard_call_costs "
        f"WHERE {where} GROUP BY 1, 2 ORDER BY 1",
        "time metric usd",
        unit="currencyUSD",
        description=description,
    )


PANELS: tuple[PanelSpec, ...] = (
    _spend(
        "Spend by agent",
        "agent || '@' || agent_version",
        AGENT_CALLS,
        "The agents' own model calls (the judges' are apart).",
    ),
    _spend("Spend by model", "model", AGENT_CALLS, "The agents' model calls, by model."),
    _spend(
        "Spend by role",
        "role",
        CALLS,
        "By the role a model played (planner, caller, responder, ...); judge: the cost "
        "of evaluating.",
    ),
    panel(
        UID,
        "Cost per passing run",
        "table",
        "SELECT agent, agent_version, count(*) AS runs, sum(passed) AS passing, "
        "sum(usd) AS usd, sum(usd) / nullif(sum(passed), 0) AS usd_per_passing_run FROM ("
        "SELECT c.trace_id, c.agent, c.agent_version, sum(c.cost) AS usd, "
        "max(CASE WHEN v.pass = 1 THEN 1 ELSE 0 END) AS passed "
        "FROM dashboard_call_costs c LEFT JOIN dashboard_verdicts v "
        "ON v.trace_id = c.trace_id AND v.scorer = '$scorer' "
        "WHERE $__timeFilter(c.time) AND c.agent IN ($agent) AND c.dataset IN ($dataset) "
        "AND NOT c.judge "
        "GROUP BY c.trace_id, c.agent, c.agent_version) r "
        "GROUP BY agent, agent_version ORDER BY agent, agent_version",
        "agent agent_version runs passing usd usd_per_passing_run",
        width=24,
        description="Each agent version's spend over the runs the scorer $scorer passed "
        "(runs with an unpriced call count their priced calls only).",
    ),
    panel(
        UID,
        "Unpriced calls",
        "timeseries",
        f"SELECT {BUCKET}, model AS metric, count(*) AS calls FROM dashboard_call_costs "
        f"WHERE {CALLS} AND cost IS NULL GROUP BY 1, 2 ORDER BY 1",
        "time metric calls",
        description="Calls no price covers (no token counts, or a model genai-prices and the "
        "price file do not know): counted, never as zero. A price file names them.",
    ),
)
