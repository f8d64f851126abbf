"""A trajectory diff: two runs' tool calls aligned, step by step.

The alignment is a minimum-cost edit script: a call kept with the same tool and arguments
costs nothing, with the same tool and other arguments half a step (``changed``), with another
tool one and a half (``substituted``: cheaper than deleting one call and inserting another,
dearer than either, so that a call kept elsewhere in the sequence is aligned with itself); a
call only one side made costs one step (``inserted`` in the candidate, ``deleted`` from the
baseline).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Call = tuple[str, Any]  # (tool, arguments)


def _cost(a: Call, b: Call) -> float:
    if a[0] != b[0]:
        return 1.5
    return 0.0 if a[1] == b[1] else 0.5


def _changed_arguments(a: Any, b: Any) -> dict[str, list[Any]]:
    if not isinstance(a, Mapping) or not isinstance(b, Mapping):
        return {"(arguments)": [a, b]}
    return {k: [a.get(k), b.get(k)] for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


def diff(baseline: Sequence[Call], candidate: Sequence[Call]) -> list[dict[str, Any]]:
    """The steps of the alignment, in order: ``{"op": same | changed | substituted | inserted |
    deleted, "baseline": {tool, arguments} | None, "candidate": ... | None}``, with
    ``"arguments"`` (name -> [baseline, candidate]) on a changed step."""
    n, m = len(baseline), len(candidate)
    cost = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        cost[i][0] = float(i)
    for j in range(1, m + 1):
        cost[0][j] = float(j)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost[i][j] = min(
                cost[i - 1][j - 1] + _cost(baseline[i - 1], candidate[j - 1]),
                cost[i - 1][j] + 1,
                cost[i][j - 1] + 1,
            )
    steps: list[dict[str, Any]] = []
    i, j = n, m
    while i > 0 or j > 0:
        if i > 0 and j > 0:
            a, b = baseline[i - 1], candidate[j - 1]
            if cost[i][j] == cost[i - 1][j - 1] + _cost(a, b):
                step = {"op": _op(a, b), "baseline": _call(a), "candidate": _call(b)}
                if step["op"] == "changed":
                    step["arguments"] = _changed_arguments(a[1], b[1])
                steps.append(step)
                i, j = i - 1, j - 1
                continue
        if i > 0 and cost[i][j] == cost[i - 1][j] + 1:
            steps.append({"op": "deleted", "baseline": _call(baseline[i - 1]), "candidate": None})
            i -= 1
        else:
            steps.append({"op": "inserted", "baseline": None, "candidate": _call(candidate[j - 1])})
            j -= 1
    return steps[::-1]


def _op(a: Call, b: Call) -> str:
    if a[0] != b[0]:
        return "substituted"
    return "same" if a[1] == b[1] else "changed"


def _call(call: Call) -> dict[str, Any]:
    return {"tool": call[0], "arguments": call[1]}


def render(steps: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per step, for tables and pull-request comments."""
    marks = {"same": " ", "changed": "~", "substituted": "!", "inserted": "+", "deleted": "-"}
    lines = []
    for s in steps:
        a, b = s["baseline"], s["candidate"]
        if s["op"] == "same":
            text = a["tool"]
        elif s["op"] == "changed":
            changes = ", ".join(f"{k}: {v[0]!r} -> {v[1]!r}" for k, v in s["arguments"].items())
            text = f"{a['tool']} ({changes})"
        elif s["op"] == "substituted":
            text = f"{a['tool']} -> {b['tool']}"
        else:
            text = (b or a)["tool"]
        lines.append(f"{marks[str(s['op'])]} {text}")
    return lines
