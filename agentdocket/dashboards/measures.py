"""The measures rollup (``rollup_measures``, read through ``dashboard_verdict_measures``): what
it holds (:data:`MEASURES`) and how each measure is computed from the latest run-level verdicts
of the stale hours (``l``, see :mod:`agentdocket.dashboards.rollups`), one function a measure or
a few, each a SELECT of the rollup's columns. The measures are what the panels chart out of a
verdict's details; the detail keys are checked against the scorers' declarations.
"""

from __future__ import annotations

from agentdocket.dashboards.declared import detail, family, names, scorer
from agentdocket.dashboards.views import TOOL_SCORERS

# What the measures rollup holds: the panels may read these and no others.
MEASURES = {
    "extra_steps": "plan steps before the expected suffix, labelled by count",
    "tool": "a tool-use verdict's pass, labelled by each tool its run called",
    "cosine": "response similarity (and cosine_bucket: labelled by 0.05 buckets)",
    "cosine_bucket": "",
    "rouge_l_f": "ROUGE-L F (and rouge_l_f_bucket: labelled by 0.05 buckets)",
    "rouge_l_f_bucket": "",
    "rouge_l_precision": "ROUGE-L precision",
    "rouge_l_recall": "ROUGE-L recall",
    "matched": "a reference verdict's Match (1) or Not Match (0)",
    "interpretive_score": "an interpretive answer's 1-5 score, labelled by score",
    "reviewers_unanimous": "peer review: the reviewers agreed",
    "meta_reviewers_unanimous": "peer review: the meta-reviewers agreed",
    "reviewer_decision": "a reviewer's Perfect (1), labelled by judge model",
    "meta_reviewer_decision": "a meta-reviewer's Perfect (1), labelled by judge model",
    "correct": "GRAMMAR: the run is correct",
    "retrieval_correct": "GRAMMAR: it retrieved exactly the true documents",
    "refined_correct": "GRAMMAR: correct, outside gap groups",
    "knowledge": "GRAMMAR: a group that is not a Gap (per group)",
    "tag": "GRAMMAR: groups by tag",
    "blame": "GRAMMAR: incorrect non-robust runs by blame",
}

# The key columns of a measure's row, from l.
K = "l.hour, l.agent, l.dataset, l.scorer, l.scorer_version"


def js(owner: str, key: str) -> str:  # a detail, as JSON
    return f"l.details->{detail(owner, key)}"


def txt(owner: str, key: str) -> str:  # as text
    return f"l.details->>{detail(owner, key)}"


def num(owner: str, key: str) -> str:  # as a number (null if it is none)
    return f"agentdocket_number({js(owner, key)})"


# The scorers the measures read the details of.
SIM = "response.similarity"
REF = "answer.reference"
GRAMMAR = "grammar.groups"
PEER = "review.peer.*"


def _extra_steps() -> str:
    """Plan steps before the expected suffix, labelled by count."""
    return f"""
                SELECT {K}, 'extra_steps' AS measure, CAST(x.v AS text) AS label, x.v AS value
                FROM l CROSS JOIN LATERAL (SELECT {num("planner.suffix_match", "extra_steps")}) x(v)
                WHERE l.scorer = {scorer("planner.suffix_match")} AND x.v IS NOT NULL"""


def _tool() -> str:
    """A tool-use verdict's pass, once for each tool its run called (each run's tools read
    once, from its own events: a lateral subquery per run, which Citus sends to the run's
    shard; its DISTINCT holds trace_id, which Citus needs of a subquery correlated on rows of
    the coordinator's)."""
    return f"""
                SELECT g.hour, g.agent, g.dataset, x.scorer, x.scorer_version, 'tool', t.tool,
                    CASE WHEN x.passed THEN 1.0 ELSE 0.0 END
                FROM (
                    SELECT hour, agent, dataset, trace_id, run_month, array_agg(scorer) AS scorers,
                        array_agg(scorer_version) AS versions, array_agg(passed) AS passed
                    FROM l WHERE l.scorer IN {names(*TOOL_SCORERS)} AND l.passed IS NOT NULL
                    GROUP BY hour, agent, dataset, trace_id, run_month
                ) g
                CROSS JOIN LATERAL (
                    SELECT DISTINCT e.trace_id, e.payload->>'tool' AS tool FROM events e
                    WHERE e.trace_id = g.trace_id AND e.run_month = g.run_month
                      AND e.kind = 'tool.called'
                ) t
                CROSS JOIN LATERAL unnest(g.scorers, g.versions, g.passed)
                    x(scorer, scorer_version, passed)
                WHERE t.tool IS NOT NULL"""


def _similarity() -> str:
    """Cosine and ROUGE-L, with cosine and F also labelled by 0.05 buckets."""
    return f"""
                SELECT {K}, x.measure || y.suffix, CASE WHEN y.suffix <> '' THEN
                    agentdocket_bucket(x.value) END, x.value
                FROM l CROSS JOIN LATERAL (VALUES
                    ('cosine', {num(SIM, "cosine")}, true),
                    ('rouge_l_f', {num(SIM, "rougeL_fmeasure")}, true),
                    ('rouge_l_precision', {num(SIM, "rougeL_precision")}, false),
                    ('rouge_l_recall', {num(SIM, "rougeL_recall")}, false)
                ) x(measure, value, bucketed)
                CROSS JOIN LATERAL (SELECT '' UNION ALL SELECT '_bucket' WHERE x.bucketed) y(suffix)
                WHERE l.scorer = {scorer(SIM)} AND x.value IS NOT NULL"""


def _matched() -> str:
    """A reference verdict's Match (1) or Not Match (0)."""
    return f"""
                SELECT {K}, 'matched', NULL, CASE l.label WHEN 'Match' THEN 1.0 ELSE 0.0 END
                FROM l WHERE l.scorer = {scorer(REF)} AND l.label IN ('Match', 'Not Match')"""


def _interpretive_score() -> str:
    """An interpretive answer's 1-5 score, labelled by score."""
    return f"""
                SELECT {K}, 'interpretive_score', CAST(x.v AS text), x.v
                FROM l CROSS JOIN LATERAL (SELECT {num(REF, "score")}) x(v)
                WHERE l.scorer = {scorer(REF)} AND x.v IS NOT NULL
                  AND {txt(REF, "question_type")} = 'interpretive'"""


def _unanimous() -> str:
    """Whether the reviewers, and the meta-reviewers, agreed."""
    return f"""
                SELECT {K}, x.measure, NULL, CASE x.value WHEN 'true' THEN 1.0 ELSE 0.0 END
                FROM l CROSS JOIN LATERAL (VALUES
                    ('reviewers_unanimous', {txt(PEER, "reviewers_unanimous")}),
                    ('meta_reviewers_unanimous', {txt(PEER, "meta_reviewers_unanimous")})
                ) x(measure, value)
                WHERE l.scorer LIKE {family("review.peer")} AND x.value IN ('true', 'false')"""


def _decisions() -> str:
    """Each reviewer's and meta-reviewer's Perfect (1), labelled by judge model."""
    return f"""
                SELECT {K}, d.role || '_decision',
                    coalesce(d.models->>(CAST(x.i AS integer) - 1), '(unknown)'),
                    CASE WHEN x.decision = 'Perfect' THEN 1.0 ELSE 0.0 END
                FROM l CROSS JOIN LATERAL (VALUES
                    ('reviewer', {js(PEER, "reviewer_decisions")}, {js(PEER, "reviewer_models")}),
                    ('meta_reviewer', {js(PEER, "meta_reviewer_decisions")},
                     {js(PEER, "meta_reviewer_models")})
                ) d(role, decisions, models)
                CROSS JOIN LATERAL jsonb_array_elements_text(agentdocket_array(d.decisions))
                    WITH ORDINALITY x(decision, i)
                WHERE l.scorer LIKE {family("review.peer")}"""


def _grammar() -> str:
    """GRAMMAR: correctness, knowledge, tags and blame."""
    return f"""
                SELECT {K}, x.measure, x.label, x.value
                FROM l CROSS JOIN LATERAL (SELECT
                    {num(GRAMMAR, "group_representative")} = 1 AS representative
                ) g CROSS JOIN LATERAL (VALUES
                    ('correct', NULL,
                     CASE {txt(GRAMMAR, "correct")} WHEN 'true' THEN 1.0 ELSE 0.0 END),
                    ('retrieval_correct', NULL,
                     CASE {txt(GRAMMAR, "retrieval_correct")} WHEN 'true' THEN 1.0 ELSE 0.0 END),
                    ('refined_correct', NULL, CASE {txt(GRAMMAR, "refined_correct")}
                        WHEN 'true' THEN 1.0 WHEN 'false' THEN 0.0 END),
                    ('knowledge', NULL, CASE WHEN g.representative THEN
                        CASE WHEN {txt(GRAMMAR, "tag")} = 'Gap' THEN 0.0 ELSE 1.0 END END),
                    ('tag', {txt(GRAMMAR, "tag")},
                     CASE WHEN g.representative AND {txt(GRAMMAR, "tag")} IS NOT NULL THEN 1.0 END),
                    ('blame', {txt(GRAMMAR, "blame")},
                     CASE WHEN {txt(GRAMMAR, "blame")} IS NOT NULL THEN 1.0 END)
                ) x(measure, label, value)
                WHERE l.scorer = {scorer(GRAMMAR)} AND x.value IS NOT NULL"""


# Every measure's SELECT, in the order of their UNION ALL.
MEASURED = (
    _extra_steps,
    _tool,
    _similarity,
    _matched,
    _interpretive_score,
    _unanimous,
    _decisions,
    _grammar,
)


def aggregate() -> str:
    """The measures rollup's rows: every measure's, aggregated by hour, scorer and label."""
    union = "\n                UNION ALL".join(measure() for measure in MEASURED)
    return f"""
        SELECT hour, agent, dataset, scorer, scorer_version, measure, label, count(*) AS n,
                sum(value) AS total
            FROM ({union}
            ) m
            GROUP BY 1, 2, 3, 4, 5, 6, 7
        """
