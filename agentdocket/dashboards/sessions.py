"""The sessions dashboard's views: conversations as the runs sharing a conversation id (its
panels are in :mod:`agentdocket.dashboards.panels.sessions`).

- ``dashboard_session_turns``: one row per turn (a run with a conversation id): its session,
  time, agent, dataset, status, question and answer;
- ``dashboard_session_verdicts``: the session scorers' (``session.*``) latest verdicts, each
  with the turn it is kept on (its start: a panel keeps the verdicts on a session's last turn,
  since one on an earlier turn was given before a later turn arrived).

The panels group turns by session within the time range; migration 0021's index on the
conversation id and the turn's start serves a session's turns.
"""

from __future__ import annotations

from agentdocket.store.derived import Derived

SESSION = "r.attributes->>'conversation_id'"

TURNS = f"""
            SELECT {SESSION} AS session_id, coalesce(r.started_at, r.first_ts) AS time,
                r.trace_id, r.run_month, r.started_at,
                coalesce(r.agent, '(none)') AS agent, coalesce(r.dataset, '(none)') AS dataset,
                r.status, CASE WHEN r.status = 'error' THEN 1 ELSE 0 END AS is_error,
                r.ended_at, r.question, r.answer
            FROM runs r WHERE r.started_at IS NOT NULL AND {SESSION} IS NOT NULL
        """

VERDICTS = """
            SELECT t.session_id, t.time, t.started_at, t.trace_id, t.agent, t.dataset,
                v.scorer, v.scorer_version, v.passed, v.score, v.failure_type, v.rationale
            FROM verdicts_latest v
            JOIN dashboard_session_turns t ON t.trace_id = v.trace_id
                AND t.run_month = v.run_month
            WHERE v.scorer LIKE 'session.%' AND v.subject_span_id IS NULL
        """


def objects() -> list[Derived]:
    return [
        Derived(f"VIEW {name}", f"CREATE VIEW {name} AS {body}", True, "postgresql")
        for name, body in (
            ("dashboard_session_turns", TURNS),
            ("dashboard_session_verdicts", VERDICTS),
        )
    ]
