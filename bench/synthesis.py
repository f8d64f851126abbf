"""What bench/dashboards.py synthesises: set-based SQL writing runs, their events, verdicts,
model calls' costs and labels straight into the tables, consistently with the projections.

``{RUNS}``, ``{DAYS}`` and ``{END}`` are replaced by the run count, the days they spread over
and the newest time.
"""

from __future__ import annotations

KINDS = (
    "ARRAY['run.started','plan','tool.called','tool.returned','tool.called','tool.returned',"
    "'tool.called','tool.returned','response','run.finished']"
)

SYNTHESIS = [
    # Runs: 5 agents x 3 versions x 3 strategies x 4 models x 10 datasets, 5% errors; 30% are
    # turns of a conversation: an agent's turns within two minutes (about three a session).
    """
    INSERT INTO runs (trace_id, agent, agent_version, strategy, models, question, dataset,
        dataset_version, case_id, attributes, status, error, started_at, ended_at, first_ts,
        last_ts, n_events, n_steps, n_errors, n_plans, n_tool_calls, n_sql, n_retrievals,
        n_llm_calls, n_messages, n_responses, n_other_steps, run_month)
    SELECT md5('run' || i), 'agent-' || (i % 5), 'v' || (i % 3),
        (ARRAY['sequential', 'iterative', 'no-interaction'])[1 + i % 3],
        jsonb_build_object('planner', 'model-' || (i % 4)), 'question ' || (i % 1000),
        'dataset-' || (i % 10), '1', 'case-' || (i % 1000),
        CASE WHEN i % 10 < 3 THEN jsonb_build_object('conversation_id',
            'conv-' || (i % 5) || '-' || floor(extract(epoch FROM t) / 120)) ELSE '{}'::jsonb END,
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
                                                'dataset', r.dataset, 'case_id', r.case_id,
                                                'attributes', r.attributes)
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
    # Session scorers' verdicts on each conversation's last turn: goal completion (a judge),
    # resolution, repetition and unanswered errors.
    """
    INSERT INTO verdicts (verdict_id, trace_id, subject_span_id, scorer, scorer_version,
        input_hash, passed, score, label, failure_type, rationale, details, judge_trace_id, ts,
        run_month)
    SELECT md5(l.trace_id || s.scorer), l.trace_id, NULL, s.scorer, '1', md5(l.trace_id || 's'),
        p, CASE WHEN p THEN 1.0 ELSE 0.0 END, NULL, CASE WHEN NOT p THEN s.failure END,
        CASE WHEN NOT p THEN 'synthesised' END,
        jsonb_build_object('session_id', l.session_id), NULL, l.ended_at + interval '10 minutes',
        l.run_month
    FROM (SELECT DISTINCT ON (attributes->>'conversation_id') attributes->>'conversation_id'
                 AS session_id, trace_id, ended_at, run_month,
                 abs(hashtext(trace_id)::bigint) AS h
          FROM runs WHERE attributes->>'conversation_id' IS NOT NULL
          ORDER BY attributes->>'conversation_id', started_at DESC) l
    CROSS JOIN (VALUES ('session.goal', 'session:goal_not_reached', 7),
                       ('session.resolution', 'session:unresolved', 8),
                       ('session.repetition', 'session:repeated_answer', 9),
                       ('session.unanswered_error', 'session:unanswered_error', 9))
         s(scorer, failure, pass_in_10)
    CROSS JOIN LATERAL (SELECT (l.h + length(s.scorer)) % 10 < s.pass_in_10 AS p) v
    """,
    # Every hour stale, as the store marks the hours it writes.
    """
    INSERT INTO rollup_stale (hour, what)
    SELECT DISTINCT agentdocket_hour(coalesce(started_at, first_ts)), w FROM runs
    CROSS JOIN (VALUES ('runs'), ('verdicts')) k(w)
    """,
]
