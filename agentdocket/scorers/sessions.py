"""Session scorers that need no model: a whole conversation (its turns, in order) to one verdict,
kept on the session's last turn (so a later turn is a new input, judged again).

- ``session.resolution``: did the conversation end resolved (its last turn answered, without an
  error), and in how many turns;
- ``session.repetition``: the agent giving the same answer twice, or making the same tool call
  (tool and arguments) in several turns, a loop the user sees;
- ``session.restating``: the user saying again what they already asked (the agent did not get
  it);
- ``session.unanswered_error``: a turn that failed (the run, or a tool) and gave the user no
  answer;
- ``session.turns``: a run scorer's verdicts on the turns, aggregated: the share of turns
  passing and the worst turn.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from agentdocket.events import Conversation, Trace, Verdict
from agentdocket.scorers.base import Outcome, option, register, session_scorer

_WORD = re.compile(r"\w+")
MIN_WORDS = 3  # a user message shorter than this restates nothing
_ANSWERS = ("answer", "question", "run.finished", "tool.called", "tool.returned")
_SESSION_DETAILS = {
    "session_id": "str: the session judged",
    "turns": "int: how many turns it had when judged",
}


def _base(conversation: Conversation) -> dict[str, Any]:
    return {"session_id": conversation.session_id, "turns": len(conversation.turns)}


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold()))


def _failed(turn: Trace) -> str | None:
    """What went wrong in a turn: its run's error, else its first tool error (None: nothing)."""
    finished = turn.finished
    if finished is not None and finished.status == "error":
        return finished.error or "error"
    for call in turn.tool_calls():
        if call.error:
            return f"{call.tool}: {call.error}"
    return None


# --- session.resolution -------------------------------------------------------------------------


def resolution(
    conversations: Sequence[Conversation], config: Mapping[str, Any]
) -> list[Outcome | None]:
    limit = config.get("max_turns")
    out: list[Outcome | None] = []
    for c in conversations:
        last = c.last
        answered = bool((last.response or "").strip())
        resolved = last.status == "ok" and answered
        details = {**_base(c), "resolved": resolved}
        if not resolved:
            why = (
                "its last turn failed" if last.status == "error" else "its last turn gave no answer"
            )
            if last.status == "running":
                why = "its last turn has not finished"
            out.append(
                Outcome(
                    passed=False,
                    failure_type="session:unresolved",
                    rationale=f"unresolved: {why}",
                    details=details,
                )
            )
            continue
        details["turns_to_resolution"] = len(c.turns)
        within = limit is None or len(c.turns) <= int(limit)
        out.append(
            Outcome(
                passed=within,
                score=float(len(c.turns)),
                failure_type=None if within else "session:too_many_turns",
                rationale=None if within else f"resolved in {len(c.turns)} turns, over {limit}",
                details=details,
            )
        )
    return out


register(
    session_scorer(
        "session.resolution",
        "1",
        "the conversation ended resolved (its last turn answered without an error); its score is "
        "the turns it took",
        resolution,
        inputs=_ANSWERS,
        options={
            "max_turns": option(int, None, "fail a session resolved in more turns than this"),
        },
        details={
            **_SESSION_DETAILS,
            "resolved": "bool: the last turn finished ok with an answer",
            "turns_to_resolution": "int: the turns it took (resolved sessions)",
        },
        metrics={"turns_to_resolution": ("turns_to_resolution", "mean")},
    )
)


# --- session.repetition -------------------------------------------------------------------------


def _call_key(tool: str, arguments: Any) -> str:
    return tool + " " + orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS).decode()


def repetition(
    conversations: Sequence[Conversation], config: Mapping[str, Any]
) -> list[Outcome | None]:
    wanted = int(config.get("tool_repeats", 3))
    out: list[Outcome | None] = []
    for c in conversations:
        seen: dict[str, int] = {}
        repeated: list[dict[str, int]] = []
        for i, answer in enumerate(c.answers()):
            if not answer or not answer.strip():
                continue
            key = _normal(answer)
            if key in seen:
                repeated.append({"turn": i + 1, "same_as_turn": seen[key] + 1})
            else:
                seen[key] = i
        calls: dict[str, list[int]] = {}
        names: dict[str, tuple[str, Any]] = {}
        for i, turn in enumerate(c.turns):
            for call in turn.tool_calls():
                key = _call_key(call.tool, call.arguments)
                calls.setdefault(key, []).append(i + 1)
                names[key] = (call.tool, call.arguments)
        loops = [
            {
                "tool": names[k][0],
                "arguments": names[k][1],
                "count": len(t),
                "turns": sorted(set(t)),
            }
            for k, t in calls.items()
            if len(t) >= wanted and len(set(t)) > 1
        ]
        failure = (
            "session:repeated_answer"
            if repeated
            else "session:repeated_tool_call"
            if loops
            else None
        )
        out.append(
            Outcome(
                passed=failure is None,
                failure_type=failure,
                rationale=None
                if failure is None
                else "; ".join(
                    [
                        f"turn {r['turn']} repeats turn {r['same_as_turn']}'s answer"
                        for r in repeated
                    ]
                    + [
                        f"{x['tool']} called {x['count']} times with the same arguments"
                        for x in loops
                    ]
                ),
                details={**_base(c), "repeated_answers": repeated, "repeated_calls": loops},
            )
        )
    return out


register(
    session_scorer(
        "session.repetition",
        "1",
        "the agent repeating itself: the same answer in two turns, or the same tool call (tool "
        "and arguments) made tool_repeats times across turns",
        repetition,
        inputs=_ANSWERS,
        options={
            "tool_repeats": option(
                int, 3, "calls of one tool with the same arguments, across turns, that make a loop"
            ),
        },
        details={
            **_SESSION_DETAILS,
            "repeated_answers": "list[dict]: each turn whose answer an earlier turn gave",
            "repeated_calls": "list[dict]: each tool call repeated across turns, with its count",
        },
    )
)


# --- session.restating --------------------------------------------------------------------------


def restating(
    conversations: Sequence[Conversation], config: Mapping[str, Any]
) -> list[Outcome | None]:
    threshold = float(config.get("similarity", 0.8))
    out: list[Outcome | None] = []
    for c in conversations:
        said = [_words(m) for m in c.user_messages()]
        restated: list[dict[str, Any]] = []
        for i in range(1, len(said)):
            for j in range(i):
                if min(len(said[i]), len(said[j])) < MIN_WORDS:
                    continue  # "thanks", "yes": short replies are not requests restated
                overlap = len(said[i] & said[j]) / min(len(said[i]), len(said[j]))
                if overlap >= threshold:
                    restated.append(
                        {"turn": i + 1, "like_turn": j + 1, "similarity": round(overlap, 3)}
                    )
                    break
        out.append(
            Outcome(
                passed=not restated,
                failure_type="session:user_restated" if restated else None,
                rationale="; ".join(
                    f"the user's turn {r['turn']} restates turn {r['like_turn']}" for r in restated
                )
                or None,
                details={**_base(c), "restated": restated},
            )
        )
    return out


register(
    session_scorer(
        "session.restating",
        "1",
        "the user restating an earlier request (the shorter message's words found in the other, "
        "at or above similarity): the agent did not get it the first time",
        restating,
        inputs=("question",),
        options={
            "similarity": option(
                float,
                0.8,
                "the share of the shorter message's words in the other at which a user message "
                "restates an earlier one (messages of 3 words or more)",
            ),
        },
        details={
            **_SESSION_DETAILS,
            "restated": "list[dict]: each user turn restating an earlier one, with the overlap",
        },
    )
)


# --- session.unanswered_error -------------------------------------------------------------------


def unanswered_error(
    conversations: Sequence[Conversation], config: Mapping[str, Any]
) -> list[Outcome | None]:
    out: list[Outcome | None] = []
    for c in conversations:
        left: list[dict[str, Any]] = []
        for i, turn in enumerate(c.turns):
            error = _failed(turn)
            if error is not None and not (turn.response or "").strip():
                left.append({"turn": i + 1, "error": error[:500]})
        out.append(
            Outcome(
                passed=not left,
                failure_type="session:unanswered_error" if left else None,
                rationale="; ".join(f"turn {x['turn']}: {x['error']}" for x in left) or None,
                details={**_base(c), "unanswered": left},
            )
        )
    return out


register(
    session_scorer(
        "session.unanswered_error",
        "1",
        "an error left unanswered: a turn whose run or tool failed and gave the user no answer",
        unanswered_error,
        inputs=_ANSWERS,
        details={
            **_SESSION_DETAILS,
            "unanswered": "list[dict]: each failed turn without an answer, with its error",
        },
    )
)


# --- session.turns ------------------------------------------------------------------------------


def _latest(turn: Trace, scorer: str, version: str | None) -> Verdict | None:
    found = [v for v in turn.verdicts() if v.scorer == scorer]
    if version is not None:
        found = [v for v in found if v.scorer_version == version]
    return found[-1] if found else None


def per_turn(
    conversations: Sequence[Conversation], config: Mapping[str, Any]
) -> list[Outcome | None]:
    scorer, version = config.get("scorer"), config.get("version")
    if not scorer:
        raise ValueError("session.turns needs the run scorer whose verdicts it reads: scorer=NAME")
    out: list[Outcome | None] = []
    for c in conversations:
        judged: list[tuple[int, Verdict]] = [
            (i + 1, v)
            for i, turn in enumerate(c.turns)
            if (v := _latest(turn, str(scorer), version)) is not None
        ]
        decided = [(i, v) for i, v in judged if v.passed is not None or v.score is not None]
        if not decided:  # nothing to aggregate: no verdict, as for a run with no case
            out.append(None)
            continue

        def rank(item: tuple[int, Verdict]) -> tuple[int, float]:
            v = item[1]
            return (0 if v.passed is False else 1, v.score if v.score is not None else 1.0)

        worst_turn, worst = min(decided, key=rank)
        passing = [i for i, v in decided if v.passed is not False]
        share = len(passing) / len(decided)
        out.append(
            Outcome(
                passed=share == 1.0,
                score=share,
                failure_type=None if share == 1.0 else "session:turn_failed",
                rationale=None
                if share == 1.0
                else f"turn {worst_turn} failed {scorer}"
                + (f" ({worst.failure_type})" if worst.failure_type else ""),
                details={
                    **_base(c),
                    "scorer": scorer,
                    "judged_turns": len(decided),
                    "share_passing": share,
                    "worst_turn": worst_turn,
                    "worst_score": worst.score,
                },
            )
        )
    return out


register(
    session_scorer(
        "session.turns",
        "1",
        "a run scorer's verdicts on each turn, aggregated: the share of turns passing (the score) "
        "and the worst turn; passes when every judged turn does",
        per_turn,
        inputs=("verdict",),
        config={"scorer": "tools.procedural"},
        options={
            "scorer": option(str, None, "the run scorer whose turn verdicts are aggregated"),
            "version": option(str, None, "only that version's verdicts (default: the latest)"),
        },
        details={
            **_SESSION_DETAILS,
            "scorer": "str: the run scorer aggregated",
            "judged_turns": "int: turns with a verdict of it",
            "share_passing": "float: the share of those passing",
            "worst_turn": "int: the worst turn (1 = first)",
            "worst_score": "float | None: its score",
        },
        metrics={"share_passing": ("share_passing", "mean")},
    )
)
