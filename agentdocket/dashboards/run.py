"""The run dashboard: one run as it happened, and the lists of runs every other dashboard links
to.

Its views (PostgreSQL) each read one run by its trace id through the events' and the runs'
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

from agentdocket.dashboards.spec import panel
from agentdocket.store.derived import Derived

UID = "agentdocket-run"
# The run dashboard's variables (text boxes): links from the other dashboards fill them.
VARIABLES = {
    "trace_id": "Trace id",
    "case_id": "Case id",
    "failing_scorer": "Scorer",
    "failure_type": "Failure type",
    "tool": "Tool",
}
TITLE = ("agentdocket: run", "One run: its steps as a trace, its verdicts, and its case")
STEP_KINDS = (
    "'plan', 'tool.called', 'sql.executed', 'retrieval', 'llm.called', 'message', 'response', "
    "'step'"
)
# Payload fields too big or too nested for a tag (the steps table previews them).
UNTAGGED = "'input_messages', 'output_messages', 'documents', 'rows', 'columns', 'result', 'steps'"
# The run a panel shows: the trace id given, else the latest run of the case given.
THE_RUN = (
    "trace_id = coalesce(nullif('$trace_id', ''), (SELECT d.trace_id FROM dashboard_runs d "
    "WHERE d.case_id = '$case_id' ORDER BY d.time DESC, d.trace_id DESC LIMIT 1))"
)


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


def _views() -> dict[str, str]:
    earlier = (
        " AND (f.kind = 'run.started' OR (f.seq, f.ts, f.event_id) < (e.seq, e.ts, e.event_id))"
    )
    return {
        "dashboard_failing_runs": """
            SELECT d.time, d.trace_id, d.agent, d.agent_version, d.dataset, d.case_id,
                d.question, v.scorer, v.scorer_version, v.failure_type, v.rationale
            FROM verdicts_latest v
            JOIN dashboard_runs d ON d.trace_id = v.trace_id AND d.run_month = v.run_month
            WHERE v.passed = false AND v.subject_span_id IS NULL
        """,
        "dashboard_run_header": """
            SELECT d.time, d.trace_id, d.agent, d.agent_version, d.strategy,
                CAST(r.models AS text) AS models, d.dataset, d.dataset_version, d.case_id,
                d.status, r.error, d.latency_ms, d.n_steps, d.n_tool_calls, d.n_llm_calls,
                d.n_errors, t.input_tokens, t.output_tokens, d.question, d.answer
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
        """,
        "dashboard_trace_spans": f"""
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
        """,
        "dashboard_run_steps": f"""
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
        """,
        "dashboard_run_verdicts": """
            SELECT v.trace_id, v.ts AS time, v.scorer, v.scorer_version, v.subject_span_id,
                CASE WHEN v.passed THEN 1 WHEN NOT v.passed THEN 0 END AS pass, v.score,
                v.label, v.failure_type, v.rationale, v.judge_trace_id
            FROM verdicts_latest v
        """,
        "dashboard_run_case": """
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
        """,
    }


def objects() -> list[Derived]:
    return [
        Derived(f"VIEW {name}", f"CREATE VIEW {name} AS {body}", True, "postgresql")
        for name, body in _views().items()
    ]


# --- links ------------------------------------------------------------------------------------

RUN_LINK = f"/d/{UID}/?var-trace_id=${{__value.raw}}&${{__url_time_range}}"


def runs_link(variable: str) -> str:
    """A link to the run dashboard's list of failing runs, filtered on ``variable`` by the
    clicked value."""
    return f"/d/{UID}/?var-{variable}=${{__value.raw}}&${{__url_time_range}}"


TO_RUN = {
    "trace_id": RUN_LINK,
    "case_id": runs_link("case_id"),
    "failure_type": runs_link("failure_type"),
    "scorer": runs_link("failing_scorer"),
}
# from a chart: the failing runs of its time range
FAILING = f"/d/{UID}/?${{__url_time_range}}"

# --- panels -----------------------------------------------------------------------------------

panel(
    UID,
    "Run",
    "table",
    "SELECT trace_id, agent, agent_version, strategy, models, dataset, dataset_version, "
    "case_id, question, answer, status, error, latency_ms, n_steps, n_tool_calls, n_llm_calls, "
    f"n_errors, input_tokens, output_tokens FROM dashboard_run_header WHERE {THE_RUN}",
    "trace_id agent agent_version strategy models dataset dataset_version case_id question "
    "answer status error latency_ms n_steps n_tool_calls n_llm_calls n_errors input_tokens "
    "output_tokens",
    links={"case_id": runs_link("case_id")},
    width=24,
    height=4,
)
panel(
    UID,
    "Trace",
    "traces",
    'SELECT "traceID", "spanID", "parentSpanID", "operationName", "serviceName", '
    '"startTime", duration, tags, "statusCode" FROM dashboard_trace_spans '
    f'WHERE {THE_RUN} ORDER BY "startTime", seq',
    "traceID spanID parentSpanID operationName serviceName startTime duration tags statusCode",
    width=24,
    height=12,
    description="Each step a span, under the run; a step's payload as its tags.",
)
panel(
    UID,
    "Steps",
    "table",
    "SELECT seq, time, kind, name, input, output, row_count, error, duration_ms "
    f"FROM dashboard_run_steps WHERE {THE_RUN} ORDER BY seq, time",
    "seq time kind name input output row_count error duration_ms",
    width=24,
    height=10,
)
panel(
    UID,
    "Verdicts",
    "table",
    "SELECT scorer, scorer_version, pass, score, label, failure_type, rationale, "
    f"judge_trace_id FROM dashboard_run_verdicts WHERE {THE_RUN} ORDER BY scorer, "
    "scorer_version",
    "scorer scorer_version pass score label failure_type rationale judge_trace_id",
    width=14,
    height=9,
    links={
        "judge_trace_id": runs_link("trace_id"),
        "failure_type": runs_link("failure_type"),
        "scorer": runs_link("failing_scorer"),
    },
    description="Each scorer version's latest verdict; a judge's trace opens here too.",
)
panel(
    UID,
    "Case beside what happened",
    "table",
    f"SELECT aspect, expected, actual FROM dashboard_run_case WHERE {THE_RUN} ORDER BY ordinal",
    "aspect expected actual",
    width=10,
    height=9,
)
panel(
    UID,
    "Failing runs",
    "table",
    "SELECT time, trace_id, agent, case_id, scorer, scorer_version, failure_type, rationale "
    "FROM dashboard_failing_runs WHERE $__timeFilter(time) "
    "AND ('$failing_scorer' = '' OR scorer = '$failing_scorer') "
    "AND ('$failure_type' = '' OR failure_type = '$failure_type') "
    "AND ('$case_id' = '' OR case_id = '$case_id') "
    "AND ('$tool' = '' OR trace_id IN (SELECT t.trace_id FROM dashboard_run_tools t "
    "WHERE t.tool = '$tool')) ORDER BY time DESC, trace_id, scorer, scorer_version LIMIT 100",
    "time trace_id agent case_id scorer scorer_version failure_type rationale",
    width=24,
    height=10,
    links=TO_RUN,
    description="Runs with a failing verdict, filtered by the scorer, failure type, case or "
    "tool a link brought here with (empty: all).",
)
