"""Our ROUGE-L gives exactly what rouge_score gives (rougeL, no stemmer)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from agentdocket.scorers.rouge import lcs_length, rouge_l, tokens

REFERENCE = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
WORDS = st.sampled_from(
    ["the", "a", "Cat", "cat", "dog's", "U.S.", "2023", "rate", "é", "--", "of", "in", "Mars"]
)
TEXTS = st.lists(WORDS, max_size=80).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(TEXTS, TEXTS)
def test_equal_to_rouge_score(target: str, prediction: str) -> None:
    theirs = REFERENCE.score(target, prediction)["rougeL"]
    ours = rouge_l(target, prediction)
    assert (ours.precision, ours.recall, ours.fmeasure) == (
        theirs.precision,
        theirs.recall,
        theirs.fmeasure,
    )


def test_lcs_and_tokens() -> None:
    assert tokens("It's the U.S. -- 2023!") == ["it", "s", "the", "u", "s", "2023"]
    assert lcs_length(["a", "b", "c", "d", "e"], ["x", "b", "d", "y", "e"]) == 3
    assert lcs_length([], ["a"]) == 0
    assert rouge_l("", "anything").fmeasure == 0.0
