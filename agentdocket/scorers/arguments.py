"""How ``tools.slot_fill`` compares an executed call's arguments with an expected call's, under
the rules the case attaches to its tool (:class:`~agentdocket.events.ArgumentRules`): ignored
keys, coercions, text normalisation, semantic equality by a similarity above a threshold.

Each side's arguments are prepared once per trace (not once per pair of calls compared).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentdocket.events import ArgumentRules, ExpectedCall
from agentdocket.events.trace import CallArguments

# Text pairs -> their similarities (the embedding model's cosines).
Similarity = Callable[[Sequence[tuple[str, str]]], Sequence[float]]


def _normalise(value: Any, steps: Sequence[str]) -> Any:
    if not isinstance(value, str):
        return value
    for step in steps:
        if step == "url_spaces":  # exactly these two; other escapes stay as they are
            value = value.replace("%20", " ").replace("+", " ")
        elif step == "strip":
            value = value.strip()
        elif step == "casefold":
            value = value.casefold()
    return value


def _coerce(value: Any, how: str | None) -> Any:
    if how == "join_comma" and isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if how == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def _rule(rules: ArgumentRules | None, table: str, key: str) -> Any:
    if rules is None:
        return None
    mapping: Mapping[str, Any] = getattr(rules, table)
    return mapping.get(key, mapping.get("*"))


def _prepared(arguments: dict[str, Any] | str, rules: ArgumentRules | None) -> dict[str, Any] | str:
    """The arguments as compared under ``rules``: ignored keys dropped, values coerced, then
    normalised. Without rules they are compared as they are (the same object: never changed)."""
    if isinstance(arguments, str) or rules is None:
        return arguments
    ignored = set(rules.ignore)
    coerce, normalize = rules.coerce, rules.normalize
    any_coerce, any_normalize = coerce.get("*"), normalize.get("*")
    out = {}
    for key, value in arguments.items():
        if key in ignored:
            continue
        how = coerce.get(key, any_coerce)
        if how is not None:
            value = _coerce(value, how)
        steps = normalize.get(key, any_normalize)
        out[key] = _normalise(value, steps) if steps and isinstance(value, str) else value
    return out


def _differences(
    want: dict[str, Any] | str,
    got: dict[str, Any] | str,
    tool: str,
    rules: ArgumentRules | None,
    similarity: Similarity | None,
) -> list[str]:
    """The argument names on which the executed call's prepared arguments ``got`` fail the
    expected ones ``want`` (empty: it matches): those only one side has (sorted), then those
    that differ (sorted). A semantically compared text differs when its cosine is at most the
    rule's threshold."""
    if isinstance(want, str) or isinstance(got, str):
        return [] if want == got else ["<arguments>"]
    if (rules is None or not rules.semantic) and want.keys() == got.keys():
        return [key for key in sorted(want) if want[key] != got[key]]
    differ = sorted(set(want) ^ set(got))
    for key in sorted(set(want) & set(got)):
        threshold = _rule(rules, "semantic", key)
        if threshold is not None and isinstance(want[key], str) and isinstance(got[key], str):
            if want[key] == got[key]:
                continue
            if similarity is None:
                raise ValueError(
                    f"argument {key!r} of tool {tool!r} is compared semantically: "
                    "configure the scorer with a similarity function"
                )
            if similarity([(want[key], got[key])])[0] > threshold:
                continue
            differ.append(key)
        elif want[key] != got[key]:
            differ.append(key)
    return differ


def difference_matrix(
    expected: list[ExpectedCall],
    calls: list[CallArguments],
    case: Any,
    similarity: Similarity | None,
) -> list[list[list[str] | None]]:
    """For each expected call, for each executed call: the arguments on which it fails the
    expected one (None: a call of another tool). Each side's arguments are prepared once, under
    the rules of its tool (the case's rules for that tool)."""
    rules_of: dict[str, ArgumentRules | None] = {}
    got: dict[int, dict[str, Any] | str] = {}
    matrix: list[list[list[str] | None]] = []
    for e in expected:
        tool = e.tool
        if tool not in rules_of:
            rules_of[tool] = case.rules_for(tool)
        rules = rules_of[tool]
        want = _prepared(e.arguments, rules)
        row: list[list[str] | None] = []
        for j, c in enumerate(calls):
            if c.tool != tool:
                row.append(None)
                continue
            if j not in got:
                got[j] = _prepared(c.arguments, rules)
            row.append(_differences(want, got[j], tool, rules, similarity))
        matrix.append(row)
    return matrix
