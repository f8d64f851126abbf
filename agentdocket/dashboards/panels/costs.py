"""The costs dashboard: what the agents spend, by agent, model and role, what a passing run
costs, the judges' spend apart, and the calls no price covers; from the hourly roll-up
``dashboard_cost_hours`` (kept with ``call_costs``, which serve's refresher keeps priced), so
that its cost grows with hours and dimensions, not with calls."""

from __future__ import annotations

from agentdocket.dashboards.macros import variable
from agentdocket.dashboards.panels.common import AGENT_AND_DATASET, HOURS
from agentdocket.dashboards.spec import PanelSpec, panel

UID = "agentdocket-costs"
TITLE = ("agentdocket: costs", "What model calls cost, priced at their own times")
CALLS = f"{HOURS} AND {AGENT_AND_DATASET}"
AGENT_CALLS = f"{CALLS} AND NOT judge"
BUCKET = "$__timeGroupAlias(time, $__interval)"
SCORER = variable("scorer")
# the scorer's newest version (by text: 1.1 after 1) that has verdicts
NEWEST = f"(SELECT max(scorer_version) FROM dashboard_scorer_versions WHERE scorer = {SCORER})"


def _spend(title: str, metric: str, where: str, description: str) -> PanelSpec:
    return panel(
        UID,
        title,
        "timeseries",
        f"SELECT {BUCKET}, {metric} AS metric, sum(cost) AS usd FROM dashboard_cost_hours "
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
        "By the role a model played (planner, caller, responder, ...); judge: the cost of "
        "evaluating.",
    ),
    panel(
        UID,
        "Cost per passing run",
        "table",
        "SELECT c.agent, c.usd, c.calls, p.passing, c.usd / nullif(p.passing, 0) "
        "AS usd_per_passing_run FROM ("
        f"SELECT agent, sum(cost) AS usd, sum(calls) AS calls FROM dashboard_cost_hours "
        f"WHERE {AGENT_CALLS} GROUP BY agent) c LEFT JOIN ("
        "SELECT agent, sum(passed) AS passing FROM dashboard_verdict_stats "
        f"WHERE {CALLS} AND scorer = {SCORER} AND scorer_version = {NEWEST} "
        "GROUP BY agent) p ON p.agent = c.agent ORDER BY c.agent",
        "agent usd calls passing usd_per_passing_run",
        width=24,
        description="Each agent's spend over the runs its newest version of the scorer "
        "$scorer passed, in the time range (unpriced calls add nothing: see below).",
    ),
    panel(
        UID,
        "Computed and reported cost",
        "table",
        "SELECT model, sum(calls) AS calls, sum(cost) AS computed_usd, "
        "sum(reported_calls) AS reported_calls, sum(reported) AS reported_usd, "
        "sum(cost) - sum(reported) AS difference_usd FROM dashboard_cost_hours "
        f"WHERE {CALLS} GROUP BY model ORDER BY model",
        "model calls computed_usd reported_calls reported_usd difference_usd",
        width=24,
        description="What agentdocket computed beside what the spans reported (the "
        "provider's own figure, gen_ai.usage.cost.amount; Langfuse's gen_ai.usage.cost; "
        "OpenInference's llm.cost.total), in US dollars, by model. The difference is over "
        "every call: where few calls report a cost, compare reported_calls with calls.",
    ),
    panel(
        UID,
        "Unpriced calls",
        "timeseries",
        f"SELECT {BUCKET}, model AS metric, sum(unpriced) AS calls FROM dashboard_cost_hours "
        f"WHERE {CALLS} AND unpriced > 0 GROUP BY 1, 2 ORDER BY 1",
        "time metric calls",
        description="Calls no price covers (no token counts, or a model genai-prices and the "
        "price file do not know): counted, never as zero. A price file names them.",
    ),
)
