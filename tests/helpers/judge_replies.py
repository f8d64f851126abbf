"""Real replies of the local judge model (``local:smollm2``) to each judge prompt, kept as test
fixtures (tests/fixtures/judge_replies/*.json) so that the parsing tests read real replies
without loading the model. Captured again (the `local` extra and the weights installed) by

    python -m tests.helpers.judge_replies [NAME ...]

(NAME: a fixture to capture again, by default all of them)
which asks the prompts the judges send on the demo's runs (and ``session.goal``'s on a
conversation about one of the demo's questions), each
at the temperature its judge uses by default (greedily at 0, sampled at 0.7 for the peer
reviews), and each first reply that does not parse once more as the judges' session does: the
prompt, that reply, and the reminder of the format. Each fixture records the reply, why it
stopped and how many tokens it took, what the parser made of it then (``parsed``, or the
``unparseable`` reason), and a digest of the messages sent; a new capture is read through
before it replaces the old one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "judge_replies"

# fixture file -> the judge prompts it holds replies to
FILES = {
    "reference": ("reference_conclusive", "reference_interpretive"),
    "review": (
        "review_interaction_planning",
        "review_tool_employment",
        "review_information_synthesis",
    ),
    "meta_review": (
        "meta_review_interaction_planning",
        "meta_review_tool_employment",
        "meta_review_information_synthesis",
    ),
    "session_goal": ("session_goal",),
}


def load(name: str) -> list[dict[str, Any]]:
    """The replies of fixture ``name`` (a key of :data:`FILES`)."""
    data = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    replies: list[dict[str, Any]] = data["replies"]
    return replies


class _Recorder(FakeListChatModel):
    """Records the prompts it is asked, replies with a decision that parses."""

    asked: list[str] = []  # noqa: RUF012 - one list per instance, given at construction

    def _call(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> str:
        self.asked.append(messages[-1].text)
        return "Rationale: recorded.\nFinal Decision: Perfect"


def _prompts() -> dict[str, list[tuple[str, str]]]:
    """Prompt name -> (about, text) of the prompts the judges send on the demo's runs."""
    from agentdocket import scorers
    from agentdocket.demo import run_demo
    from agentdocket.scorers.judges.peer import SUBTASKS
    from agentdocket.scorers.runner import score_runs
    from agentdocket.store import open_store

    found: dict[str, list[tuple[str, str]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'demo.db'}"
        run_demo(url, spool_dir=Path(tmp) / "spool")
        with open_store(url) as store:
            runs: dict[str, str] = {}
            for run in store.reader.list_runs(dataset="concerts-demo", limit=None):
                runs.setdefault(run["case_id"], run["trace_id"])
            cases = {c.case_id: c for c in store.datasets.get("concerts-demo").cases}
            for case_id, trace_id in sorted(runs.items()):
                kind = cases[case_id].question_type or "conclusive"
                if len(found.get(f"reference_{kind}", [])) >= 2:
                    continue
                recorder = _Recorder(responses=["-"], asked=[])
                base = scorers.get("answer.reference", "1")
                scorer = dataclasses.replace(
                    base, version="capture", config={**base.config, "model": recorder}
                )
                score_runs(store, [scorer], trace_ids=[trace_id])
                found.setdefault(f"reference_{kind}", []).append((case_id, recorder.asked[0]))
            for subtask in SUBTASKS:
                case_id, trace_id = sorted(runs.items())[0]
                recorder = _Recorder(responses=["-"], asked=[])
                base = scorers.get(f"review.peer.{subtask}", "1")
                config = {"model": recorder, "n_reviewers": 1, "n_meta_reviewers": 1}
                scorer = dataclasses.replace(
                    base, version="capture", config={**base.config, **config}
                )
                score_runs(store, [scorer], trace_ids=[trace_id])
                review, meta = recorder.asked
                found[f"review_{subtask}"] = [(case_id, review)]
                found[f"meta_review_{subtask}"] = [(case_id, meta)]
            found["session_goal"] = _goal_prompts(cases[sorted(runs)[0]])
    return found


class _Talk:
    """A two-turn conversation, as ``session.goal`` reads one (its transcript)."""

    def __init__(self, *messages: tuple[str, str]) -> None:
        self.messages = [{"role": r, "content": c} for r, c in messages]

    def transcript(self) -> list[dict[str, Any]]:
        return self.messages


def _goal_prompts(case: Any) -> list[tuple[str, str]]:
    """``session.goal``'s question about a demo case, after a conversation in which the agent
    gave the reference answer, and after one in which it did not."""
    from agentdocket.scorers.judges.goal import prompt

    statement = f"The agent gave the user this answer (in any words): {case.reference_answer}"
    out = []
    for about, said in (
        ("reached", case.reference_answer),
        ("not reached", "I could not find that in the database."),
    ):
        talk = _Talk(
            ("user", case.question),
            ("assistant", "Do you mean the concerts database?"),
            ("user", "Yes."),
            ("assistant", said),
        )
        out.append((f"{case.case_id}, goal {about}", prompt(talk, statement)))  # type: ignore[arg-type]
    return out


def _parser(prompt: str) -> Callable[[str], Any]:
    from agentdocket.scorers.judges.parse import (
        parse_conclusion,
        parse_final_decision,
        parse_score,
    )
    from agentdocket.scorers.judges.points import parse_hit

    if prompt == "reference_conclusive":
        return parse_conclusion
    if prompt == "reference_interpretive":
        return parse_score
    if prompt == "session_goal":
        return parse_hit
    return parse_final_decision


def parsed(prompt: str, reply: str) -> dict[str, Any]:
    """What the judges' parser makes of ``reply`` to ``prompt``: ``{"parsed": value}`` or
    ``{"unparseable": reason}``."""
    from agentdocket.scorers.judges.parse import Unparseable

    try:
        value = _parser(prompt)(reply)
    except Unparseable as exc:
        return {"unparseable": str(exc)}
    return {"parsed": list(value) if isinstance(value, tuple) else value}


def _ask(
    model: Any, prompt: str, messages: Sequence[tuple[str, str]], temperature: float
) -> dict[str, Any]:
    from langchain_core.messages import AIMessage, HumanMessage

    sent = [HumanMessage(c) if r == "user" else AIMessage(c) for r, c in messages]
    message = model.invoke(sent, temperature=temperature)
    reply = str(message.content)
    usage = message.usage_metadata or {}
    digest = hashlib.sha256(json.dumps(list(messages)).encode()).hexdigest()[:16]
    return {
        "temperature": temperature,
        "attempt": int(len(messages) > 1),
        "messages_sha256": digest,
        "reply": reply,
        "finish_reason": message.response_metadata.get("finish_reason"),
        "output_tokens": usage.get("output_tokens"),
        **parsed(prompt, reply),
    }


def capture(names: Sequence[str] = (), samples: int = 2) -> dict[str, dict[str, Any]]:
    """The content of the fixtures ``names`` (default: all), asked of the local model now."""
    from agentdocket.scorers.judges.local import DEFAULT_MAX_NEW_TOKENS, MODELS, local_model
    from agentdocket.scorers.judges.parse import Unparseable, reminder

    model = local_model("local:smollm2")
    weights = MODELS["smollm2"]
    prompts = _prompts()
    out: dict[str, dict[str, Any]] = {}
    for name, asked in FILES.items():
        if names and name not in names:
            continue
        replies = []
        for prompt in asked:
            sampled = prompt.startswith(("review", "meta_review"))
            temperature = 0.7 if sampled else 0.0
            for about, text in prompts[prompt]:
                for _ in range(samples if sampled else 1):
                    got = _ask(model, prompt, [("user", text)], temperature)
                    replies.append({"prompt": prompt, "about": about, **got})
                    if "unparseable" in got:
                        try:
                            _parser(prompt)(got["reply"])
                        except Unparseable as exc:
                            expected = exc.expected
                        talk = [
                            ("user", text),
                            ("assistant", got["reply"]),
                            ("user", reminder(expected)),
                        ]
                        again = _ask(model, prompt, talk, temperature)
                        replies.append({"prompt": prompt, "about": about, **again})
        out[name] = {
            "model": "local:smollm2",
            "weights": f"{weights.distribution} {weights.version} ({weights.file})",
            "max_new_tokens": DEFAULT_MAX_NEW_TOKENS,
            "captured": date.today().isoformat(),
            "replies": replies,
        }
    return out


def main(argv: Sequence[str]) -> None:
    unknown = [n for n in argv if n not in FILES]
    if unknown:
        sys.exit(f"no fixture {', '.join(unknown)}; known: {', '.join(FILES)}")
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name, content in capture(argv).items():
        text = json.dumps(content, indent=1, ensure_ascii=False) + "\n"
        (FIXTURES / f"{name}.json").write_text(text, encoding="utf-8")
        print(f"{name}: {len(content['replies'])} replies")


if __name__ == "__main__":
    main(sys.argv[1:])
