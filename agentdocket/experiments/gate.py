"""The CI gate of a comparison: which scorers are tested together, what each one's outcome is,
what the gate says, and what it could not see.

- **Families.** With ``primary`` scorers named, they alone gate, adjusted among themselves
  (one primary: no adjustment); the others are adjusted among themselves and reported. With
  none named, every scorer gates.
- **Only hypotheses that can be rejected are counted.** A scorer with no case judged on both
  sides is "no data". Within a family, Holm's step-down runs with Tarone's refinement for
  discrete tests (:func:`agentdocket.experiments.stats.tarone_holm`): a scorer whose smallest
  attainable p-value cannot reach the threshold (too few cases changed) leaves the family.
- **One statistic per verdict.** Each scorer is decided at a threshold (its step's), and its
  estimate and interval are the inversion of that same test at that threshold
  (:meth:`~agentdocket.experiments.pairing.Paired.tested`): ``better`` or ``worse`` exactly
  when the interval leaves out zero, in the direction of the estimate.
- **Outcomes.** A gating scorer is ``worse`` (significant after the adjustment, or a case
  lost its answer), ``inconclusive`` (not significant, and the cases lean worse: the test
  cannot decide), ``better``, ``pass``, or ``no data``. The gate is ``worse`` when any gating
  scorer is (or one drops more than ``max_drop``), else ``no data`` when no gating scorer has
  any, else ``inconclusive`` when any is, else ``pass``. The command decides what fails
  (docs/experiments.md gives the policy and its simulation).
- **Words.** Each scorer gets a sentence; one that is inconclusive or passing says the
  smallest drop its test could flag and, when its cases leaned worse, how many cases (and
  repeats) would catch a drop like the one seen (:mod:`.power`). The gate never says "no
  regression" while cases regressed, and names what it could not see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentdocket.experiments import power, stats
from agentdocket.experiments.pairing import Paired

BETTER, WORSE, SAME = "better", "worse", "no detectable difference"
NO_DATA = "no data"
INCONCLUSIVE, PASS = "inconclusive", "pass"
OUTCOMES = (WORSE, INCONCLUSIVE, NO_DATA, PASS)  # the gate's, in the order they win


def decide(
    pairs: Mapping[str, Paired],
    *,
    alpha: float,
    primary: Sequence[str] = (),
    max_drop: float | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Each scorer's entry (test, estimate, interval, outcome, sentence) and the gate."""
    unknown = sorted(set(primary) - set(pairs))
    if unknown:
        raise KeyError(f"--primary names scorers not compared: {', '.join(unknown)}")
    gating = [n for n in pairs if n in primary] if primary else list(pairs)
    entries: dict[str, dict[str, Any]] = {}
    for family, names in (("gate", gating), ("reported", [n for n in pairs if n not in gating])):
        entries.update(_family(pairs, family, names, alpha))
    return {n: entries[n] for n in pairs}, _gate(pairs, entries, gating, primary, max_drop)


def _family(
    pairs: Mapping[str, Paired], family: str, names: Sequence[str], alpha: float
) -> dict[str, dict[str, Any]]:
    tested = [n for n in names if pairs[n].cases]
    found = [pairs[n].p_and_floor() for n in tested]
    adjusted = stats.tarone_holm([p for p, _ in found], [f for _, f in found], alpha)
    k = stats.tarone_k([f for _, f in found], alpha) if tested else 0
    out = {}
    for n in names:
        pair = pairs[n]
        entry = _base(pair)
        entry.update(family=family, family_size=k)
        if n not in tested:
            entry.update(
                status=NO_DATA,
                p_value=None,
                p_floor=None,
                p_adjusted=None,
                threshold=None,
                significant=False,
                verdict=NO_DATA,
                difference=_difference(pair, None),
            )
        else:
            i = tested.index(n)
            threshold = adjusted.thresholds[i]
            result = pair.tested(threshold)
            assert result.significant == adjusted.rejected[i], (n, result, adjusted)
            verdict = SAME
            if result.significant:
                verdict = BETTER if result.estimate > 0 else WORSE
            entry.update(
                status="tested" if adjusted.adjusted[i] is not None else "not testable",
                p_value=result.p_value,
                p_floor=result.floor,
                p_adjusted=adjusted.adjusted[i],
                threshold=threshold,
                significant=result.significant,
                verdict=verdict,
                difference=_difference(pair, result),
            )
        entry["outcome"] = _outcome(pair, entry)
        entry["detectable"] = _detectable(pair, entry)
        entry["summary"] = _sentence(n, pair, entry, k, alpha)
        out[n] = entry
    return out


def _base(pair: Paired) -> dict[str, Any]:
    repeats = pair.repeats
    return {
        "kind": "pass_fail" if pair.decides else "score",
        "test": ("mcnemar" if repeats == 1 else "sign") if pair.decides else "signed-rank",
        "baseline": pair.base.summary(pair.decides),
        "candidate": pair.cand.summary(pair.decides),
        "paired": len(pair.cases),
        "improved": len(pair.improved),
        "regressed": len(pair.regressed),
        "repeats": repeats,
        "lost_answers": pair.lost,
        "unpaired": pair.unpaired,
    }


def _measure(pair: Paired) -> str:
    if not pair.decides:
        return "Hodges-Lehmann shift of the cases that changed"
    if pair.repeats == 1:
        return "difference in pass rates"
    return "net share of cases that improved"


def _difference(pair: Paired, result: stats.Tested | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "measure": _measure(pair),
        "estimate": None,
        "ci_low": None,
        "ci_high": None,
        "level": None,
        "mean": pair.mean_difference,  # over every paired case; described, not tested
    }
    if result is not None:
        out.update(
            estimate=result.estimate,
            ci_low=result.low,
            ci_high=result.high,
            level=1 - result.threshold,
        )
    return out


def _outcome(pair: Paired, entry: Mapping[str, Any]) -> str:
    if pair.lost or entry["verdict"] == WORSE:
        return WORSE
    if entry["status"] == NO_DATA:
        return NO_DATA
    if entry["verdict"] == BETTER:
        return BETTER
    estimate = entry["difference"]["estimate"]
    if pair.regressed and estimate is not None and estimate < 0:
        return INCONCLUSIVE
    return PASS


def _detectable(pair: Paired, entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the test could see: the smallest drop it could flag and, when the cases leaned
    worse, the cases (and repeats) that would catch a drop like the one seen."""
    threshold = entry["threshold"]
    if threshold is None:
        return None
    n, k = len(pair.cases), pair.repeats
    out: dict[str, Any] = {"threshold": threshold, "cases": n, "repeats": k, "power": power.POWER}
    smallest = power.smallest_drop(n, k, threshold)
    out["fewest_cases"] = smallest[0] if smallest else stats.fewest_changes(threshold, 10**6)
    out["smallest_drop"] = smallest[1] if smallest and pair.decides else None
    out["flaggable"] = smallest is not None
    out["needed"] = _needed(pair, threshold)
    return out


def _needed(pair: Paired, threshold: float) -> list[dict[str, int | None]]:
    """The cases (at these repeats, and at more) that would catch the drop seen with chance
    :data:`power.POWER`; empty when the cases did not lean worse."""
    if len(pair.regressed) <= len(pair.improved):
        return []
    n, k = len(pair.cases), pair.repeats
    if not pair.decides:
        above = _above(pair.differences)
        changed = (len(pair.improved) + len(pair.regressed)) / n
        return [{"repeats": k, "cases": power.signed_rank_cases(above, changed, threshold)}]
    if k == 1:
        up, down = len(pair.improved) / n, len(pair.regressed) / n
        return [{"repeats": 1, "cases": power.sign_cases(up, down, threshold)}]
    base = _chances(pair, pair.base)
    cand = _chances(pair, pair.cand)
    out = []
    for repeats in (k, 5 if k < 5 else 2 * k):
        out.append({"repeats": repeats, "cases": _cases_for(base, cand, repeats, threshold)})
    return out


def _cases_for(base: list[float], cand: list[float], repeats: int, threshold: float) -> int | None:
    up, down = power.direction_chances(base, cand, repeats)
    return power.sign_cases(up, down, threshold)


def _chances(pair: Paired, side: Any) -> list[float]:
    passed = [round(side.value[c] * side.valued[c]) for c in pair.cases]
    return power.shrunk(passed, [side.valued[c] for c in pair.cases])


def _above(differences: Sequence[float]) -> float:
    """The share of Walsh averages (pairs of distinct changed cases) above zero, ties half."""
    d = [x for x in differences if x != 0]
    pairs = [(a + b) for i, a in enumerate(d) for b in d[i:]]
    if not pairs:
        return 0.5
    return (sum(1 for s in pairs if s > 0) + 0.5 * sum(1 for s in pairs if s == 0)) / len(pairs)


def _gate(
    pairs: Mapping[str, Paired],
    entries: Mapping[str, dict[str, Any]],
    gating: Sequence[str],
    primary: Sequence[str],
    max_drop: float | None,
) -> dict[str, Any]:
    reasons = []
    for name in gating:
        entry = entries[name]
        if entry["verdict"] == WORSE:
            reasons.append(entry["summary"])
        if pairs[name].lost:
            reasons.append(_lost(name, pairs[name]))
        mean = entry["difference"]["mean"]
        drop = -mean if mean is not None else None
        over = max_drop is not None and drop is not None and drop > max_drop
        entry["drop_over_limit"] = over
        if over and max_drop is not None and drop is not None:
            unit = " points" if entry["kind"] == "pass_fail" else ""
            scale = 100 if entry["kind"] == "pass_fail" else 1
            reasons.append(
                f"{name} dropped by {scale * drop:.3g}{unit} on average, over --max-drop "
                f"{scale * max_drop:.3g}{unit}"
            )
    undecided = [n for n in gating if entries[n]["outcome"] == INCONCLUSIVE]
    empty = [n for n in gating if entries[n]["outcome"] == NO_DATA]
    if reasons:
        outcome, verdict = WORSE, "regression: " + "; ".join(dict.fromkeys(reasons))
    elif gating and len(empty) == len(gating):
        outcome = NO_DATA
        verdict = (
            "no data: no gating scorer judged a case on both sides ("
            + ", ".join(empty)
            + "); nothing was tested"
        )
    elif undecided:
        outcome = INCONCLUSIVE
        verdict = "inconclusive: cases regressed and the test cannot decide: " + "; ".join(
            entries[n]["summary"] for n in undecided
        )
    else:
        outcome = PASS
        regressed = [n for n in gating if entries[n]["regressed"]]
        verdict = "pass: " + (
            "no case regressed"
            if not regressed
            else "no significant regression, and more cases improved than regressed: "
            + "; ".join(entries[n]["summary"] for n in regressed)
        )
    return {
        "scorers": list(gating),
        "primary": list(primary),
        "max_drop": max_drop,
        "method": "Holm with Tarone's refinement, within each family",
        "outcome": outcome,
        "verdict": verdict,
        "reasons": list(dict.fromkeys(reasons)),
        "unseen": _unseen(pairs, entries, gating),
    }


def _lost(name: str, pair: Paired) -> str:
    kinds: dict[str, int] = {}
    for found in pair.lost.values():
        for kind in found:
            kinds[kind] = kinds.get(kind, 0) + 1
    answered = sum(1 for c, n in pair.base.answered.items() if n and c in pair.cand.runs)
    shown = ", ".join(list(pair.lost)[:10]) + (" ..." if len(pair.lost) > 10 else "")
    return (
        f"{len(pair.lost)} of {answered} cases lost their answer on {name} "
        f"({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}): {shown}"
    )


def _unseen(
    pairs: Mapping[str, Paired], entries: Mapping[str, dict[str, Any]], gating: Sequence[str]
) -> list[str]:
    """What the gate could not see, a sentence each."""
    out = []
    for name in gating:
        pair, entry = pairs[name], entries[name]
        if entry["outcome"] == NO_DATA:
            out.append(f"{name}: no case judged on both sides")
        for where, cases in pair.unpaired.items():
            out.append(f"{name}: {len(cases)} cases run by the {where.replace(' only', '')} only")
        undecided = {
            side: sum(
                1
                for c, kinds in values.missing.items()
                if c not in values.value and all(k.startswith("judge:") for k in kinds)
            )
            for side, values in (("baseline", pair.base), ("candidate", pair.cand))
        }
        for side, count in undecided.items():
            if count:
                out.append(f"{name}: {count} cases the judge could not decide on the {side}")
        unjudged = pair.base.unjudged + pair.cand.unjudged
        if unjudged:
            out.append(f"{name}: {unjudged} runs without a verdict (not scored yet?)")
    return out


def _points(x: float) -> str:
    return f"{100 * x:.0f} points"


def _sentence(name: str, pair: Paired, entry: Mapping[str, Any], k: int, alpha: float) -> str:
    if entry["status"] == NO_DATA:
        text = f"{name}: no data (no case judged on both sides); not counted"
        if pair.lost:
            text += "; " + _lost(name, pair)
        return text
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
    d = entry["difference"]
    if entry["kind"] == "pass_fail":
        moved = (
            f"{entry['regressed']} of {entry['paired']} cases regressed and "
            f"{entry['improved']} improved on {name}"
        )
    else:
        before, after = entry["baseline"]["rate"], entry["candidate"]["rate"]
        moved = (
            f"{name} went from {before:.3f} to {after:.3f} on average over {entry['paired']} "
            f"cases ({entry['regressed']} cases lower, {entry['improved']} higher; "
            f"shift {d['estimate']:+.3f}, {_interval(d, score=True)})"
        )
    text = f"{moved} (p = {p:.3g}; {judged})"
    if pair.lost:
        text += "; " + _lost(name, pair)
    if entry["outcome"] in (INCONCLUSIVE, PASS) and entry["detectable"]:
        text += "; " + _power_words(pair, entry)
    return text


def _interval(d: Mapping[str, Any], score: bool) -> str:
    level = f"{100 * d['level']:.4g}%"
    if d["ci_low"] is None:
        return f"{level} interval unbounded (too few changed cases)"
    if score:
        return f"{level} CI {d['ci_low']:+.3f} to {d['ci_high']:+.3f}"
    return f"{level} CI {100 * d['ci_low']:+.1f} to {100 * d['ci_high']:+.1f} points"


def _power_words(pair: Paired, entry: Mapping[str, Any]) -> str:
    seen = entry["detectable"]
    n, k, t = seen["cases"], seen["repeats"], seen["threshold"]
    runs = "" if k == 1 else f" and {k} repeats"
    if pair.decides:
        if seen["flaggable"]:
            text = (
                f"with {n} cases{runs} the smallest drop it can flag at alpha {t:.3g} is "
                f"{_points(seen['smallest_drop'])} ({seen['fewest_cases']} cases doing worse, "
                "none better)"
            )
        else:
            text = (
                f"with {n} cases{runs} no drop can be flagged at alpha {t:.3g} (it takes "
                f"{seen['fewest_cases']} cases doing worse, none better)"
            )
    else:
        text = (
            f"with {n} cases a shift can be flagged at alpha {t:.3g} only once "
            f"{seen['fewest_cases']} or more cases change, nearly all the same way"
        )
    options = [
        f"{x['cases']} cases" + ("" if x["repeats"] == 1 else f" with {x['repeats']} repeats")
        for x in seen["needed"]
        if x["cases"] is not None
    ]
    if options:
        size = -entry["difference"]["mean"]
        drop = _points(size) if pair.decides else f"{size:.3g}"
        text += (
            f"; a drop like the one seen ({drop}) would be caught {power.POWER:.0%} of the time "
            f"with about {', or '.join(options)}"
        )
    return text
