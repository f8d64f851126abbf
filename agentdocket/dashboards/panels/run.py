"""The run dashboard: one run as it happened (its header, its steps as a trace and as a table,
its verdicts, its case beside what happened), and the list of failing runs every other
dashboard links to. Its views are in :mod:`agentdocket.dashboards.run`."""

from __future__ import annotations

from agentdocket.dashboards import macros
from agentdocket.dashboards.spec import PanelSpec, panel

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
# The run a panel shows: the trace id given, else the latest run of the case given (a text box
# left empty gives '').
TRACE_ID, CASE_ID = macros.variable("trace_id"), macros.variable("case_id")
THE_RUN = (
    f"trace_id = coalesce(nullif({TRACE_ID}, ''), (SELECT d.trace_id FROM dashboard_runs d "
    f"WHERE d.case_id = {CASE_ID} ORDER BY d.time DESC, d.trace_id DESC LIMIT 1))"
)


def _given(name: str, condition: str) -> str:
    """``condition`` on the value of text box ``name`` (``{}`` in it), true while the box is
    empty."""
    value = macros.variable(name)
    return f"({value} = '' OR {condition.format(value)})"


# The failing runs listed: of the scorer, failure type, case and tool given, each if given.
FILTERS = " AND ".join(
    (
        _given("failing_scorer", "scorer = {}"),
        _given("failure_type", "failure_type = {}"),
        _given("case_id", "case_id = {}"),
        _given(
            "tool", "trace_id IN (SELECT t.trace_id FROM dashboard_run_tools t WHERE t.tool = {})"
        ),
    )
)

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

# the sessions dashboard, showing a run's session (its uid, as the sessions panels declare it)
SESSION_LINK = "/d/agentdocket-sessions/?var-session_id=${__value.raw}&${__url_time_range}"

# --- panels -----------------------------------------------------------------------------------

PANELS: tuple[PanelSpec, ...] = (
    panel(
        UID,
        "Run",
        "table",
        "SELECT trace_id, agent, agent_version, strategy, models, dataset, dataset_version, "
        "case_id, question, answer, status, error, latency_ms, n_steps, n_tool_calls, "
        "n_llm_calls, n_errors, input_tokens, output_tokens, session_id "
        f"FROM dashboard_run_header WHERE {THE_RUN}",
        "trace_id agent agent_version strategy models dataset dataset_version case_id question "
        "answer status error latency_ms n_steps n_tool_calls n_llm_calls n_errors input_tokens "
        "output_tokens session_id",
        links={"case_id": runs_link("case_id"), "session_id": SESSION_LINK},
        width=24,
        height=4,
    ),
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
    ),
    panel(
        UID,
        "Steps",
        "table",
        "SELECT seq, time, kind, name, input, output, row_count, error, duration_ms "
        f"FROM dashboard_run_steps WHERE {THE_RUN} ORDER BY seq, time",
        "seq time kind name input output row_count error duration_ms",
        width=24,
        height=10,
    ),
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
    ),
    panel(
        UID,
        "Case beside what happened",
        "table",
        f"SELECT aspect, expected, actual FROM dashboard_run_case WHERE {THE_RUN} ORDER BY ordinal",
        "aspect expected actual",
        width=10,
        height=9,
    ),
    panel(
        UID,
        "Failing runs",
        "table",
        "SELECT time, trace_id, agent, case_id, scorer, scorer_version, failure_type, rationale "
        f"FROM dashboard_failing_runs WHERE $__timeFilter(time) AND {FILTERS} "
        "ORDER BY time DESC, trace_id, scorer, scorer_version LIMIT 100",
        "time trace_id agent case_id scorer scorer_version failure_type rationale",
        width=24,
        height=10,
        links=TO_RUN,
        description="Runs with a failing verdict, filtered by the scorer, failure type, case or "
        "tool a link brought here with (empty: all).",
    ),
)
