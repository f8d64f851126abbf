"""The sessions dashboard: conversations of several turns (the runs sharing a conversation id),
how long they run, whether their goal was reached, and those that ended in an error or a loop;
one session's turns in order. Its views are in :mod:`agentdocket.dashboards.sessions`."""

from __future__ import annotations

from agentdocket.dashboards import macros
from agentdocket.dashboards.declared import names, scorer
from agentdocket.dashboards.panels import run
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
# Each session's last turn in the time range: the verdicts kept on it are the session's (as of
# the range's end); one on an earlier turn was given before a later turn came.
LAST = (
    "JOIN (SELECT session_id, max(started_at) AS last_start FROM dashboard_session_turns "
    f"WHERE {IN_RANGE} GROUP BY session_id) l "
    "ON l.session_id = v.session_id AND l.last_start = v.started_at"
)
GOAL = names("session.goal", "session.resolution")
# What a session that went wrong shows: its last failing verdict of these, or a failed turn.
WRONG = names("session.unanswered_error", "session.repetition")
TURNS_IN_RANGE = (
    "SELECT session_id, min(agent) AS agent, count(*) AS turns, sum(is_error) AS errors, "
    "min(time) AS started, max(coalesce(ended_at, time)) AS last_activity "
    f"FROM dashboard_session_turns WHERE {IN_RANGE} GROUP BY session_id"
)

PANELS: tuple[PanelSpec, ...] = (
    panel(
        UID,
        "Sessions",
        "table",
        "SELECT session_id, agent, turns, errors, started, last_activity, "
        "CAST(extract(epoch from last_activity - started) AS double precision) AS duration_s "
        f"FROM ({TURNS_IN_RANGE}) s ORDER BY last_activity DESC, session_id LIMIT 100",
        "session_id agent turns errors started last_activity duration_s",
        width=24,
        links={"session_id": SESSION_LINK},
        description="The sessions active in the time range, the latest first; their turns in "
        "the range.",
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
        "SELECT $__timeGroupAlias(v.time, $__interval), v.scorer AS metric, "
        "CAST(avg(CASE WHEN v.passed THEN 1.0 ELSE 0.0 END) AS double precision) AS completed "
        f"FROM dashboard_session_verdicts v {LAST} WHERE {in_range('v')} "
        f"AND v.scorer IN {GOAL} AND v.passed IS NOT NULL GROUP BY 1, 2 ORDER BY 1",
        "time metric completed",
        unit="percentunit",
        description="The share of sessions whose goal was reached (session.goal, a judge) and "
        "that ended resolved (session.resolution), by the time of their last turn.",
    ),
    panel(
        UID,
        "Sessions that ended in an error or a loop",
        "table",
        "SELECT time, session_id, agent, reason, detail FROM ("
        "SELECT v.time, v.session_id, v.agent, v.failure_type AS reason, v.rationale AS detail "
        f"FROM dashboard_session_verdicts v {LAST} WHERE {in_range('v')} "
        f"AND v.scorer IN {WRONG} AND v.passed = false "
        "UNION ALL SELECT v.time, v.session_id, v.agent, 'turn:error' AS reason, "
        f"v.question AS detail FROM dashboard_session_turns v {LAST} "
        f"WHERE {in_range('v')} AND v.is_error = 1"
        ") w ORDER BY time DESC, session_id, reason LIMIT 50",
        "time session_id agent reason detail",
        width=24,
        links={"session_id": SESSION_LINK},
        description="Sessions whose last turn failed, or that a session scorer found leaving "
        f"an error unanswered or repeating itself ({scorer('session.unanswered_error')}, "
        f"{scorer('session.repetition')}).",
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
