"""The run dashboard's views: one run as it happened, and the lists of runs every other
dashboard links to (its panels are in :mod:`agentdocket.dashboards.panels.run`).

The views (PostgreSQL) each read one run by its trace id through the events' and the runs'
primary keys, so they cost the same at any size of the log:

- ``dashboard_run_header``: the run's agent, version, strategy, models, dataset and case,
  question and answer, status, latency, step counts and tokens;
- ``dashboard_trace_spans``: the run as Grafana's traces visualisation reads a trace: the run
  itself as the root span and one span per step (``traceID``, ``spanID``, ``parentSpanID``,
  ``operationName``, ``serviceName``, ``startTime`` in epoch milliseconds, ``duration`` in
  milliseconds, ``tags`` as key/value pairs of the step's payload, ``statusCode`` 2 for an
  error, else 1). A step's parent is the first step of its own span (a model call's messages
  hang under the call), else the first step of its parent span, else the root: a tree;
- ``dashboard_run_steps``: the steps as a table: kind, tool or model, input (arguments, query,
  prompt), output preview (result, rows, reply), SQL row count, error, duration;
- ``dashboard_run_verdicts``: the run's latest verdict per scorer version, with rationale and
  the judge's own trace;
- ``dashboard_run_case``: the case beside what happened: plan, calls and answer, expected and
  actual;
- ``dashboard_failing_runs``: every run's latest failing run-level verdicts (time, agent, case,
  question, scorer, failure type, rationale), which each dashboard's "failing runs" table reads.
"""

from __future__ import annotations

from agentdocket.store.derived import Derived

STEP_KINDS = (
    "'plan', 'tool.called', 'sql.executed', 'retrieval', 'llm.called', 'message', 'response', "
    "'step'"
)
# Payload fields too big or too nested for a tag (the steps table previews them).
UNTAGGED = "'input_messages', 'output_messages', 'documents', 'rows', 'columns', 'result', 'steps'"


def _sid(alias: str) -> str:
    """A step's span id in the traces frame: the first 16 hex digits of its event id."""
    return f"substr(replace(CAST({alias}.event_id AS text), '-', ''), 1, 16)"


def _first_of_span(span: str, alias: str, before: str = "") -> str:
    """The span id (in the frame) of the first step of ``span`` in the same trace."""
    return (
        f"(SELECT {_sid(alias)} FROM events {alias} WHERE {alias}.trace_id = e.trace_id "
        f"AND {alias}.run_month = e.run_month "
        f"AND {alias}.span_id = {span} AND {alias}.kind IN ('run.started', {STEP_KINDS}){before} "
        f"ORDER BY ({alias}.kind = 'run.started') DESC, {alias}.seq, {alias}.ts, "
        f"{alias}.event_id LIMIT 1)"
    )


FAILING_RUNS = """
            SELECT d.time, d.trace_id, d.agent, d.agent_version, d.dataset, d.case_id,
                d.question, v.scorer, v.scorer_version, v.failure_type, v.rationale,
                d.session_id
            FROM verdicts_latest v
            JOIN dashboard_runs d ON d.trace_id = v.trace_id AND d.run_month = v.run_month
            WHERE v.passed = false AND v.subject_span_id IS NULL
        """


RUN_HEADER = """
            SELECT d.time, d.trace_id, d.agent, d.agent_version, d.strategy,
                CAST(r.models AS text) AS models, d.dataset, d.dataset_version, d.case_id,
                d.status, r.error, d.latency_ms, d.n_steps, d.n_tool_calls, d.n_llm_calls,
                d.n_errors, t.input_tokens, t.output_tokens, d.question, d.answer,
                r.attributes->>'conversation_id' AS session_id
            FROM dashboard_runs d
            JOIN runs r ON r.trace_id = d.trace_id AND r.run_month = d.run_month
            CROSS JOIN LATERAL (
                SELECT CAST(sum(CAST(e.payload->>'input_tokens' AS bigint)) AS bigint)
                        AS input_tokens,
                    CAST(sum(CAST(e.payload->>'output_tokens' AS bigint)) AS bigint)
                        AS output_tokens
                FROM events e WHERE e.trace_id = d.trace_id AND e.run_month = d.run_month
                    AND e.kind = 'llm.called'
            ) t
        """


def _trace_spans() -> str:
    """The run as Grafana's traces visualisation reads a trace: a tree of spans."""
    earlier = (
        " AND (f.kind = 'run.started' OR (f.seq, f.ts, f.event_id) < (e.seq, e.ts, e.event_id))"
    )
    return f"""
            SELECT e.trace_id AS "traceID", {_sid("e")} AS "spanID",
                CASE WHEN e.kind = 'run.started' THEN NULL ELSE coalesce(
                    nullif({_first_of_span("e.span_id", "f", earlier)}, {_sid("e")}),
                    CASE WHEN e.parent_span_id <> e.span_id THEN
                        {_first_of_span("e.parent_span_id", "p")} END,
                    {_first_of_span("r.root", "q")}
                ) END AS "parentSpanID",
                CASE e.kind WHEN 'run.started' THEN coalesce(e.payload->>'agent', 'run')
                    WHEN 'tool.called' THEN 'tool ' || coalesce(e.payload->>'tool', '?')
                    WHEN 'llm.called' THEN 'llm ' || coalesce(e.payload->>'model', '?')
                    WHEN 'step' THEN coalesce(e.payload->>'name', 'step')
                    ELSE e.kind END AS "operationName",
                coalesce(r.agent, 'agent') AS "serviceName",
                CAST(extract(epoch FROM e.ts) * 1000 AS double precision) AS "startTime",
                CAST(coalesce(
                    CASE WHEN e.kind = 'run.started'
                        THEN extract(epoch FROM r.ended_at - r.started_at) * 1000 END,
                    CAST(coalesce(ret.payload->>'duration_ms', e.payload->>'duration_ms')
                        AS double precision),
                    0) AS double precision) AS duration,
                (SELECT coalesce(jsonb_agg(jsonb_build_object('key', kv.key,
                        'value', left(kv.value, 200)) ORDER BY kv.key), '[]'::jsonb)
                    FROM jsonb_each_text((e.payload || coalesce(ret.payload, '{{}}'::jsonb))
                        - ARRAY[{UNTAGGED}]) kv
                    WHERE kv.value IS NOT NULL) AS tags,
                CASE WHEN coalesce(ret.payload->>'error', e.payload->>'error') IS NOT NULL
                    OR e.payload->>'status' = 'error'
                    OR (e.kind = 'run.started' AND r.status = 'error') THEN 2 ELSE 1 END
                    AS "statusCode",
                e.trace_id, e.seq, e.kind
            FROM events e
            JOIN (SELECT trace_id, run_month, agent, status, started_at, ended_at,
                    (SELECT s.span_id FROM events s WHERE s.trace_id = runs.trace_id
                        AND s.run_month = runs.run_month
                        AND s.kind = 'run.started' ORDER BY s.seq, s.ts LIMIT 1) AS root
                  FROM runs) r ON r.trace_id = e.trace_id AND r.run_month = e.run_month
            LEFT JOIN LATERAL (
                SELECT x.payload FROM events x
                WHERE e.kind = 'tool.called' AND x.trace_id = e.trace_id
                  AND x.run_month = e.run_month
                  AND x.kind = 'tool.returned' AND x.payload->>'call_id' = e.payload->>'call_id'
                ORDER BY x.seq LIMIT 1) ret ON true
            WHERE e.kind IN ('run.started', {STEP_KINDS})
        """


def _run_steps() -> str:
    """The run's steps as a table: input, output, error and duration."""
    return f"""
            SELECT e.trace_id, e.seq, e.ts AS time,
                CASE e.kind WHEN 'tool.called' THEN 'tool' WHEN 'sql.executed' THEN 'sql'
                    WHEN 'llm.called' THEN 'llm' ELSE e.kind END AS kind,
                coalesce(e.payload->>'tool', e.payload->>'model', e.payload->>'name',
                    e.payload->>'role', e.payload->>'database') AS name,
                left(CASE e.kind
                    WHEN 'tool.called' THEN CAST(e.payload->'arguments' AS text)
                    WHEN 'sql.executed' THEN e.payload->>'query'
                    WHEN 'retrieval' THEN e.payload->>'query'
                    WHEN 'llm.called' THEN CAST(e.payload->'input_messages' AS text)
                    WHEN 'message' THEN e.payload->>'content'
                    WHEN 'plan' THEN coalesce(e.payload->>'text', CAST(e.payload->'steps' AS text))
                    ELSE NULL END, 500) AS input,
                left(CASE e.kind
                    WHEN 'tool.called' THEN CAST(ret.payload->'result' AS text)
                    WHEN 'sql.executed' THEN CAST(e.payload->'rows' AS text)
                    WHEN 'retrieval' THEN CAST(e.payload->'documents' AS text)
                    WHEN 'llm.called' THEN CAST(e.payload->'output_messages' AS text)
                    WHEN 'response' THEN e.payload->>'text'
                    ELSE NULL END, 500) AS output,
                CAST(e.payload->>'row_count' AS bigint) AS row_count,
                coalesce(ret.payload->>'error', e.payload->>'error') AS error,
                CAST(coalesce(ret.payload->>'duration_ms', e.payload->>'duration_ms')
                    AS double precision) AS duration_ms
            FROM events e
            LEFT JOIN LATERAL (
                SELECT x.payload FROM events x
                WHERE e.kind = 'tool.called' AND x.trace_id = e.trace_id
                  AND x.run_month = e.run_month
                  AND x.kind = 'tool.returned' AND x.payload->>'call_id' = e.payload->>'call_id'
                ORDER BY x.seq LIMIT 1) ret ON true
            WHERE e.kind IN ({STEP_KINDS})
        """


RUN_VERDICTS = """
            SELECT v.trace_id, v.ts AS time, v.scorer, v.scorer_version, v.subject_span_id,
                CASE WHEN v.passed THEN 1 WHEN NOT v.passed THEN 0 END AS pass, v.score,
                v.label, v.failure_type, v.rationale, v.judge_trace_id
            FROM verdicts_latest v
        """


RUN_CASE = """
            SELECT r.trace_id, a.n AS ordinal, a.aspect, a.expected, a.actual
            FROM runs r
            JOIN cases c ON c.dataset = r.dataset AND c.case_id = r.case_id
                AND c.dataset_version = coalesce(r.dataset_version, (
                    SELECT s.version FROM datasets s WHERE s.name = r.dataset
                    ORDER BY s.created_at DESC, s.version DESC LIMIT 1))
            CROSS JOIN LATERAL (VALUES
                (1, 'question', c.data->>'question', r.question),
                (2, 'plan', CAST(c.data->'expected_plan' AS text), (
                    SELECT CAST(e.payload->'steps' AS text) FROM events e
                    WHERE e.trace_id = r.trace_id AND e.run_month = r.run_month AND e.kind = 'plan'
                    ORDER BY e.seq LIMIT 1)),
                (3, 'calls', CAST(c.data->'expected_calls' AS text), (
                    SELECT string_agg((e.payload->>'tool') || ' '
                        || CAST(e.payload->'arguments' AS text), '; ' ORDER BY e.seq)
                    FROM events e WHERE e.trace_id = r.trace_id AND e.run_month = r.run_month
                        AND e.kind = 'tool.called')),
                (4, 'answer', coalesce(c.data->>'reference_answer', c.data->>'stub_response'),
                    r.answer)
            ) AS a(n, aspect, expected, actual)
        """


def _views() -> dict[str, str]:
    return {
        "dashboard_failing_runs": FAILING_RUNS,
        "dashboard_run_header": RUN_HEADER,
        "dashboard_trace_spans": _trace_spans(),
        "dashboard_run_steps": _run_steps(),
        "dashboard_run_verdicts": RUN_VERDICTS,
        "dashboard_run_case": RUN_CASE,
    }


def objects() -> list[Derived]:
    return [
        Derived(f"VIEW {name}", f"CREATE VIEW {name} AS {body}", True, "postgresql")
        for name, body in _views().items()
    ]
