"""LLM judges ("On Evaluating the Integration of Reasoning and Action in LLM Agents with Database
Question Answering"): the prompts of Figures 7-10 word for word, and strict parsers of the replies
they ask for. A reply that does not end in the asked format is unparseable: it is never guessed."""

from agentdocket.scorers.judges.parse import (
    Unparseable,
    parse_conclusion,
    parse_final_decision,
    parse_score,
)
from agentdocket.scorers.judges.prompts import PROMPTS, render

__all__ = [
    "PROMPTS",
    "Unparseable",
    "parse_conclusion",
    "parse_final_decision",
    "parse_score",
    "render",
]
