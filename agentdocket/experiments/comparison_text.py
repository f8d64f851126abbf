"""A comparison's result (what ``agentdocket compare --format json`` prints) as text: the rows
of its table, the cases that changed, and the whole as a pull-request comment."""

from __future__ import annotations

from typing import Any

from agentdocket.experiments.trajectory import render


def _pct(x: float | None, score: bool) -> str:
    if x is None:
        return "-"
    return f"{x:.3f}" if score else f"{100 * x:.1f}%"


def rows(result: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, s in result["scorers"].items():
        score = s["kind"] == "score"
        d = s["difference"]
        interval = (
            f"{_signed(d['estimate'], score)} [{_signed(d['ci_low'], score)}, "
            f"{_signed(d['ci_high'], score)}]"
            if d["estimate"] is not None
            else "-"
        )
        rows.append(
            [
                name,
                f"{_pct(s['baseline']['rate'], score)} (n={s['baseline']['n']})",
                f"{_pct(s['candidate']['rate'], score)} (n={s['candidate']['n']})",
                interval,
                f"+{s['improved']} / -{s['regressed']}",
                _p(s),
                s["verdict"]
                + (" (gate)" if s["family"] == "gate" and result["gate"]["primary"] else ""),
            ]
        )
    return rows


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
    "difference [95% CI]",
    "improved / regressed",
    "p (adjusted)",
    "verdict",
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
    """A scorer's value on one side of a case: passed or its failure types, or the score."""
    got = c[side]
    if c["kind"] == "score":
        return f"{got['value']:.3f}"
    if got["value"] >= 1:
        return "passed"
    failed = ", ".join(got["failure_types"]) or "failed"
    return failed if got["value"] <= 0 else f"{100 * got['value']:.0f}% passed ({failed})"


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
    out.append(f"**{verdict}**" if result["regression"] else verdict)
    out.append("")
    out.append(
        f"(alpha {result['alpha']}; {gate['method']}; 95% paired bootstrap intervals, "
        f"{result['resamples']} resamples of the cases)"
    )
    changed = changed_cases(result)
    if changed:
        out += ["", "<details><summary>cases that changed</summary>", "", "```diff"]
        out += changed
        out += ["```", "</details>"]
    return "\n".join(out) + "\n"
