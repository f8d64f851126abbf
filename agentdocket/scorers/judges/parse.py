"""Parsers of judge replies, in the formats the prompts ask for.

- reference, conclusive: ``Conclusion: Match`` or ``Conclusion: Not Match``;
- reference, interpretive: ``Score: 1`` to ``Score: 5``;
- reviews and meta-reviews: ``Final Decision: Perfect`` or ``Final Decision: Imperfect``.

The verdict is found where the model put it, within reason: the label (any case, Markdown
emphasis, quotes or brackets around it allowed) anywhere in a line, followed by one of the
allowed values (any case) and then nothing more than the end of the line, punctuation or
emphasis. When the reply says it more than once, its last such statement decides (a judge that
changed its mind). Statements that are not an allowed value (``Conclusion: Probably Match``,
the format echoed back as ``Score: [1/2/3/4/5]``) are passed over. The two reference prompts
end with their label (``Conclusion:``, ``Score:``), so a reply that simply carries on from
it, starting with an allowed value, states its verdict too.

A reply with no such statement raises :class:`Unparseable`: the judges' session asks again
with a reminder of the format and finally records ``judge:unparseable``, with the reply
kept in its judge trace; a verdict is never guessed from words outside the format (a reply
that says the answer "is a Match" without the label is unparseable).
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


# what may stand around a label or a value: Markdown emphasis, quotes, brackets
_AROUND = r"[\s*_`\"'\[\](){}]*"
# after a value: the end of the line, or punctuation / emphasis closing it
_CLOSED = r"(?=[ \t*_`\"'\])}]*(?:[.,;:!?()\]}—-]|$))"
# after a value a reply starts with: the end of its line (a score "1." starting a list is not)
_ALONE = r"(?=[ \t*_`\"'\])}]*[.!]?[ \t*_`\"']*$)"


def _statements(reply: str, label: str, value: str, *, opening: str | None = None) -> list[str]:
    """The values ``label: value`` states in ``reply``, in order (``value``: a regular
    expression); with ``opening`` (what must follow it), also a value the reply starts with."""
    found: list[str] = []
    if opening is not None:
        start = re.match(
            _AROUND + "(?P<value>" + value + ")" + opening, reply, re.IGNORECASE | re.MULTILINE
        )
        if start:
            found.append(start.group("value"))
    pattern = re.compile(
        r"(?<![^\W_])" + re.escape(label) + _AROUND + ":" + r"[ \t*_`\"'\[(]*"
        r"(?P<value>" + value + ")" + _CLOSED,
        re.IGNORECASE | re.MULTILINE,
    )
    found += [m.group("value") for m in pattern.finditer(reply)]
    return found


def _choice(reply: str, label: str, allowed: tuple[str, ...], *, opening: str | None = None) -> str:
    # the longest first: "Not Match" before "Match"
    value = "|".join(re.escape(a).replace(r"\ ", r"\s+") for a in sorted(allowed, key=len)[::-1])
    stated = _statements(reply, label, value, opening=opening)
    if not stated:
        raise Unparseable(f"'{label}: {' / '.join(allowed)}'", reply)
    last = " ".join(stated[-1].split()).casefold()
    return next(a for a in allowed if a.casefold() == last)


def parse_conclusion(reply: str) -> str:
    """``Match`` or ``Not Match``."""
    return _choice(reply, "Conclusion", ("Match", "Not Match"), opening=_CLOSED)


def parse_score(reply: str) -> int:
    """An integer score 1-5 (``Score: 4``; ``Score: [4]`` and ``Score: 4/5`` are accepted,
    ``Score: 4.5`` and ``Score: [1/2/3/4/5]`` are not)."""
    value = r"[1-5](?:\]?\s*(?:/|out\s+of)\s*5)?(?![\d.,]\d)"
    stated = _statements(reply, "Score", value, opening=_ALONE)
    if not stated:
        raise Unparseable("'Score: 1' to 'Score: 5'", reply)
    return int(stated[-1][0])


def parse_final_decision(reply: str) -> str:
    """``Perfect`` or ``Imperfect``."""
    return _choice(reply, "Final Decision", ("Perfect", "Imperfect"))


def reminder(expected: str) -> str:
    """What a judge is told after a reply that did not parse, before it is asked again."""
    return (
        "Your reply did not state the verdict in the format asked for. Reply again, briefly, "
        f"and end your reply with one line in the format {expected}."
    )
