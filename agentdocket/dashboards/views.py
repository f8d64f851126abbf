"""The row-level ``dashboard_*`` views (PostgreSQL): one row per run, verdict or decision.

Grafana's panels read only ``dashboard_*`` views, never the tables, so the schema under them
can change as long as these keep their names and columns. Every view has a ``time`` column
(when the run started) for Grafana's time filter, and the run's agent, version, strategy, model
and dataset for the template variables (``(none)`` where the run has none, so that a
variable's "All" covers every run).

- ``dashboard_runs``: one row per run (a trace with a recorded start): status, latency, step
  counts, question and answer.
- ``dashboard_verdicts``: the latest run-level verdict of each scorer version
  (``verdicts_latest``), with its run's dimensions (``pass`` is 1, 0, or null for scorers
  that do not decide).
- ``dashboard_scorer_versions``: the (scorer, version) pairs that have verdicts.
- ``dashboard_run_tools``: the tools each run called.
- ``dashboard_tool_use``: planner, slot-filling and procedural verdicts with extra plan steps
  and the matched fraction of expected calls.
- ``dashboard_similarity``: response similarity (cosine, ROUGE-L precision / recall / F).
- ``dashboard_reference``: reference-based judge verdicts (Match / Not Match, 1-5 scores).
- ``dashboard_peer_review``: peer review per sub-task (reviewers' and meta-reviewers'
  unanimity); ``dashboard_peer_decisions``: every reviewer's and meta-reviewer's decision with
  its model.
- ``dashboard_grammar``: GRAMMAR per run: group, tag, correctness, blame.
- ``dashboard_dead_letters``: the records the store refused, by source and code.
- ``dashboard_pipeline_samples``: what each receiver process reported every 15 seconds (spool
  size, files and oldest record; events stored per second since its previous sample).
- ``dashboard_scoring_samples``: what each follower reported every 15 seconds (scoring lag over
  the interval, finished runs and events behind its cursor, verdicts per second).
- ``dashboard_telemetry_dropped``: spans exporters reported dropping (``telemetry.dropped``).
- ``dashboard_experiment_verdicts``: each run's latest run-level verdicts with its dataset,
  case and the selections that pick it (``experiment:NAME``, ``AGENT@VERSION``, ``AGENT``), for
  the experiments dashboard.
"""

from __future__ import annotations

from agentdocket.dashboards.declared import detail, family, names, scorer
from agentdocket.store.derived import Derived

TOOL_SCORERS = ("planner.suffix_match", "tools.slot_fill", "tools.procedural")


def _text(owner: str, key: str, column: str = "details") -> str:
    return f"{column}->>{detail(owner, key)}"


def _bool(owner: str, key: str, otherwise: str = "NULL") -> str:
    """1 for true, 0 for false, ``otherwise`` when absent."""
    return f"CASE {_text(owner, key)} WHEN 'true' THEN 1 WHEN 'false' THEN 0 ELSE {otherwise} END"


def _views() -> dict[str, str]:
    sim, ref, grammar, peer = (
        "response.similarity",
        "answer.reference",
        "grammar.groups",
        ("review.peer.*"),
    )
    dims = "agent, agent_version, strategy, model, dataset"
    return {
        "dashboard_runs": """
            SELECT coalesce(r.started_at, r.first_ts) AS time, r.trace_id,
                coalesce(r.agent, '(none)') AS agent,
                coalesce(r.agent_version, '(none)') AS agent_version,
                coalesce(r.strategy, '(none)') AS strategy,
                coalesce(r.models->>'planner', r.models->>'llm',
                         (SELECT min(m.value) FROM jsonb_each_text(r.models) m), '(none)')
                    AS model,
                coalesce(r.dataset, '(none)') AS dataset, r.dataset_version, r.case_id,
                r.status, CASE WHEN r.status = 'error' THEN 1 ELSE 0 END AS is_error,
                CAST(extract(epoch FROM r.ended_at - r.started_at) * 1000 AS double precision)
                    AS latency_ms,
                r.n_steps, r.n_tool_calls, r.n_sql, r.n_llm_calls, r.n_retrievals, r.n_errors,
                r.run_month, r.question, r.answer
            FROM runs r WHERE r.started_at IS NOT NULL
        """,
        "dashboard_verdicts": """
            SELECT r.time, v.ts AS verdict_time, v.trace_id, v.scorer, v.scorer_version,
                v.passed, CASE WHEN v.passed THEN 1.0 WHEN NOT v.passed THEN 0.0 END AS pass,
                v.score, v.label, v.failure_type, v.details, r.agent, r.agent_version,
                r.strategy, r.model, r.dataset, r.case_id
            FROM verdicts_latest v JOIN dashboard_runs r
                ON r.trace_id = v.trace_id AND r.run_month = v.run_month
            WHERE v.subject_span_id IS NULL
        """,
        # For the template variables: a skip scan of the (scorer, scorer_version) index, one
        # probe per pair instead of a pass over every verdict.
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
        "dashboard_tool_use": f"""
            SELECT time, trace_id, scorer, scorer_version, passed, pass, failure_type,
                CAST({_text("planner.suffix_match", "extra_steps")} AS integer) AS extra_steps,
                CAST({_text("tools.slot_fill", "matched_fraction")} AS double precision)
                    AS matched_fraction,
                {dims}
            FROM dashboard_verdicts WHERE scorer IN {names(*TOOL_SCORERS)}
        """,
        "dashboard_similarity": f"""
            SELECT time, trace_id, scorer_version,
                CAST({_text(sim, "cosine")} AS double precision) AS cosine,
                CAST({_text(sim, "rougeL_precision")} AS double precision)
                    AS rouge_l_precision,
                CAST({_text(sim, "rougeL_recall")} AS double precision) AS rouge_l_recall,
                CAST({_text(sim, "rougeL_fmeasure")} AS double precision) AS rouge_l_f,
                {dims}
            FROM dashboard_verdicts WHERE scorer = {scorer(sim)}
        """,
        "dashboard_reference": f"""
            SELECT time, trace_id, scorer_version, label, failure_type,
                CASE label WHEN 'Match' THEN 1 WHEN 'Not Match' THEN 0 END AS matched,
                CASE WHEN {_text(ref, "question_type")} = 'interpretive'
                     THEN CAST({_text(ref, "score")} AS integer) END AS interpretive_score,
                {_text(ref, "question_type")} AS question_type,
                {_text(ref, "model")} AS judge_model,
                {dims}
            FROM dashboard_verdicts WHERE scorer = {scorer(ref)}
        """,
        "dashboard_peer_review": f"""
            SELECT time, trace_id, scorer_version, {_text(peer, "subtask")} AS subtask,
                passed, pass, label, failure_type,
                {_bool(peer, "reviewers_unanimous")} AS reviewers_unanimous,
                {_bool(peer, "meta_reviewers_unanimous")} AS meta_reviewers_unanimous,
                {dims}
            FROM dashboard_verdicts WHERE scorer LIKE {family("review.peer")}
        """,
        "dashboard_peer_decisions": f"""
            SELECT v.time, v.trace_id, v.scorer_version,
                {_text(peer, "subtask", "v.details")} AS subtask,
                d.role, coalesce(m.model, '(unknown)') AS judge_model, d.decision,
                v.agent, v.agent_version, v.strategy, v.model, v.dataset
            FROM dashboard_verdicts v
            CROSS JOIN LATERAL (
                SELECT 'reviewer' AS role, x.decision, x.i
                FROM jsonb_array_elements_text(coalesce(
                    v.details->{detail(peer, "reviewer_decisions")}, '[]'::jsonb
                )) WITH ORDINALITY x(decision, i)
                UNION ALL
                SELECT 'meta_reviewer', x.decision, x.i
                FROM jsonb_array_elements_text(coalesce(
                    v.details->{detail(peer, "meta_reviewer_decisions")}, '[]'::jsonb
                )) WITH ORDINALITY x(decision, i)
            ) d
            LEFT JOIN LATERAL (
                SELECT y.model FROM jsonb_array_elements_text(coalesce(
                    v.details->(CASE d.role
                        WHEN 'reviewer' THEN {detail(peer, "reviewer_models")}
                        ELSE {detail(peer, "meta_reviewer_models")} END),
                    '[]'::jsonb
                )) WITH ORDINALITY y(model, j) WHERE y.j = d.i
            ) m ON true
            WHERE v.scorer LIKE {family("review.peer")}
        """,
        "dashboard_grammar": f"""
            SELECT time, trace_id, scorer_version, {_text(grammar, "group")} AS group_id,
                {_text(grammar, "tag")} AS tag,
                {_bool(grammar, "correct", "0")} AS correct,
                {_bool(grammar, "retrieval_correct", "0")} AS retrieval_correct,
                {_bool(grammar, "refined_correct")} AS refined_correct,
                {_text(grammar, "blame")} AS blame,
                coalesce(CAST({_text(grammar, "group_representative")} AS integer), 0)
                    AS representative,
                CAST({_text(grammar, "group_size")} AS integer) AS group_size,
                {dims}
            FROM dashboard_verdicts WHERE scorer = {scorer(grammar)}
        """,
        "dashboard_dead_letters": """
            SELECT received_at AS time, source, code, resolved FROM dead_letters_state
        """,
        # Each run-level latest verdict of a run with a case, once per selection that picks
        # its run, as `agentdocket compare` names them: experiment:NAME, AGENT@VERSION, AGENT.
        # Rates from the counters of consecutive samples of one process (a restart resets them:
        # no rate across it).
        "dashboard_pipeline_samples": """
            SELECT at AS time, process, spool_bytes, spool_files, spool_oldest_s,
                spans_received, events_stored, events_spooled, events_dead_lettered,
                spans_dropped,
                CASE WHEN events_stored >= lag(events_stored) OVER w
                    AND at > lag(at) OVER w
                THEN (events_stored - lag(events_stored) OVER w)
                    / extract(epoch FROM at - lag(at) OVER w) END AS events_per_s
            FROM pipeline_samples
            WINDOW w AS (PARTITION BY process ORDER BY at)
        """,
        "dashboard_scoring_samples": """
            SELECT at AS time, follower, process, runs_judged, verdicts, errors,
                lag_p50_s, lag_p95_s, lag_max_s, behind_runs, behind_events, deferred,
                CASE WHEN verdicts >= lag(verdicts) OVER w AND at > lag(at) OVER w
                THEN (verdicts - lag(verdicts) OVER w) / extract(epoch FROM at - lag(at) OVER w)
                END AS verdicts_per_s
            FROM scoring_samples
            WINDOW w AS (PARTITION BY follower, process ORDER BY at)
        """,
        "dashboard_telemetry_dropped": """
            SELECT e.ts AS time, e.payload->>'reason' AS reason,
                CAST(e.payload->>'count' AS bigint) AS count
            FROM events e WHERE e.kind = 'telemetry.dropped'
        """,
        "dashboard_experiment_verdicts": """
            SELECT coalesce(r.started_at, r.first_ts) AS time, r.dataset, r.case_id,
                v.trace_id, v.scorer, v.scorer_version,
                CASE WHEN v.passed THEN 1.0 WHEN NOT v.passed THEN 0.0 END AS pass,
                v.score, v.failure_type, s.selection
            FROM verdicts_latest v
            JOIN runs r ON r.trace_id = v.trace_id AND r.run_month = v.run_month
            CROSS JOIN LATERAL (
                SELECT 'experiment:' || (r.attributes->>'experiment')
                WHERE r.attributes ? 'experiment'
                UNION ALL SELECT r.agent || '@' || r.agent_version
                WHERE r.agent_version IS NOT NULL
                UNION ALL SELECT r.agent
            ) s(selection)
            WHERE v.subject_span_id IS NULL AND r.started_at IS NOT NULL
              AND r.case_id IS NOT NULL AND r.dataset IS NOT NULL AND r.agent IS NOT NULL
        """,
    }


def objects() -> list[Derived]:
    return [
        Derived(f"VIEW {name}", f"CREATE VIEW {name} AS {body}", True, "postgresql")
        for name, body in _views().items()
    ]
