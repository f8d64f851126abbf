"""The sessions dashboard: conversations of several turns (the runs sharing a conversation id),
how long they run, whether their goal was reached, and those that ended in an error or a loop;
one session's turns in order. Its views are in :mod:`agentdocket.dashboards.sessions`."""

from __future__ import annotations

from agentdocket.dashboards import macros
from agentdocket.dashboards.declared import names
from agentdocket.dashboards.panels import run
from agentdocket.dashboards.panels.common import RUNS, ratio
from agentdocket.dashboards.spec import PanelSpec, panel

UID = "agentdocket-sessions"
TITLE = (
    "agentdocket: sessions",
    "Conversations of several turns: their length, goal completion, and how they ended",
)
VARIABLES = {"session_id": "Session id"}
SESSION_LINK = f"/d/{UID}/?var-session_id=${{__value.raw}}&${{__url_time_range}}"


def in_range(alias: str = "") -> str:
    """The turns (or verdicts) of the time range, agent and dataset, of table ``alias``."""
    a = f"{alias}." if alias else ""
    return (
        f"$__timeFilter({a}time) AND {a}agent IN ({macros.variable('agent')}) "
        f"AND {a}dataset IN ({macros.variable('dataset')})"
    )


IN_RANGE = in_range()
# The session shown turn by turn: the id given, else the one active last in the time range.
SESSION_ID = macros.variable("session_id")
THE_SESSION = (
    f"session_id = coalesce(nullif({SESSION_ID}, ''), (SELECT l.session_id FROM "
    f"dashboard_session_turns l WHERE {in_range('l')} "
    "ORDER BY l.time DESC, l.trace_id DESC LIMIT 1))"
)
GOAL = names("session.goal", "session.resolution")
# The verdicts that say a session went wrong: unresolved (its last turn failed or gave no
# answer), an error left unanswered, the agent repeating itself.
WRONG = names("session.resolution", "session.unanswered_error", "session.repetition")
NEWEST_TURNS = 1000  # the sessions listed are those of the newest turns in the range
RECENT = (
    "SELECT session_id, max(time) AS last_turn FROM (SELECT session_id, time "
    f"FROM dashboard_session_turns WHERE {IN_RANGE} ORDER BY time DESC LIMIT {NEWEST_TURNS}) n "
    "GROUP BY session_id ORDER BY last_turn DESC, session_id LIMIT 100"
)
TURNS_IN_RANGE = (
    "SELECT session_id, count(*) AS turns "
    f"FROM dashboard_session_turns WHERE {IN_RANGE} GROUP BY session_id"
)
# The newest failing verdicts of WRONG, those on their session's last turn (one on an earlier
# turn was given before a later turn came): up to 50 of the newest 200.
FAILING = (
    "SELECT time, session_id, agent, failure_type, rationale, trace_id "
    f"FROM dashboard_failing_runs WHERE {IN_RANGE} AND session_id IS NOT NULL "
    f"AND scorer IN {WRONG} ORDER BY time DESC, trace_id, scorer LIMIT 200"
)
# A few sessions' turns, looked up by session (migration 0021's index): ``= ANY(ARRAY(...))``
# makes the planner take the index, where an IN (subquery) lets it scan every turn and hash.
LAST_STARTS = (
    "SELECT session_id, max(time) AS last_turn FROM dashboard_session_turns "
    "WHERE session_id = ANY(ARRAY(SELECT session_id FROM failing)) GROUP BY session_id"
)

PANELS: tuple[PanelSpec, ...] = (
    panel(
        UID,
        "Sessions",
        "table",
        "SELECT r.session_id, min(t.agent) AS agent, count(*) AS turns, "
        "sum(t.is_error) AS errors, min(t.time) AS started, "
        "max(coalesce(t.ended_at, t.time)) AS last_activity, "
        "CAST(extract(epoch from max(coalesce(t.ended_at, t.time)) - min(t.time)) "
        "AS double precision) AS duration_s "
        f"FROM ({RECENT}) r JOIN dashboard_session_turns t ON t.session_id = r.session_id "
        f"WHERE {in_range('t')} AND t.session_id = ANY(ARRAY(SELECT session_id FROM ({RECENT}) a)) "
        "GROUP BY r.session_id ORDER BY max(r.last_turn) DESC, r.session_id",
        "session_id agent turns errors started last_activity duration_s",
        width=24,
        links={"session_id": SESSION_LINK},
        description=f"The sessions of the newest {NEWEST_TURNS:,} turns in the time range "
        "(up to 100), the latest first, with their turns in the range.",
    ),
    panel(
        UID,
        "Turns per session",
        "barchart",
        "SELECT CASE WHEN turns >= 10 THEN '10+' ELSE lpad(CAST(turns AS text), 2, ' ') END "
        f"AS turns, count(*) AS sessions FROM ({TURNS_IN_RANGE}) s GROUP BY 1 ORDER BY 1",
        "turns sessions",
        description="How many sessions took each number of turns (in the time range).",
    ),
    panel(
        UID,
        "Goal completion",
        "timeseries",
        "SELECT $__timeGroupAlias(time, $__interval), scorer AS metric, "
        f"{ratio('passed', 'decided')} AS completed FROM dashboard_verdict_stats "
        f"WHERE {RUNS} AND scorer IN {GOAL} GROUP BY 1, 2 ORDER BY 1, 2",
        "time metric completed",
        unit="percentunit",
        description="The share of judged sessions whose goal was reached (session.goal, a "
        "judge) and that ended resolved (session.resolution), by the hour of the last turn "
        "judged; a session judged again after a later turn counts at each judgement.",
    ),
    panel(
        UID,
        "Sessions that ended in an error or a loop",
        "table",
        f"WITH failing AS ({FAILING}) "
        "SELECT f.time, f.session_id, f.agent, f.failure_type AS reason, f.rationale AS detail "
        f"FROM failing f JOIN ({LAST_STARTS}) l ON l.session_id = f.session_id "
        "WHERE l.last_turn = f.time ORDER BY f.time DESC, f.session_id, f.failure_type LIMIT 50",
        "time session_id agent reason detail",
        width=24,
        links={"session_id": SESSION_LINK},
        description="The newest sessions that ended unresolved (the last turn failed or gave "
        "no answer), left an error unanswered, or repeated themselves (the session scorers "
        "session.resolution, session.unanswered_error, session.repetition).",
    ),
    panel(
        UID,
        "Turns of the session",
        "table",
        "SELECT row_number() OVER (ORDER BY started_at, trace_id) AS turn, time, trace_id, "
        "status, question, answer FROM dashboard_session_turns "
        f"WHERE {THE_SESSION} ORDER BY started_at, trace_id",
        "turn time trace_id status question answer",
        width=24,
        height=10,
        links={"trace_id": run.RUN_LINK},
        description="One session's turns in order: the session id given (a link brings it), "
        "else the one active last in the time range.",
    ),
)
