"""Judge prompts are the document's, word for word; replies are parsed strictly."""

from __future__ import annotations

import os

import pytest

from agentdocket.scorers.judges import (
    PROMPTS,
    Unparseable,
    parse_conclusion,
    parse_final_decision,
    parse_score,
    render,
)
from agentdocket.scorers.judges.prompts import placeholders

from .conftest import SHARED

SOURCE = SHARED / "seeds" / "000_b3c1d8e83c640636.txt"


def test_every_prompt_is_the_documents_text_word_for_word() -> None:
    if not SOURCE.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{SOURCE} is missing: CI must have ../shared beside the checkout")
        pytest.skip(f"{SOURCE} is absent")
    document = SOURCE.read_text(encoding="utf-8")
    assert len(PROMPTS) == 8
    for name, text in PROMPTS.items():
        assert text.strip() in document, name


def test_prompts_take_the_documents_placeholders() -> None:
    assert placeholders("reference_conclusive") == {"question", "gold_answer", "answer"}
    assert placeholders("reference_interpretive") == {"question", "gold_answer", "answer"}
    assert placeholders("review_interaction_planning") == {"question", "database_text", "plan"}
    assert placeholders("meta_review_tool_employment") == {
        "question",
        "database_text",
        "plan",
        "sql_results",
        "TE_reviews",
    }
    assert placeholders("meta_review_information_synthesis") == {
        "question",
        "database_text",
        "plan",
        "sql_results",
        "answer",
        "IS_reviews",
    }
    text = render("reference_conclusive", question="Q?", gold_answer="42", answer="It is 42.")
    assert "Question: Q?" in text and "Reference (Gold) Answer: 42" in text
    assert text.rstrip().endswith("Conclusion:")
    with pytest.raises(ValueError, match="missing answer; unexpected plan"):
        render("reference_conclusive", question="Q?", gold_answer="42", plan="x")
    with pytest.raises(KeyError, match="no judge prompt 'nope'"):
        render("nope")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("The answer has every fact.\nConclusion: Match", "Match"),
        ("Conclusion: Not Match.", "Not Match"),
        ("**Conclusion:** not match", "Not Match"),
        ('"Conclusion: Match"', "Match"),
        ("Conclusion: Not Match\n...on reflection...\nConclusion: Match", "Match"),
    ],
)
def test_conclusions(reply: str, expected: str) -> None:
    assert parse_conclusion(reply) == expected


@pytest.mark.parametrize(
    "reply",
    ["It matches.", "Conclusion: Probably Match", "Conclusion:", "Conclusion: Match or not"],
)
def test_unclear_conclusions_are_unparseable(reply: str) -> None:
    with pytest.raises(Unparseable, match="expected 'Conclusion: Match / Not Match'"):
        parse_conclusion(reply)


def test_scores_and_decisions() -> None:
    assert parse_score("Most key points are there.\nScore: 4") == 4
    assert parse_score("Score: [2]") == 2
    for bad in ("Score: 4.5", "Score: 6", "Score: four", "I'd say 3"):
        with pytest.raises(Unparseable):
            parse_score(bad)
    assert parse_final_decision("Rationale: fine.\nFinal Decision: Perfect") == "Perfect"
    assert parse_final_decision("Final Decision: **Imperfect**") == "Imperfect"
    with pytest.raises(Unparseable, match="Perfect / Imperfect"):
        parse_final_decision("Final Decision: Mostly perfect")
