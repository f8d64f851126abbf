"""A comparison's result (what ``agentdocket compare --format json`` prints) as text: the rows
of its table, the cases that changed, what the gate could not see, and the whole as a
pull-request comment."""

from __future__ import annotations

from typing import Any

from agentdocket.experiments.trajectory import render


def _pct(x: float | None, score: bool) -> str:
    if x is None:
        return "-"
    return f"{x:.3f}" if score else f"{100 * x:.1f}%"


def _cell(side: dict[str, Any], score: bool) -> str:
    text = f"{_pct(side['rate'], score)} (n={side['n']}"
    if side["missing"]:
        text += f", {side['missing']} missing"
        if side.get("unparseable"):
            text += f" ({side['unparseable']} unparseable)"
    return text + ")"


def rows(result: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, s in result["scorers"].items():
        score = s["kind"] == "score"
        rows.append(
            [
                name,
                _cell(s["baseline"], score),
                _cell(s["candidate"], score),
                _difference(s["difference"], score),
                f"+{s['improved']} / -{s['regressed']}",
                _p(s),
                s["outcome"]
                + (" (gate)" if s["family"] == "gate" and result["gate"]["primary"] else ""),
            ]
        )
    return rows


def _difference(d: dict[str, Any], score: bool) -> str:
    if d["estimate"] is None:
        return "-"
    level = "" if abs(d["level"] - 0.95) < 1e-9 else f" ({100 * d['level']:.4g}%)"
    if d["ci_low"] is None:
        return f"{_signed(d['estimate'], score)} [unbounded]"
    return (
        f"{_signed(d['estimate'], score)} [{_signed(d['ci_low'], score)}, "
        f"{_signed(d['ci_high'], score)}]{level}"
    )


def _p(s: dict[str, Any]) -> str:
    if s["status"] == "no data":
        return "no data"
    if s["status"] == "not testable":
        return f"{s['p_value']:.3g} (not testable)"
    return f"{s['p_value']:.3g} ({s['p_adjusted']:.3g})"


def _signed(x: float | None, score: bool) -> str:
    if x is None:
        return "-"
    return f"{x:+.3f}" if score else f"{100 * x:+.1f} pt"


HEADERS = [
    "scorer",
    "baseline",
    "candidate",
    "difference [CI]",
    "improved / regressed",
    "p (adjusted)",
    "outcome",
]


def changed_cases(result: dict[str, Any], limit: int = 20) -> list[str]:
    """Lines on the cases that changed, each once, with every scorer's value on both sides
    and the trajectory diff."""
    lines = []
    for case in result["cases"][:limit]:
        parts = []
        for name, c in case["scorers"].items():
            parts.append(f"{name} {_side(c, 'baseline')} -> {_side(c, 'candidate')}")
        changed = ", ".join(f"{n} {how}" for n, how in case["change"].items())
        lines.append(f"{case['case_id']}: {changed}")
        lines.extend(f"    {part}" for part in parts)
        lines.extend(f"    {line}" for line in render(case.get("trajectory", [])))
    if len(result["cases"]) > limit:
        lines.append(f"... {len(result['cases']) - limit} more cases (--format json)")
    return lines


def _side(c: dict[str, Any], side: str) -> str:
    """A scorer's value on one side of a case: passed, its failure types or what is missing,
    or the score."""
    got = c[side]
    if got["value"] is None:
        return "no answer (" + (", ".join(got["missing"]) or "missing") + ")"
    if c["kind"] == "score":
        return f"{got['value']:.3f}"
    if got["value"] >= 1:
        return "passed"
    failed = ", ".join(got["failure_types"]) or "failed"
    return failed if got["value"] <= 0 else f"{100 * got['value']:.0f}% passed ({failed})"


def unseen(result: dict[str, Any]) -> list[str]:
    """What the gate could not see, a line each."""
    return [f"not seen: {line}" for line in result["gate"]["unseen"]]


def markdown(result: dict[str, Any]) -> str:
    """The comparison as a pull-request comment."""
    out = [
        f"### agentdocket: `{result['candidate']}` against `{result['baseline']}` on "
        f"`{result['dataset']}`",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "| " + " | ".join("---" for _ in HEADERS) + " |",
    ]
    out += ["| " + " | ".join(row) + " |" for row in rows(result)]
    out.append("")
    out += [f"- {s['summary']}" for s in result["scorers"].values()]
    if "cost" in result:
        out.append(f"- {result['cost']['summary']}")
    out.append("")
    gate = result["gate"]
    verdict = gate["verdict"]
    out.append(f"**{verdict}**" if gate["outcome"] != "pass" else verdict)
    out += [f"- {line}" for line in unseen(result)]
    out.append("")
    out.append(
        f"(alpha {result['alpha']}; {gate['method']}; each interval inverts its scorer's test "
        "at the threshold it was decided at)"
    )
    changed = changed_cases(result)
    if changed:
        out += ["", "<details><summary>cases that changed</summary>", "", "```diff"]
        out += changed
        out += ["```", "</details>"]
    return "\n".join(out) + "\n"
