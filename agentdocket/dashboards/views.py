"""The row-level ``dashboard_*`` views (PostgreSQL): one row per run, verdict or decision.

Grafana's panels read only ``dashboard_*`` views, never the tables, so the schema under them
can change as long as these keep their names and columns. Every view has a ``time`` column
(when the run started) for Grafana's time filter, and the run's agent, version, strategy, model
and dataset for the template variables (``(none)`` where the run has none, so that a
variable's "All" covers every run).

- ``dashboard_runs``: one row per run (a trace with a recorded start): status, latency, step
  counts, question and answer, and the experiment it belongs to (its ``experiment`` attribute).
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
- ``dashboard_call_costs``: each model call with its cost in US dollars (null: unpriced).
- ``dashboard_cost_hours``: per hour, agent, version, dataset, model, role and judge: calls,
  unpriced calls and dollars (the costs dashboard reads it).
- ``dashboard_labels``: people's labels, each author's latest per run (or step) and rubric.
- ``dashboard_experiment_verdicts``: each run's latest run-level verdicts with its dataset,
  case and the selections that pick it (``experiment:NAME``, ``AGENT@VERSION``, ``AGENT``): row
  by row what the experiments dashboard reads summed per hour (``dashboard_experiment_stats``).
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


# The scorers the views read the details of.
SIM = "response.similarity"
REF = "answer.reference"
GRAMMAR = "grammar.groups"
PEER = "review.peer.*"
DIMS = "agent, agent_version, strategy, model, dataset"


RUNS = """
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
                r.run_month, r.question, r.answer, r.attributes->>'experiment' AS experiment,
                r.attributes->>'conversation_id' AS session_id
            FROM runs r WHERE r.started_at IS NOT NULL
        """


VERDICTS = """
            SELECT r.time, v.ts AS verdict_time, v.trace_id, v.scorer, v.scorer_version,
                v.passed, CASE WHEN v.passed THEN 1.0 WHEN NOT v.passed THEN 0.0 END AS pass,
                v.score, v.label, v.failure_type, v.details, r.agent, r.agent_version,
                r.strategy, r.model, r.dataset, r.case_id
            FROM verdicts_latest v JOIN dashboard_runs r
                ON r.trace_id = v.trace_id AND r.run_month = v.run_month
            WHERE v.subject_span_id IS NULL
        """


# For the template variables: a skip scan of the (scorer, scorer_version) index, one probe
# per pair instead of a pass over every verdict. A loop in a function, not a recursive query:
# Citus runs no recursive query over a distributed table; it sends each probe to every shard
# (each probes its own index) and keeps the least. SECURITY DEFINER: it reads the verdicts with
# its owner's rights, as a view does (and gives only what the view gives).
SCORER_VERSIONS_FUNCTION = """
    CREATE FUNCTION agentdocket_scorer_versions()
    RETURNS TABLE (scorer text, scorer_version text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    DECLARE s text; sv text;
    BEGIN
        SELECT v.scorer, v.scorer_version INTO s, sv FROM verdicts v
        ORDER BY v.scorer, v.scorer_version LIMIT 1;
        WHILE FOUND LOOP
            scorer := s;
            scorer_version := sv;
            RETURN NEXT;
            SELECT v.scorer, v.scorer_version INTO s, sv FROM verdicts v
            WHERE (v.scorer, v.scorer_version) > (s, sv)
            ORDER BY v.scorer, v.scorer_version LIMIT 1;
        END LOOP;
    END $$
"""
SCORER_VERSIONS = """
            SELECT scorer, scorer_version FROM agentdocket_scorer_versions()
        """


RUN_TOOLS = """
            SELECT DISTINCT e.trace_id, e.payload->>'tool' AS tool
            FROM events e WHERE e.kind = 'tool.called'
        """


def _tool_use() -> str:
    """Planner, slot-filling and procedural verdicts, with extra plan steps and the matched
    fraction of expected calls."""
    return f"""
            SELECT time, trace_id, scorer, scorer_version, passed, pass, failure_type,
                CAST({_text("planner.suffix_match", "extra_steps")} AS integer) AS extra_steps,
                CAST({_text("tools.slot_fill", "matched_fraction")} AS double precision)
                    AS matched_fraction,
                {DIMS}
            FROM dashboard_verdicts WHERE scorer IN {names(*TOOL_SCORERS)}
        """


def _similarity() -> str:
    """Response similarity: cosine, ROUGE-L precision, recall and F."""
    return f"""
            SELECT time, trace_id, scorer_version,
                CAST({_text(SIM, "cosine")} AS double precision) AS cosine,
                CAST({_text(SIM, "rougeL_precision")} AS double precision)
                    AS rouge_l_precision,
                CAST({_text(SIM, "rougeL_recall")} AS double precision) AS rouge_l_recall,
                CAST({_text(SIM, "rougeL_fmeasure")} AS double precision) AS rouge_l_f,
                {DIMS}
            FROM dashboard_verdicts WHERE scorer = {scorer(SIM)}
        """


def _reference() -> str:
    """Reference-based judge verdicts: Match / Not Match, 1-5 interpretive scores."""
    return f"""
            SELECT time, trace_id, scorer_version, label, failure_type,
                CASE label WHEN 'Match' THEN 1 WHEN 'Not Match' THEN 0 END AS matched,
                CASE WHEN {_text(REF, "question_type")} = 'interpretive'
                     THEN CAST({_text(REF, "score")} AS integer) END AS interpretive_score,
                {_text(REF, "question_type")} AS question_type,
                {_text(REF, "model")} AS judge_model,
                {DIMS}
            FROM dashboard_verdicts WHERE scorer = {scorer(REF)}
        """


def _peer_review() -> str:
    """Peer review per sub-task: the reviewers' and meta-reviewers' unanimity."""
    return f"""
            SELECT time, trace_id, scorer_version, {_text(PEER, "subtask")} AS subtask,
                passed, pass, label, failure_type,
                {_bool(PEER, "reviewers_unanimous")} AS reviewers_unanimous,
                {_bool(PEER, "meta_reviewers_unanimous")} AS meta_reviewers_unanimous,
                {DIMS}
            FROM dashboard_verdicts WHERE scorer LIKE {family("review.peer")}
        """


def _peer_decisions() -> str:
    """Every reviewer's and meta-reviewer's decision, with its judge model (the model at the
    decision's position in the role's list of models). The two roles are rows of a VALUES
    list, not a UNION of two set-returning functions, which Citus does not run."""
    return f"""
            SELECT v.time, v.trace_id, v.scorer_version,
                {_text(PEER, "subtask", "v.details")} AS subtask,
                d.role, coalesce(d.models->>(CAST(x.i AS integer) - 1), '(unknown)')
                    AS judge_model,
                x.decision, v.agent, v.agent_version, v.strategy, v.model, v.dataset
            FROM dashboard_verdicts v
            CROSS JOIN LATERAL (VALUES
                ('reviewer', v.details->{detail(PEER, "reviewer_decisions")},
                 v.details->{detail(PEER, "reviewer_models")}),
                ('meta_reviewer', v.details->{detail(PEER, "meta_reviewer_decisions")},
                 v.details->{detail(PEER, "meta_reviewer_models")})
            ) d(role, decisions, models)
            CROSS JOIN LATERAL jsonb_array_elements_text(coalesce(d.decisions, '[]'::jsonb))
                WITH ORDINALITY x(decision, i)
            WHERE v.scorer LIKE {family("review.peer")}
        """


def _grammar() -> str:
    """GRAMMAR per run: group, tag, correctness, blame."""
    return f"""
            SELECT time, trace_id, scorer_version, {_text(GRAMMAR, "group")} AS group_id,
                {_text(GRAMMAR, "tag")} AS tag,
                {_bool(GRAMMAR, "correct", "0")} AS correct,
                {_bool(GRAMMAR, "retrieval_correct", "0")} AS retrieval_correct,
                {_bool(GRAMMAR, "refined_correct")} AS refined_correct,
                {_text(GRAMMAR, "blame")} AS blame,
                coalesce(CAST({_text(GRAMMAR, "group_representative")} AS integer), 0)
                    AS representative,
                CAST({_text(GRAMMAR, "group_size")} AS integer) AS group_size,
                {DIMS}
            FROM dashboard_verdicts WHERE scorer = {scorer(GRAMMAR)}
        """


DEAD_LETTERS = """
            SELECT received_at AS time, source, code, resolved FROM dead_letters_state
        """


# Rates from the counters of consecutive samples of one process (a restart resets them: no
# rate across it).
PIPELINE_SAMPLES = """
            SELECT at AS time, process, spool_bytes, spool_files, spool_oldest_s,
                spans_received, events_stored, events_spooled, events_dead_lettered,
                spans_dropped,
                CASE WHEN events_stored >= lag(events_stored) OVER w
                    AND at > lag(at) OVER w
                THEN (events_stored - lag(events_stored) OVER w)
                    / extract(epoch FROM at - lag(at) OVER w) END AS events_per_s
            FROM pipeline_samples
            WINDOW w AS (PARTITION BY process ORDER BY at)
        """


SCORING_SAMPLES = """
            SELECT at AS time, follower, process, runs_judged, verdicts, errors,
                lag_p50_s, lag_p95_s, lag_max_s, behind_runs, behind_events, deferred,
                CASE WHEN verdicts >= lag(verdicts) OVER w AND at > lag(at) OVER w
                THEN (verdicts - lag(verdicts) OVER w) / extract(epoch FROM at - lag(at) OVER w)
                END AS verdicts_per_s
            FROM scoring_samples
            WINDOW w AS (PARTITION BY follower, process ORDER BY at)
        """


TELEMETRY_DROPPED = """
            SELECT e.ts AS time, e.payload->>'reason' AS reason,
                CAST(e.payload->>'count' AS bigint) AS count
            FROM events e WHERE e.kind = 'telemetry.dropped'
        """


# People's labels: each author's latest whole-run or step label per rubric (skips left out),
# from the log's label events alone (the partial index events_labels: no join to the runs,
# so that it reads the labels and nothing else).
LABELS = """
            SELECT DISTINCT ON (e.trace_id, coalesce(e.payload->>'subject_span_id', ''),
                    e.payload->>'rubric', e.payload->>'author')
                e.ts AS time, e.trace_id, e.payload->>'subject_span_id' AS span_id,
                e.payload->>'rubric' AS rubric, e.payload->>'author' AS author,
                e.payload->>'source' AS source, e.payload->>'queue' AS queue,
                e.payload->'value' #>> '{}' AS value
            FROM events e
            WHERE e.kind = 'label' AND e.payload->>'skipped' IS NULL
            ORDER BY e.trace_id, coalesce(e.payload->>'subject_span_id', ''),
                e.payload->>'rubric', e.payload->>'author', e.ts DESC, e.event_id DESC
        """


# Model calls and their costs (call_costs, as `costs refresh` last priced them), with the
# run's dimensions kept in the row; a judge's call (its trace is no run) has the judged run's.
CALL_COSTS = """
            SELECT c.ts AS time, c.trace_id, c.model, coalesce(c.role, '(none)') AS role,
                c.judge, c.cost, c.unpriced, c.input_tokens, c.output_tokens,
                coalesce(c.agent, '(none)') AS agent,
                coalesce(c.agent_version, '(none)') AS agent_version,
                coalesce(c.dataset, '(none)') AS dataset
            FROM call_costs c
        """


# The hourly roll-up of the costs, kept by the transactions that write call_costs.
COST_HOURS = """
            SELECT hour AS time, agent, agent_version, dataset, model, role, judge, calls,
                unpriced, cost, reported, reported_calls
            FROM rollup_costs
        """


# Each run-level latest verdict of a run with a case, once per selection that picks its run,
# as `agentdocket compare` names them: experiment:NAME, AGENT@VERSION, AGENT. (The selections
# are rows of a VALUES list, each with whether it applies: Citus does not run a UNION of
# subqueries without a FROM.)
EXPERIMENT_VERDICTS = """
            SELECT coalesce(r.started_at, r.first_ts) AS time, r.dataset, r.case_id,
                v.trace_id, v.scorer, v.scorer_version,
                CASE WHEN r.status = 'error' THEN NULL WHEN v.passed THEN 1.0
                    WHEN NOT v.passed THEN 0.0 END AS pass,
                CASE WHEN r.status = 'error' THEN NULL ELSE v.score END AS score,
                v.failure_type, s.selection,
                CASE WHEN r.status = 'error' OR (v.passed IS NULL AND v.score IS NULL
                    AND v.failure_type IS NOT NULL) THEN 1 ELSE 0 END AS missing
            FROM verdicts_latest v
            JOIN runs r ON r.trace_id = v.trace_id AND r.run_month = v.run_month
            CROSS JOIN LATERAL (VALUES
                (r.attributes ? 'experiment', 'experiment:' || (r.attributes->>'experiment')),
                (r.agent_version IS NOT NULL, r.agent || '@' || r.agent_version),
                (true, r.agent)
            ) s(applies, selection)
            WHERE s.applies AND v.subject_span_id IS NULL AND r.started_at IS NOT NULL
              AND r.case_id IS NOT NULL AND r.dataset IS NOT NULL AND r.agent IS NOT NULL
        """


def _views() -> dict[str, str]:
    return {
        "dashboard_runs": RUNS,
        "dashboard_verdicts": VERDICTS,
        "dashboard_scorer_versions": SCORER_VERSIONS,
        "dashboard_run_tools": RUN_TOOLS,
        "dashboard_tool_use": _tool_use(),
        "dashboard_similarity": _similarity(),
        "dashboard_reference": _reference(),
        "dashboard_peer_review": _peer_review(),
        "dashboard_peer_decisions": _peer_decisions(),
        "dashboard_grammar": _grammar(),
        "dashboard_dead_letters": DEAD_LETTERS,
        "dashboard_pipeline_samples": PIPELINE_SAMPLES,
        "dashboard_scoring_samples": SCORING_SAMPLES,
        "dashboard_telemetry_dropped": TELEMETRY_DROPPED,
        "dashboard_experiment_verdicts": EXPERIMENT_VERDICTS,
        "dashboard_labels": LABELS,
        "dashboard_call_costs": CALL_COSTS,
        "dashboard_cost_hours": COST_HOURS,
    }


def objects() -> list[Derived]:
    """The scorer versions' function, then the views."""
    function = Derived(
        "FUNCTION agentdocket_scorer_versions()", SCORER_VERSIONS_FUNCTION, False, "postgresql"
    )
    return [function] + [
        Derived(f"VIEW {name}", f"CREATE VIEW {name} AS {body}", True, "postgresql")
        for name, body in _views().items()
    ]
