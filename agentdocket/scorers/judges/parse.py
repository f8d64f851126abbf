"""Strict parsers of judge replies, in the formats the prompts ask for.

- reference, conclusive: ``Conclusion: Match`` or ``Conclusion: Not Match``;
- reference, interpretive: ``Score: 1`` to ``Score: 5``;
- reviews and meta-reviews: ``Final Decision: Perfect`` or ``Final Decision: Imperfect``.

The decisive line is the last line that starts with the label (after optional Markdown
emphasis); its value must be exactly one of the allowed values, ignoring case, surrounding
quotes, emphasis and a final full stop. Anything else raises :class:`Unparseable`: a judge
runner retries and finally records ``judge:unparseable``; a verdict is never guessed.
"""

from __future__ import annotations

import re

from agentdocket.errors import AgentdocketError


class Unparseable(AgentdocketError, ValueError):
    """The reply does not state its verdict in the asked format."""

    def __init__(self, expected: str, reply: str) -> None:
        tail = reply.strip()[-120:]
        super().__init__(f"expected {expected}; the reply ends {tail!r}")
        self.expected = expected
        self.reply = reply


_EMPHASIS = "*_`\"' "


def _labelled(reply: str, label: str) -> str | None:
    """The value after the last line starting with ``label:`` (emphasis around it allowed)."""
    found = None
    pattern = re.compile(
        r"^[\s*_#>\"'-]*" + re.escape(label) + r"[\s*_]*:[\s*_]*(?P<value>.*)$",
        re.IGNORECASE,
    )
    for line in reply.splitlines():
        match = pattern.match(line)
        if match:
            found = match.group("value")
    if found is None:
        return None
    return found.strip().strip(_EMPHASIS).rstrip(".").strip(_EMPHASIS)


def _choice(reply: str, label: str, allowed: tuple[str, ...]) -> str:
    value = _labelled(reply, label)
    expected = f"'{label}: {' / '.join(allowed)}'"
    if value is None:
        raise Unparseable(expected, reply)
    for option in allowed:
        if value.casefold() == option.casefold():
            return option
    raise Unparseable(expected, reply)


def parse_conclusion(reply: str) -> str:
    """``Match`` or ``Not Match``."""
    return _choice(reply, "Conclusion", ("Match", "Not Match"))


def parse_score(reply: str) -> int:
    """An integer score 1-5 (``Score: 4``; ``Score: [4]`` is accepted, ``Score: 4.5`` is not)."""
    value = _labelled(reply, "Score")
    expected = "'Score: 1' to 'Score: 5'"
    if value is None:
        raise Unparseable(expected, reply)
    value = value.strip("[]").strip()
    if value not in {"1", "2", "3", "4", "5"}:
        raise Unparseable(expected, reply)
    return int(value)


def parse_final_decision(reply: str) -> str:
    """``Perfect`` or ``Imperfect``."""
    return _choice(reply, "Final Decision", ("Perfect", "Imperfect"))
