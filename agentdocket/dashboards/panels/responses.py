"""The responses dashboard: response similarity (cosine, ROUGE-L) and the reference-based
judge's verdicts."""

from __future__ import annotations

from agentdocket.dashboards.declared import names, scorer
from agentdocket.dashboards.panels.common import (
    VERSION_IN,
    failing_runs,
    mean,
    measures,
    ratio,
    total,
)
from agentdocket.dashboards.spec import PanelSpec, panel

UID = "agentdocket-responses"
TITLE = ("agentdocket: responses", "Response similarity and reference-based judge verdicts")
SIMILARITY = f"scorer = {scorer('response.similarity')}"
REFERENCE = f"scorer = {scorer('answer.reference')}"


def _distribution(measure: str, title: str) -> PanelSpec:
    """How a similarity measure's values spread, in buckets 0.05 wide."""
    return panel(
        UID,
        f"{title} distribution",
        "barchart",
        f"SELECT label AS {measure}, {total('n')} AS responses FROM dashboard_verdict_measures "
        f"WHERE {measures(SIMILARITY, measure + '_bucket')} GROUP BY label "
        f"ORDER BY CAST(label AS numeric)",
        f"{measure} responses",
        description="Buckets 0.05 wide, by their lower bound.",
    )


PANELS: tuple[PanelSpec, ...] = (
    panel(
        UID,
        "Mean cosine and ROUGE-L",
        "stat",
        f"SELECT {mean('cosine')} AS cosine, {mean('rouge_l_precision')} AS rouge_l_precision, "
        f"{mean('rouge_l_recall')} AS rouge_l_recall, {mean('rouge_l_f')} AS rouge_l_f "
        f"FROM dashboard_verdict_measures "
        f"WHERE {measures(SIMILARITY, 'cosine rouge_l_precision rouge_l_recall rouge_l_f')}",
        "cosine rouge_l_precision rouge_l_recall rouge_l_f",
        width=24,
        height=5,
    ),
    _distribution("cosine", "Cosine similarity"),
    _distribution("rouge_l_f", "ROUGE-L F"),
    panel(
        UID,
        "Reference match rate (conclusive)",
        "stat",
        f"SELECT {ratio('total', 'n')} AS match_rate, {total('n')} AS judged "
        f"FROM dashboard_verdict_measures WHERE {measures(REFERENCE, 'matched')}",
        "match_rate judged",
        unit="percentunit",
    ),
    panel(
        UID,
        "Interpretive scores (1-5)",
        "barchart",
        f"SELECT label AS score, {total('n')} AS answers FROM dashboard_verdict_measures "
        f"WHERE {measures(REFERENCE, 'interpretive_score')} GROUP BY label "
        f"ORDER BY CAST(label AS numeric)",
        "score answers",
    ),
    failing_runs(
        UID,
        "responses",
        f"scorer IN {names('response.similarity', 'answer.reference')} AND {VERSION_IN}",
    ),
)
