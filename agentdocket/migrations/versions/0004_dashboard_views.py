"""The dashboards' stable layer: ``dashboard_*`` views over the projections (PostgreSQL).

Grafana's panels read only these views, never the tables, so the schema under them can change
as long as a migration keeps the views' names and columns. Every view has a ``time`` column
(when the run started) for Grafana's time filter, and the run's agent, version, strategy, model
and dataset for the template variables (``(none)`` where the run has none, so that a
variable's "All" covers every run). SQLite gets none: the dashboards need PostgreSQL.

- ``dashboard_runs``: one row per run: status, latency, step counts.
- ``dashboard_verdicts``: the latest run-level verdict of each scorer version, with its run's
  dimensions (``pass`` is 1, 0, or null for scorers that do not decide).
- ``dashboard_scorer_versions``: the (scorer, version) pairs that have verdicts.
- ``dashboard_run_tools``: the tools each run called.
- ``dashboard_tool_use``: planner, slot-filling and procedural verdicts with extra plan steps
  and the matched fraction of expected calls.
- ``dashboard_similarity``: response similarity (cosine, ROUGE-L precision / recall / F).
- ``dashboard_reference``: reference-based judge verdicts (Match / Not Match, 1-5 scores).
- ``dashboard_peer_review``: peer review per sub-task (perfect, reviewers' and meta-reviewers'
  unanimity); ``dashboard_peer_decisions``: every reviewer's and meta-reviewer's decision with
  its model.
- ``dashboard_grammar``: GRAMMAR per run: group, tag, correctness, blame.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

VIEWS = {
    "dashboard_runs": """
        SELECT coalesce(r.started_at, r.first_ts) AS time, r.trace_id,
            coalesce(r.agent, '(none)') AS agent,
            coalesce(r.agent_version, '(none)') AS agent_version,
            coalesce(r.strategy, '(none)') AS strategy,
            coalesce(r.models->>'planner', r.models->>'llm',
                     (SELECT min(m.value) FROM jsonb_each_text(r.models) m), '(none)') AS model,
            coalesce(r.dataset, '(none)') AS dataset, r.dataset_version, r.case_id, r.status,
            CASE WHEN r.status = 'error' THEN 1 ELSE 0 END AS is_error,
            CAST(extract(epoch FROM r.ended_at - r.started_at) * 1000 AS double precision)
                AS latency_ms,
            r.n_steps, r.n_tool_calls, r.n_sql, r.n_llm_calls, r.n_retrievals, r.n_errors
        FROM runs r
    """,
    "dashboard_verdicts": """
        SELECT r.time, v.ts AS verdict_time, v.trace_id, v.scorer, v.scorer_version, v.passed,
            CASE WHEN v.passed THEN 1.0 WHEN NOT v.passed THEN 0.0 END AS pass,
            v.score, v.label, v.failure_type, v.details, r.agent, r.agent_version, r.strategy,
            r.model, r.dataset, r.case_id
        FROM verdicts v JOIN dashboard_runs r ON r.trace_id = v.trace_id
        WHERE v.subject_span_id IS NULL AND NOT EXISTS (
            SELECT 1 FROM verdicts n
            WHERE n.trace_id = v.trace_id AND n.scorer = v.scorer
              AND n.scorer_version = v.scorer_version AND n.subject_span_id IS NULL
              AND (n.ts > v.ts OR (n.ts = v.ts AND n.verdict_id > v.verdict_id)))
    """,
    # The scorer versions present, for the template variables: a skip scan of the
    # (scorer, scorer_version) index, one probe per pair instead of a pass over every verdict.
    "dashboard_scorer_versions": """
        WITH RECURSIVE pairs AS (
            (SELECT scorer, scorer_version FROM verdicts
             ORDER BY scorer, scorer_version LIMIT 1)
            UNION ALL
            SELECT n.scorer, n.scorer_version FROM pairs p CROSS JOIN LATERAL (
                SELECT v.scorer, v.scorer_version FROM verdicts v
                WHERE (v.scorer, v.scorer_version) > (p.scorer, p.scorer_version)
                ORDER BY v.scorer, v.scorer_version LIMIT 1) n
        )
        SELECT scorer, scorer_version FROM pairs
    """,
    "dashboard_run_tools": """
        SELECT DISTINCT e.trace_id, e.payload->>'tool' AS tool
        FROM events e WHERE e.kind = 'tool.called'
    """,
    "dashboard_tool_use": """
        SELECT time, trace_id, scorer, scorer_version, passed, pass, failure_type,
            CAST(details->>'extra_steps' AS integer) AS extra_steps,
            CAST(details->>'matched_fraction' AS double precision) AS matched_fraction,
            agent, agent_version, strategy, model, dataset
        FROM dashboard_verdicts
        WHERE scorer IN ('planner.suffix_match', 'tools.slot_fill', 'tools.procedural')
    """,
    "dashboard_similarity": """
        SELECT time, trace_id, scorer_version,
            CAST(details->>'cosine' AS double precision) AS cosine,
            CAST(details->>'rougeL_precision' AS double precision) AS rouge_l_precision,
            CAST(details->>'rougeL_recall' AS double precision) AS rouge_l_recall,
            CAST(details->>'rougeL_fmeasure' AS double precision) AS rouge_l_f,
            agent, agent_version, strategy, model, dataset
        FROM dashboard_verdicts WHERE scorer = 'response.similarity'
    """,
    "dashboard_reference": """
        SELECT time, trace_id, scorer_version, label, failure_type,
            CASE label WHEN 'Match' THEN 1 WHEN 'Not Match' THEN 0 END AS matched,
            CASE WHEN details->>'question_type' = 'interpretive'
                 THEN CAST(details->>'score' AS integer) END AS interpretive_score,
            details->>'question_type' AS question_type, details->>'model' AS judge_model,
            agent, agent_version, strategy, model, dataset
        FROM dashboard_verdicts WHERE scorer = 'answer.reference'
    """,
    "dashboard_peer_review": """
        SELECT time, trace_id, scorer_version, details->>'subtask' AS subtask, passed, pass,
            label, failure_type,
            CASE details->>'reviewers_unanimous' WHEN 'true' THEN 1 WHEN 'false' THEN 0 END
                AS reviewers_unanimous,
            CASE details->>'meta_reviewers_unanimous' WHEN 'true' THEN 1 WHEN 'false' THEN 0
                END AS meta_reviewers_unanimous,
            agent, agent_version, strategy, model, dataset
        FROM dashboard_verdicts WHERE scorer LIKE 'review.peer.%'
    """,
    "dashboard_peer_decisions": """
        SELECT v.time, v.trace_id, v.scorer_version, v.details->>'subtask' AS subtask,
            d.role, coalesce(m.model, '(unknown)') AS judge_model, d.decision,
            v.agent, v.agent_version, v.strategy, v.model, v.dataset
        FROM dashboard_verdicts v
        CROSS JOIN LATERAL (
            SELECT 'reviewer' AS role, x.decision, x.i
            FROM jsonb_array_elements_text(
                coalesce(v.details->'reviewer_decisions', '[]'::jsonb)
            ) WITH ORDINALITY x(decision, i)
            UNION ALL
            SELECT 'meta_reviewer', x.decision, x.i
            FROM jsonb_array_elements_text(
                coalesce(v.details->'meta_reviewer_decisions', '[]'::jsonb)
            ) WITH ORDINALITY x(decision, i)
        ) d
        LEFT JOIN LATERAL (
            SELECT y.model FROM jsonb_array_elements_text(
                coalesce(v.details->(CASE d.role WHEN 'reviewer' THEN 'reviewer_models'
                                     ELSE 'meta_reviewer_models' END), '[]'::jsonb)
            ) WITH ORDINALITY y(model, j) WHERE y.j = d.i
        ) m ON true
        WHERE v.scorer LIKE 'review.peer.%'
    """,
    "dashboard_grammar": """
        SELECT time, trace_id, scorer_version, details->>'group' AS group_id,
            details->>'tag' AS tag,
            CASE details->>'correct' WHEN 'true' THEN 1 ELSE 0 END AS correct,
            CASE details->>'retrieval_correct' WHEN 'true' THEN 1 ELSE 0 END
                AS retrieval_correct,
            CASE details->>'refined_correct' WHEN 'true' THEN 1 WHEN 'false' THEN 0 END
                AS refined_correct,
            details->>'blame' AS blame,
            coalesce(CAST(details->>'group_representative' AS integer), 0) AS representative,
            CAST(details->>'group_size' AS integer) AS group_size,
            agent, agent_version, strategy, model, dataset
        FROM dashboard_verdicts WHERE scorer = 'grammar.groups'
    """,
}


# What the views filter and join on: the run's time as an indexed expression (its index also
# gives the planner statistics for it), and statistics for the dimensions as the views spell
# them, so that a filter on them is estimated from the data instead of guessed.
INDEXES = [
    "CREATE INDEX runs_dashboard_time ON runs ((coalesce(started_at, first_ts)))",
    "CREATE STATISTICS runs_dashboard_agent ON (coalesce(agent, '(none)')) FROM runs",
    "CREATE STATISTICS runs_dashboard_dataset ON (coalesce(dataset, '(none)')) FROM runs",
]


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in INDEXES:
        op.execute(statement)
    for name, body in VIEWS.items():
        op.execute(f"CREATE VIEW {name} AS {body}")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name in reversed(list(VIEWS)):
        op.execute(f"DROP VIEW {name}")
    op.execute("DROP STATISTICS runs_dashboard_dataset")
    op.execute("DROP STATISTICS runs_dashboard_agent")
    op.execute("DROP INDEX runs_dashboard_time")
