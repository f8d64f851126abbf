"""Datasets and their cases: what a run was expected to do. Immutable per dataset version."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from agentdocket.events.codec import field, from_json, to_json


@dataclass(frozen=True)
class ArgumentRules:
    """How expected and executed tool arguments are compared. They belong to the case's data.

    Each mapping is keyed by argument name (``"*"`` for every argument).
    """

    ignore: list[str] = field("argument names ignored on both sides", factory=list)
    coerce: dict[str, Literal["join_comma", "string"]] = field(
        "turn the expected value into a string before comparing: a list joined by commas, "
        "or a number as text",
        factory=dict,
    )
    normalize: dict[str, list[Literal["url_spaces", "strip", "casefold"]]] = field(
        "text normalisations applied to both sides (url_spaces: %20 and + become spaces)",
        factory=dict,
    )
    semantic: dict[str, float] = field(
        "arguments compared by all-MiniLM-L6-v2 cosine similarity above this threshold",
        factory=dict,
    )
    tools: list[str] | None = field("tools these rules apply to (all when absent)", None)


@dataclass(frozen=True)
class ExpectedCall:
    """A tool call the case expects, with its arguments."""

    tool: str = field("tool name")
    arguments: dict[str, Any] | str = field(
        "expected arguments (a raw string when the source could not be parsed)", factory=dict
    )


@dataclass(frozen=True)
class ScoringPoint:
    """A weighted point a judge checks (examiner / judge evaluation)."""

    point: str = field("what must hold")
    weight: float = field("weight of the point", 1.0)
    eval_code: str | None = field("Python assertions deciding the point instead of an LLM", None)


@dataclass(frozen=True)
class SimulatedUser:
    """The user of a multi-turn case, played by a chat model: who they are, what they want,
    when the conversation ends."""

    persona: str = field("who the user is (told to the model playing them)")
    goal: str = field("what the user wants done (session judges read it as the goal)")
    max_turns: int = field("the most turns the agent gets", 5)
    stop: str = field(
        "what the user says once the goal is reached: it ends the conversation", "DONE"
    )


# Fields added after cases were first stored: left out of a case's canonical JSON while they hold
# their defaults, so that the digest (and every verdict's input hash) of an older case stays.
_LATER_FIELDS: dict[str, Any] = {"user_turns": [], "user": None}


@dataclass(frozen=True)
class Case:
    """One case of a dataset."""

    case_id: str = field("id, unique within the dataset version")
    question: str | None = field("the question or instruction", None)
    question_type: Literal["conclusive", "interpretive"] | None = field(
        "conclusive questions get Match / Not Match, interpretive ones a 1-5 score", None
    )
    expected_plan: list[str] = field("expected plan steps (tool names or texts)", factory=list)
    expected_calls: list[ExpectedCall] = field("expected tool calls", factory=list)
    argument_rules: list[ArgumentRules] = field(
        "rules for comparing arguments; the first whose tools include the call's tool applies",
        factory=list,
    )
    reference_answer: str | None = field("the reference answer", None)
    stub_response: str | None = field("the stub response a response is compared with", None)
    group: str | None = field("semantic group id (cases asking the same thing)", None)
    true_document_ids: list[str] = field("ids of the documents that hold the answer", factory=list)
    scoring_points: list[ScoringPoint] = field("weighted scoring points", factory=list)
    attributes: dict[str, Any] = field("free attributes", factory=dict)
    user_turns: list[str] = field(
        "scripted user messages following the question, one per turn (a multi-turn case)",
        factory=list,
    )
    user: SimulatedUser | None = field(
        "a simulated user (persona, goal, turn limit, stop phrase) instead of scripted turns", None
    )

    def __post_init__(self) -> None:
        if self.user_turns and self.user is not None:
            raise ValueError(
                f"case {self.case_id}: give user_turns (scripted) or user (simulated), not both"
            )
        if self.user is not None and self.user.max_turns < 1:
            raise ValueError(f"case {self.case_id}: user.max_turns must be at least 1")

    @property
    def multi_turn(self) -> bool:
        """Whether the case is a conversation (scripted or simulated user turns)."""
        return bool(self.user_turns) or self.user is not None

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = to_json(self)
        for name, default in _LATER_FIELDS.items():
            if result.get(name) == default:
                del result[name]
        return result

    @classmethod
    def from_json(cls, data: Any, path: str = "case") -> Case:
        return from_json(cls, data, path)

    @cached_property
    def digest(self) -> str:
        """SHA-256 of the case's canonical JSON (computed once per case object)."""
        body = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(body.encode()).hexdigest()

    def rules_for(self, tool: str) -> ArgumentRules | None:
        for rules in self.argument_rules:
            if rules.tools is None or tool in rules.tools:
                return rules
        return None


@dataclass(frozen=True)
class Dataset:
    """A named, versioned set of cases. A (name, version) never changes once stored."""

    name: str
    version: str
    cases: tuple[Case, ...]
    description: str | None = None

    def content_hash(self) -> str:
        """Hash of the cases, to tell an identical re-registration from a conflicting one."""
        body = json.dumps(
            {"description": self.description, "cases": [c.to_json() for c in self.cases]},
            sort_keys=True,
            separators=(",", ":"),
        )
        return hashlib.sha256(body.encode()).hexdigest()
