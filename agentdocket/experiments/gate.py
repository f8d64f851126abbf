"""The CI gate of a comparison: which scorers are tested together, what is significant, and
what a reviewer reads.

- **Families.** With ``primary`` scorers named, they alone gate, adjusted among themselves
  (one primary: no adjustment); the others are adjusted among themselves and reported. With
  none named, every scorer gates.
- **Only hypotheses that can be rejected are counted.** A scorer with no case judged on both
  sides is "no data". Within a family, Holm's step-down runs with Tarone's refinement for
  discrete tests (:func:`agentdocket.experiments.stats.tarone_holm`): a scorer whose smallest
  attainable p-value cannot reach the threshold (too few cases changed) leaves the family, and
  says so.
- **Practical size.** ``max_drop`` fails the gate when a gating scorer's estimated drop
  (baseline - candidate: pass rate, or mean score) is larger, significant or not.
- **Words.** Each scorer gets a sentence ("7 of 10 cases regressed on tools.slot_fill (p =
  0.0156; significant after adjusting for 3 scorers)"), a pass/fail scorer the smallest
  number of one-way changes its test could detect; the gate never says "no regression" while
  cases regressed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentdocket.experiments import stats

BETTER, WORSE, SAME = "better", "worse", "no detectable difference"
NO_DATA = "no data"


def decide(
    scorers: dict[str, dict[str, Any]],
    *,
    alpha: float,
    primary: Sequence[str] = (),
    max_drop: float | None = None,
) -> dict[str, Any]:
    """Adjust each family, set each scorer's verdict and sentence (in ``scorers``, in place),
    and the gate: ``{"regression": bool, "gate": {...}}``."""
    unknown = sorted(set(primary) - set(scorers))
    if unknown:
        raise KeyError(f"--primary names scorers not compared: {', '.join(unknown)}")
    gating = [n for n in scorers if n in primary] if primary else list(scorers)
    families = [("gate", gating), ("reported", [n for n in scorers if n not in gating])]
    for family, names in families:
        _adjust(scorers, family, names, alpha)
    reasons = []
    for name in gating:
        entry = scorers[name]
        if entry["verdict"] == WORSE:
            reasons.append(entry["summary"])
        estimate = entry["difference"]["estimate"]
        drop = -estimate if estimate is not None else None
        over = max_drop is not None and drop is not None and drop > max_drop
        entry["drop_over_limit"] = over
        if over and max_drop is not None and drop is not None:
            unit = " points" if entry["kind"] == "pass_fail" else ""
            scale = 100 if entry["kind"] == "pass_fail" else 1
            reasons.append(
                f"{name} dropped by {scale * drop:.3g}{unit}, over --max-drop "
                f"{scale * max_drop:.3g}{unit}"
            )
    regressed = [n for n in scorers if scorers[n].get("regressed")]
    if reasons:
        verdict = "regression: " + "; ".join(reasons)
    elif regressed:
        verdict = "no significant regression, but cases regressed: " + "; ".join(
            scorers[n]["summary"] for n in regressed
        )
    else:
        verdict = "no regression: no case regressed"
    return {
        "regression": bool(reasons),
        "gate": {
            "scorers": gating,
            "primary": list(primary),
            "max_drop": max_drop,
            "method": "Holm with Tarone's refinement, within each family",
            "verdict": verdict,
            "reasons": reasons,
        },
    }


def _adjust(
    scorers: dict[str, dict[str, Any]], family: str, names: Sequence[str], alpha: float
) -> None:
    tested = [n for n in names if scorers[n]["paired"]]
    p_values = [scorers[n]["p_value"] for n in tested]
    floors = [scorers[n]["p_floor"] for n in tested]
    rejected, adjusted = stats.tarone_holm(p_values, floors, alpha)
    k = stats.tarone_k(floors, alpha) if tested else 0
    for n in names:
        entry = scorers[n]
        entry["family"] = family
        entry["family_size"] = k
        if n not in tested:
            entry.update(status=NO_DATA, p_adjusted=None, significant=False, verdict=NO_DATA)
            entry["summary"] = f"{n}: no data (no case judged on both sides); not counted"
            continue
        i = tested.index(n)
        testable = adjusted[i] is not None
        estimate = entry["difference"]["estimate"] or 0.0
        verdict = SAME
        if rejected[i]:
            verdict = BETTER if estimate > 0 else WORSE if estimate < 0 else SAME
        entry.update(
            status="tested" if testable else "not testable",
            p_adjusted=adjusted[i],
            significant=rejected[i],
            verdict=verdict,
            threshold=alpha / k if k else alpha,
        )
        if entry["kind"] == "pass_fail":
            entry["detectable_cases"] = _detectable(entry["threshold"], entry["paired"])
        entry["summary"] = _sentence(n, entry, k, alpha)


def _detectable(threshold: float, paired: int) -> int | None:
    """The fewest cases that must all change one way for the exact test to reach
    ``threshold`` (None: more than the paired cases)."""
    for m in range(1, paired + 1):
        if stats.sign_test_floor(m) <= threshold:
            return m
    return None


def _sentence(name: str, entry: Mapping[str, Any], k: int, alpha: float) -> str:
    p = entry["p_value"]
    if entry["status"] == "not testable":
        judged = (
            f"cannot be significant with {entry['improved'] + entry['regressed']} changed cases "
            f"(the smallest p it could reach is {entry['p_floor']:.3g}); left out of the "
            "adjustment"
        )
    elif k > 1:
        judged = (
            f"{'significant' if entry['significant'] else 'not significant'} after adjusting "
            f"for {k} scorers"
        )
    else:
        judged = f"{'significant' if entry['significant'] else 'not significant'} at {alpha:g}"
    if entry["kind"] == "pass_fail":
        moved = (
            f"{entry['regressed']} of {entry['paired']} cases regressed and "
            f"{entry['improved']} improved on {name}"
        )
    else:
        before, after = entry["baseline"]["rate"], entry["candidate"]["rate"]
        d = entry["difference"]
        moved = (
            f"{name} went from {before:.3f} to {after:.3f} on average over {entry['paired']} "
            f"cases (difference {d['estimate']:+.3f}, 95% CI {d['ci_low']:+.3f} to "
            f"{d['ci_high']:+.3f}; {entry['regressed']} cases lower, {entry['improved']} higher)"
        )
    text = f"{moved} (p = {p:.3g}; {judged})"
    detectable = entry.get("detectable_cases")
    if entry["kind"] == "pass_fail" and entry["status"] == "tested" and not entry["significant"]:
        if detectable is None:
            text += f"; with {entry['paired']} cases no change could be detected"
        else:
            text += f"; it detects {detectable} or more cases changing the same way"
    return text
