"""Dashboard benchmark: every panel's query (and every template variable's) at scale.

    python bench/dashboards.py [--runs 1000000] [--rounds 3] [--days 30] [--range-days 7]
                               [--keep NAME]

On a fresh PostgreSQL database at the current schema, it synthesises ``--runs`` runs spread
over ``--days`` days, with 10 events each (started, plan, 3 tool calls with their returns,
response, finished: 10M events for 1M runs) and their verdicts: planner, slot filling,
procedural and similarity on every run, a second planner version on half of them, reference
judgements on 30%, peer review (3 sub-tasks) on 10%, GRAMMAR on one dataset's 10%; the costs of
two model calls a run (``call_costs``) and two annotators' labels on 1% of the runs. The rows are
written with set-based SQL straight into the tables (the store's append path is measured by
bench/ingest.py); the projections are written consistently with the events. Then each panel's
SQL, expanded as Grafana expands it for the default range (the last ``--range-days`` days) with
every variable at "All", is timed: the median of ``--rounds``. Target: every panel < 200 ms;
the run dashboard's panels, which read the newest failing run, < 50 ms (its list of failing
runs, 200 ms).

The synthesis writes past the store, which marks the hours it changes stale, so it marks every
hour stale itself, and a full refresh of the rollups is timed first. Then the panels, three
times: on fresh rollups; with the newest hour's runs stale, as while agents record (read live);
and with its verdicts stale too, as after scoring outside the runner, before a refresh. The
panels run as Grafana runs them, connected as the role ``agentdocket grafana-role`` creates.

Each figure is printed beside the previous run's at the same ``--runs`` (kept in
bench/.results/), and the summary line names every panel over its target in any of the three
states. ``--keep NAME`` synthesises into database NAME once and keeps it: later runs migrate
it to the current schema (as ``agentdocket migrate``) and time the panels again, minutes
instead of twenty.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql as pgsql

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentdocket import dashboards  # noqa: E402
from agentdocket.dashboards import panels  # noqa: E402
from agentdocket.dashboards.macros import expand  # noqa: E402
from agentdocket.dashboards.panels import run  # noqa: E402
from agentdocket.store import open_store  # noqa: E402
from agentdocket.store.config import parse_url, psycopg_conninfo  # noqa: E402
from agentdocket.store.dashboard_role import (  # noqa: E402
    drop_dashboard_role,
    grant_dashboard_role,
)
from agentdocket.store.migrate import upgrade  # noqa: E402
from agentdocket.store.months import month_of  # noqa: E402
from bench.common import fresh_database, postgres_url  # noqa: E402

TARGET_MS = 200.0
RUN_TARGET_MS = 50.0  # the run dashboard reads one run
ROLE = "agentdocket_bench_grafana"


KINDS = (
    "ARRAY['run.started','plan','tool.called','tool.returned','tool.called','tool.returned',"
    "'tool.called','tool.returned','response','run.finished']"
)

SYNTHESIS = [
    # Runs: 5 agents x 3 versions x 3 strategies x 4 models x 10 datasets, 5% errors.
    """
    INSERT INTO runs (trace_id, agent, agent_version, strategy, models, question, dataset,
        dataset_version, case_id, attributes, status, error, started_at, ended_at, first_ts,
        last_ts, n_events, n_steps, n_errors, n_plans, n_tool_calls, n_sql, n_retrievals,
        n_llm_calls, n_messages, n_responses, n_other_steps, run_month)
    SELECT md5('run' || i), 'agent-' || (i % 5), 'v' || (i % 3),
        (ARRAY['sequential', 'iterative', 'no-interaction'])[1 + i % 3],
        jsonb_build_object('planner', 'model-' || (i % 4)), 'question ' || (i % 1000),
        'dataset-' || (i % 10), '1', 'case-' || (i % 1000), '{}'::jsonb,
        CASE WHEN i % 20 = 0 THEN 'error' ELSE 'ok' END,
        CASE WHEN i % 20 = 0 THEN 'boom' END,
        t, t + make_interval(secs => (200 + (i * 7919) % 9000) / 1000.0), t,
        t + make_interval(secs => (200 + (i * 7919) % 9000) / 1000.0),
        10, 8, CASE WHEN i % 20 = 0 THEN 1 ELSE 0 END, 1, 3, 0, 0, 0, 0, 1, 0,
        agentdocket_month(t)
    FROM (SELECT i, {END}::timestamptz - make_interval(secs => (i * 2654435761::bigint)
                 % ({DAYS} * 86400)) AS t
          FROM generate_series(1::bigint, {RUNS}) i) s
    """,
    # Events: 10 per run.
    f"""
    INSERT INTO events (event_id, trace_id, span_id, parent_span_id, seq, ts, kind,
        schema_version, payload, run_month)
    SELECT md5(r.trace_id || '/' || k)::uuid, r.trace_id, substr(md5(r.trace_id || k), 1, 16),
        NULL, k, r.started_at + make_interval(secs => k / 10.0), ({KINDS})[k + 1], 1,
        CASE WHEN k = 0 THEN jsonb_build_object('agent', r.agent, 'question', r.question,
                                                'dataset', r.dataset, 'case_id', r.case_id)
             WHEN k = 1 THEN jsonb_build_object('steps', jsonb_build_array(
                 jsonb_build_object('tool', 'tool-' || (abs(hashtext(r.trace_id)::bigint) % 8))))
             WHEN k IN (2, 4, 6) THEN jsonb_build_object('call_id', 'c' || k,
                 'tool', 'tool-' || ((abs(hashtext(r.trace_id)::bigint) + k) % 8),
                 'arguments', jsonb_build_object('query', 'SELECT ' || k))
             WHEN k IN (3, 5, 7) THEN jsonb_build_object('call_id', 'c' || (k - 1),
                 'result', jsonb_build_array(jsonb_build_array(k)), 'duration_ms', k * 1.5)
             WHEN k = 8 THEN jsonb_build_object('text', 'The answer is ' || k)
             ELSE jsonb_build_object('status', r.status) END,
        r.run_month
    FROM runs r CROSS JOIN generate_series(0, 9) k
    """,
    # Each trace's month, as the appender records it.
    "INSERT INTO trace_months (trace_id, run_month) SELECT trace_id, run_month FROM runs",
    # Rule-based verdicts on every run, and planner 1.1 on half of them.
    """
    INSERT INTO verdicts (verdict_id, trace_id, subject_span_id, scorer, scorer_version,
        input_hash, passed, score, label, failure_type, rationale, details, judge_trace_id, ts,
        run_month)
    SELECT md5(r.trace_id || s.scorer || s.version), r.trace_id, NULL, s.scorer, s.version,
        md5(r.trace_id), p, CASE WHEN p THEN 1.0 ELSE 0.0 END, NULL,
        CASE WHEN NOT p THEN s.failure END, NULL,
        CASE WHEN s.scorer = 'planner.suffix_match' THEN jsonb_build_object('extra_steps', h % 3)
            WHEN s.scorer = 'tools.slot_fill'
            THEN jsonb_build_object('matched_fraction', (h % 4) / 3.0)
            ELSE '{}'::jsonb END,
        NULL, r.ended_at + interval '1 hour', r.run_month
    FROM (SELECT r.*, abs(hashtext(r.trace_id)::bigint) AS h FROM runs r) r
    CROSS JOIN (VALUES ('planner.suffix_match', '1', 'planner:mismatch'),
                       ('tools.slot_fill', '2', 'slot_fill:wrong_argument'),
                       ('tools.procedural', '1', 'procedural:failed'),
                       ('planner.suffix_match', '1.1', 'planner:extra_steps')) s(scorer, version,
                                                                                failure)
    CROSS JOIN LATERAL (SELECT (r.h + length(s.scorer) * 7 + length(s.version) * 3) % 10 < 7 AS p) v
    WHERE s.version <> '1.1' OR r.h % 2 = 0
    """,
    # Response similarity on every run.
    """
    INSERT INTO verdicts (verdict_id, trace_id, subject_span_id, scorer, scorer_version,
        input_hash, passed, score, label, failure_type, rationale, details, judge_trace_id, ts,
        run_month)
    SELECT md5(r.trace_id || 'similarity'), r.trace_id, NULL, 'response.similarity', '1',
        md5(r.trace_id), NULL, c, NULL, NULL, NULL,
        jsonb_build_object('cosine', c, 'rougeL_precision', c * 0.9, 'rougeL_recall', c * 0.8,
                           'rougeL_fmeasure', c * 0.85),
        NULL, r.ended_at + interval '1 hour', r.run_month
    FROM (SELECT r.*, (abs(hashtext(r.trace_id)::bigint) % 1000) / 1000.0 AS c FROM runs r) r
    """,
    # Reference judgements on 30%: conclusive (Match / Not Match) and interpretive (1-5).
    """
    INSERT INTO verdicts (verdict_id, trace_id, subject_span_id, scorer, scorer_version,
        input_hash, passed, score, label, failure_type, rationale, details, judge_trace_id, ts,
        run_month)
    SELECT md5(r.trace_id || 'reference'), r.trace_id, NULL, 'answer.reference', '1',
        md5(r.trace_id), CASE WHEN conclusive THEN h % 3 <> 0 END,
        CASE WHEN conclusive THEN NULL ELSE 1 + h % 5 END,
        CASE WHEN conclusive THEN CASE WHEN h % 3 <> 0 THEN 'Match' ELSE 'Not Match' END END,
        NULL, NULL,
        jsonb_build_object('question_type',
                           CASE WHEN conclusive THEN 'conclusive' ELSE 'interpretive' END,
                           'model', 'judge-' || (h % 2), 'score', 1 + h % 5),
        NULL, r.ended_at + interval '2 hours', r.run_month
    FROM (SELECT r.*, abs(hashtext(r.trace_id)::bigint) AS h,
                 abs(hashtext(r.trace_id)::bigint) % 2 = 0 AS conclusive FROM runs r) r
    WHERE h % 10 < 3
    """,
    # Peer review on 10%, three sub-tasks, three reviewers and three meta-reviewers each.
    """
    INSERT INTO verdicts (verdict_id, trace_id, subject_span_id, scorer, scorer_version,
        input_hash, passed, score, label, failure_type, rationale, details, judge_trace_id, ts,
        run_month)
    SELECT md5(r.trace_id || t.subtask), r.trace_id, NULL, 'review.peer.' || t.subtask, '1',
        md5(r.trace_id), perfect, NULL, CASE WHEN perfect THEN 'Perfect' ELSE 'Imperfect' END,
        NULL, NULL,
        jsonb_build_object('subtask', t.subtask,
            'reviewer_decisions', jsonb_build_array('Perfect',
                CASE WHEN perfect THEN 'Perfect' ELSE 'Imperfect' END, 'Perfect'),
            'meta_reviewer_decisions', jsonb_build_array(
                CASE WHEN perfect THEN 'Perfect' ELSE 'Imperfect' END,
                CASE WHEN perfect THEN 'Perfect' ELSE 'Imperfect' END, 'Imperfect'),
            'reviewer_models', jsonb_build_array('judge-a', 'judge-b', 'judge-a'),
            'meta_reviewer_models', jsonb_build_array('judge-b', 'judge-a', 'judge-b'),
            'reviewers_unanimous', perfect, 'meta_reviewers_unanimous', false),
        NULL, r.ended_at + interval '3 hours', r.run_month
    FROM (SELECT r.*, abs(hashtext(r.trace_id)::bigint) AS h FROM runs r) r
    CROSS JOIN (VALUES ('interaction_planning'), ('tool_employment'),
                       ('information_synthesis')) t(subtask)
    CROSS JOIN LATERAL (SELECT (r.h + length(t.subtask)) % 3 <> 0 AS perfect) p
    WHERE r.h % 10 = 3
    """,
    # GRAMMAR on dataset-9's runs: groups of 5, tags, blames.
    """
    INSERT INTO verdicts (verdict_id, trace_id, subject_span_id, scorer, scorer_version,
        input_hash, passed, score, label, failure_type, rationale, details, judge_trace_id, ts,
        run_month)
    SELECT md5(r.trace_id || 'grammar'), r.trace_id, NULL, 'grammar.groups', '1',
        md5(r.trace_id), correct, NULL, tag, NULL, NULL,
        jsonb_build_object('group', 'g' || g, 'tag', tag, 'correct', correct,
                           'retrieval_correct', correct OR h % 2 = 0,
                           'refined_correct', CASE WHEN tag <> 'Gap' THEN correct END,
                           'blame', CASE WHEN tag = 'Non-robust' AND NOT correct
                                         THEN CASE WHEN h % 2 = 0 THEN 'retrieval'
                                                   ELSE 'language_model' END END,
                           'group_representative', CASE WHEN n = 1 THEN 1 END,
                           'group_size', 5),
        NULL, r.ended_at + interval '4 hours', r.run_month
    FROM (SELECT r.*, abs(hashtext(r.trace_id)::bigint) AS h,
                 row_number() OVER (ORDER BY r.trace_id) AS rn FROM runs r
          WHERE r.dataset = 'dataset-9') r
    CROSS JOIN LATERAL (SELECT (r.rn - 1) / 5 AS g, 1 + (r.rn - 1) % 5 AS n) gg
    CROSS JOIN LATERAL (SELECT CASE g % 3 WHEN 0 THEN 'Gap' WHEN 1 THEN 'Robust'
                                         ELSE 'Non-robust' END AS tag) t
    CROSS JOIN LATERAL (SELECT CASE tag WHEN 'Gap' THEN false WHEN 'Robust' THEN true
                                       ELSE n % 2 = 0 END AS correct) c
    """,
    # What two model calls a run cost, as `costs refresh` keeps them in call_costs (no
    # llm.called events are written for them: the costs dashboard reads call_costs only);
    # one run in 33 on a model no price covers.
    """
    INSERT INTO call_costs (event_id, trace_id, ts, model, provider, role, judge, input_tokens,
        output_tokens, cache_read_tokens, cache_creation_tokens, cost, priced_by, rate,
        unpriced, agent, agent_version, dataset, case_id)
    SELECT md5(r.trace_id || '/llm' || k), r.trace_id, r.started_at + make_interval(secs => k),
        m.model, 'openai', (ARRAY['planner', 'responder'])[k + 1], false, m.tin, m.tout, 0, 0,
        CASE WHEN r.h % 33 <> 0 THEN (m.tin * 2.5 + m.tout * 10) / 1e6 END,
        'genai-prices 0.2.3', CASE WHEN r.h % 33 <> 0 THEN 'genai-prices 0.2.3: openai/gpt-4o' END,
        CASE WHEN r.h % 33 = 0 THEN 'no price for model ''private'' (provider openai)' END,
        r.agent, r.agent_version, r.dataset, r.case_id
    FROM (SELECT r.*, abs(hashtext(r.trace_id)::bigint) AS h FROM runs r) r
    CROSS JOIN generate_series(0, 1) k
    CROSS JOIN LATERAL (SELECT 500 + (r.h + k * 7) % 3000 AS tin, 50 + (r.h + k) % 400 AS tout,
                               CASE WHEN r.h % 33 = 0 THEN 'private' ELSE 'gpt-4o' END AS model) m
    """,
    # ... and their hourly roll-up, as the same transaction keeps it.
    """
    INSERT INTO rollup_costs (hour, agent, agent_version, dataset, model, role, judge, calls,
        unpriced, cost)
    SELECT agentdocket_hour(ts), coalesce(agent, '(none)'), coalesce(agent_version, '(none)'),
        coalesce(dataset, '(none)'), model, coalesce(role, '(none)'), judge, count(*),
        count(*) FILTER (WHERE cost IS NULL), coalesce(sum(cost), 0)
    FROM call_costs GROUP BY 1, 2, 3, 4, 5, 6, 7
    """,
    # People's labels: two annotators' thumbs on one run in a hundred, a day after it ran.
    """
    INSERT INTO events (event_id, trace_id, span_id, parent_span_id, seq, ts, kind,
        schema_version, payload, run_month)
    SELECT md5(r.trace_id || '/label/' || x.a)::uuid, r.trace_id,
        substr(md5(r.trace_id || 'label' || x.a), 1, 16), NULL, 2147483646,
        r.ended_at + interval '1 day', 'label', 1,
        jsonb_build_object('label_id', r.trace_id || x.a, 'subject_trace_id', r.trace_id,
                           'rubric', 'thumbs', 'author', x.a, 'source', 'queue', 'queue', 'q',
                           'value', (r.h + length(x.a)) % 5 <> 0),
        r.run_month
    FROM (SELECT r.*, abs(hashtext(r.trace_id)::bigint) AS h FROM runs r) r
    CROSS JOIN (VALUES ('ana'), ('ben')) x(a)
    WHERE r.h % 100 = 7
    """,
    # Every hour stale, as the store marks the hours it writes.
    """
    INSERT INTO rollup_stale (hour, what)
    SELECT DISTINCT agentdocket_hour(coalesce(started_at, first_ts)), w FROM runs
    CROSS JOIN (VALUES ('runs'), ('verdicts')) k(w)
    """,
]


def synthesise(url: str, runs: int, days: int, end: datetime) -> dict[str, int]:
    conn = psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True)
    conn.execute("SET synchronous_commit = off")
    conn.execute("SET maintenance_work_mem = '512MB'")
    # the months' partitions (the store makes them as events come; here rows come in bulk)
    months = sorted({month_of(end - timedelta(days=d)) for d in range(days + 1)})
    conn.execute("SELECT agentdocket_ensure_partitions(%s::date[])", [months])
    for i, statement in enumerate(SYNTHESIS):
        start = time.perf_counter()
        sql = (
            statement.replace("{RUNS}", str(runs))
            .replace("{DAYS}", str(days))
            .replace("{END}", f"'{end.isoformat()}'")
        )
        with conn.transaction():
            conn.execute(sql.encode())
        print(
            f"  synthesis step {i + 1}/{len(SYNTHESIS)}: {time.perf_counter() - start:.1f} s",
            flush=True,
        )
    conn.execute("VACUUM ANALYZE")
    counts = {
        t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0])  # type: ignore[index]
        for t in ("runs", "events", "verdicts")
    }
    conn.close()
    return counts


def refreshed(url: str) -> str:
    with open_store(url, migrate=False) as store:
        done = store.projections.refresh_dashboards()
    return str(done)


def timed(conn: psycopg.Connection[Any], sql: str, rounds: int) -> tuple[float, int]:
    times, n = [], 0
    for _ in range(rounds):
        start = time.perf_counter()
        n = len(conn.execute(sql.encode()).fetchall())
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), n


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--range-days", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", help="PostgreSQL server URL (default: the local cluster)")
    parser.add_argument(
        "--keep",
        metavar="NAME",
        help="synthesise into database NAME once and keep it; later runs with the same NAME "
        "re-time the panels on it (its derived views re-made at the current code)",
    )
    args = parser.parse_args()
    server = postgres_url(args.url)
    with bench_database(server, args.keep) as (url, seeded):
        try:
            modes, counts = measure(url, args, seeded)
        finally:
            drop_dashboard_role(url, ROLE)  # its rights in the database, then the role
    report(modes, counts, args)


@contextmanager
def bench_database(server: str, keep: str | None) -> Iterator[tuple[str, bool]]:
    """A fresh database dropped afterwards; or, with ``keep``, that database (made if absent)
    and whether it already holds the synthesis."""
    if keep is None:
        with fresh_database(server) as url:
            yield url, False
        return
    admin = psycopg_conninfo(parse_url(server))
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [keep]).fetchone()
        if not exists:
            conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(keep)))
    url = parse_url(server).set(database=keep).render_as_string(hide_password=False)
    seeded = False
    if exists:
        with psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True) as conn:
            found = conn.execute("SELECT to_regclass('runs') IS NOT NULL").fetchone()
            seeded = bool(found and found[0]) and bool(
                conn.execute("SELECT EXISTS (SELECT 1 FROM runs)").fetchone()[0]  # type: ignore[index]
            )
    yield url, seeded


def measure(
    url: str, args: argparse.Namespace, seeded: bool
) -> tuple[list[list[tuple[str, str, float, int]]], dict[str, int]]:
    """The three states' panel times (fresh, recording, scored) on ``url``, synthesised first
    unless ``seeded``; and the row counts."""
    if seeded:  # a kept synthesis, migrated to this code's schema (as `agentdocket migrate`)
        upgrade(url, derived=dashboards.objects())
    open_store(url, derived=dashboards.objects()).close()  # the schema and the views
    if seeded:
        end = newest_start(url)
        print("re-using the kept synthesis", flush=True)
        counts = row_counts(url)
    else:
        end = datetime.now(UTC).replace(microsecond=0)
        print(f"synthesising {args.runs:,} runs over {args.days} days ...", flush=True)
        counts = synthesise(url, args.runs, args.days, end)
    print(
        f"  {counts['runs']:,} runs, {counts['events']:,} events, {counts['verdicts']:,} verdicts",
        flush=True,
    )
    print(f"  full refresh of the rollups: {refreshed(url)}", flush=True)
    window = (
        (end - timedelta(days=args.range_days)).isoformat().replace("+00:00", "Z"),
        end.isoformat().replace("+00:00", "Z"),
    )
    owner = psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True)
    owner.execute(  # what autovacuum would soon do
        "ANALYZE rollup_stale, rollup_runs, rollup_latency, rollup_verdicts, "
        "rollup_measures, rollup_transitions"
    )
    # The panels run as Grafana runs them: as the role `agentdocket grafana-role` makes.
    password = uuid.uuid4().hex
    grant_dashboard_role(url, ROLE, password)
    as_role = parse_url(url).set(username=ROLE, password=password)
    conn = psycopg.connect(psycopg_conninfo(as_role), autocommit=True)
    fresh = panel_times(conn, window, args.rounds)
    # While agents record, their runs keep the newest hour stale for run panels; verdict
    # panels go stale only when verdicts arrive and the runner has not yet refreshed (it does
    # right after scoring): the worst case, timed last.
    modes = [fresh]
    for kinds in (("runs",), ("runs", "verdicts")):
        owner.execute(
            "INSERT INTO rollup_stale (hour, what) SELECT agentdocket_hour(max(time)), "
            "w FROM dashboard_runs, unnest(%s::text[]) w GROUP BY w",
            [list(kinds)],
        )
        modes.append(panel_times(conn, window, args.rounds))
    conn.close()
    owner.close()
    print(f"  refresh of the newest hour: {refreshed(url)}", flush=True)
    return modes, counts


def newest_start(url: str) -> datetime:
    """The end of a kept synthesis' window: its newest run's start, to the second above."""
    with psycopg.connect(psycopg_conninfo(parse_url(url))) as conn:
        row = conn.execute("SELECT max(started_at) FROM runs").fetchone()
    assert row is not None and row[0] is not None
    newest: datetime = row[0]
    return newest.astimezone(UTC).replace(microsecond=0) + timedelta(seconds=1)


def row_counts(url: str) -> dict[str, int]:
    with psycopg.connect(psycopg_conninfo(parse_url(url))) as conn:
        return {
            t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0])  # type: ignore[index]
            for t in ("runs", "events", "verdicts")
        }


def report(
    modes: list[list[tuple[str, str, float, int]]],
    counts: dict[str, int],
    args: argparse.Namespace,
) -> None:
    """The table, beside the previous run's figures at the same size (kept in
    bench/.results/), and a summary line naming every panel over its target."""
    saved = ROOT / "bench" / ".results" / f"dashboards-{args.runs}.json"
    previous: dict[str, list[float]] = {}
    if saved.exists():
        previous = json.loads(saved.read_text())
    print(
        f"\nquery times in ms, median of {args.rounds}, last {args.range_days} of {args.days} "
        f"days, every variable at All ({counts['events']:,} events). Fresh: every hour rolled "
        "up. Recording: the newest hour's runs read live. Scored: its runs and verdicts read "
        "live (scored, not yet refreshed). Before: the previous run's (fresh/record/scored)."
    )
    print(f"  {'':16} {'':52} {'fresh':>8} {'record':>8} {'scored':>8}  {'before':>20}")
    over: list[str] = []
    now: dict[str, list[float]] = {}
    for row in zip(*modes, strict=True):
        dashboard, title, _, n = row[0]
        times = [ms for _, _, ms, _ in row]
        key = f"{dashboard}: {title}"
        now[key] = times
        late = max(times) >= target(dashboard, title)
        if late:
            over.append(key)
        before = "/".join(f"{ms:.0f}" for ms in previous.get(key, [])) or "-"
        cells = " ".join(f"{ms:8.1f}" for ms in times)
        flag = "  over target" if late else ""
        print(f"  {dashboard:16} {title[:52]:52} {cells}  {before:>20} {n:6} rows{flag}")
    saved.parent.mkdir(exist_ok=True)
    saved.write_text(json.dumps(now, indent=1))
    print(
        f"{len(now) - len(over)} of {len(now)} queries under their targets fresh, recording and "
        f"scored ({TARGET_MS:.0f} ms; the run dashboard's {RUN_TARGET_MS:.0f} ms but its list of "
        "runs)" + ("; over: " + "; ".join(over) if over else "")
    )


def target(dashboard: str, title: str) -> float:
    """The run dashboard reads one run: 50 ms; its list of failing runs, as every other
    panel: 200 ms."""
    if dashboard == run.UID.removeprefix("agentdocket-") and title != "Failing runs":
        return RUN_TARGET_MS
    return TARGET_MS


def panel_times(
    conn: psycopg.Connection[Any], window: tuple[str, str], rounds: int
) -> list[tuple[str, str, float, int]]:
    results: list[tuple[str, str, float, int]] = []
    values: dict[str, list[str]] = {}
    for name in ("agent", "dataset", "version"):
        sql = expand(panels.VARIABLE_SQL[name], {}, *window)
        ms, _ = timed(conn, sql, rounds)
        values[name] = sorted(str(r[0]) for r in conn.execute(sql.encode()).fetchall())
        results.append(("variables", name, ms, len(values[name])))
    values["scorer"] = ["planner.suffix_match"]
    sql = expand(panels.VARIABLE_SQL["version_a"], values, *window)
    ms, _ = timed(conn, sql, rounds)
    results.append(("variables", "version_a / version_b", ms, 2))
    values["version_a"], values["version_b"] = ["1"], ["1.1"]
    # the experiments dashboard: the first dataset and two of its selections
    sql = expand(panels.VARIABLE_SQL["experiment_dataset"], {}, *window)
    values["experiment_dataset"] = [min(str(r[0]) for r in conn.execute(sql.encode()).fetchall())]
    sql = expand(panels.VARIABLE_SQL["baseline"], values, *window)
    selections = sorted(str(r[0]) for r in conn.execute(sql.encode()).fetchall())
    values["baseline"], values["candidate"] = [selections[0]], [selections[-1]]
    # the run dashboard: the newest run that failed a scorer; the list unfiltered
    newest = "SELECT trace_id FROM dashboard_failing_runs ORDER BY time DESC LIMIT 1"
    values["trace_id"] = [str(conn.execute(newest).fetchall()[0][0])]
    for name in ("case_id", "failing_scorer", "failure_type", "tool"):
        values[name] = [""]
    for spec in panels.PANELS:
        sql = expand(spec.sql, values, *window)
        ms, n = timed(conn, sql, rounds)
        results.append((spec.dashboard.removeprefix("agentdocket-"), spec.title, ms, n))
        print(f"  {results[-1][0]:16} {spec.title[:52]:52} {ms:8.1f} ms", flush=True)
    return results


if __name__ == "__main__":
    main()
