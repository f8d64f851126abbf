"""The comparison's gate: which scorers count, what it says, and (by simulation) that its
family-wise error rate stays at or below alpha under no difference, and that what it claims it
can detect it detects."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from agentdocket.experiments import stats
from agentdocket.experiments.compare import WORSE, Judged, Side, compare

CASES = [f"c{i:02d}" for i in range(10)]


def _side(label: str, n: int) -> Side:
    return Side(label, {case: [f"{label}-{case}"] for case in CASES[:n]})


def _judged(label: str, passed: list[bool | None], score: list[float | None] | None = None):
    out = {}
    for i, p in enumerate(passed):
        s = None if score is None else score[i]
        out[f"{label}-{CASES[i]}"] = Judged(p, s, None if p or p is None else "slot_fill:x")
    return out


def _users_case() -> dict[str, dict[str, Judged]]:
    """What a new user saw: version 1.1 passes tools.slot_fill on 3 of 10 cases against 10 of
    10 (tools.procedural repeats it), the planner passes everything on both sides,
    interaction.metrics judged nothing, response.similarity only scores."""
    regressed = [True] * 3 + [False] * 7
    verdicts: dict[str, dict[str, Judged]] = {}
    for name in ("tools.slot_fill", "tools.procedural"):
        verdicts[name] = {**_judged("A", [True] * 10), **_judged("B", regressed)}
    verdicts["planner.suffix_match"] = {**_judged("A", [True] * 10), **_judged("B", [True] * 10)}
    verdicts["interaction.metrics"] = {}
    sim_a = [0.91, 0.88, 0.93, 0.90, 0.87, 0.92, 0.89, 0.90, 0.91, 0.88]
    sim_b = [0.90, 0.89, 0.95, 0.91, 0.84, 0.96, 0.88, 0.94, 0.92, 0.83]
    verdicts["response.similarity"] = {
        **_judged("A", [None] * 10, list(sim_a)),
        **_judged("B", [None] * 10, list(sim_b)),
    }
    return verdicts


def test_seven_of_ten_regressions_fail_the_gate_with_every_scorer_selected() -> None:
    result = compare(_side("A", 10), _side("B", 10), _users_case(), resamples=500)
    slot = result["scorers"]["tools.slot_fill"]
    assert (slot["regressed"], slot["p_value"]) == (7, pytest.approx(2 * 0.5**7))
    assert result["scorers"]["interaction.metrics"]["status"] == "no data"
    assert result["scorers"]["planner.suffix_match"]["status"] == "not testable"
    # counted: slot_fill, procedural and similarity; the planner (no case changed) and
    # interaction.metrics (no data) cost nothing
    assert slot["family_size"] == 3 and slot["significant"] and slot["verdict"] == WORSE
    assert slot["summary"].startswith(
        "7 of 10 cases regressed and 0 improved on tools.slot_fill (p = 0.0156; significant "
        "after adjusting for 3 scorers)"
    )
    assert result["regression"] is True
    assert result["gate"]["verdict"].startswith("regression: 7 of 10 cases regressed")
    # each changed case once, with every scorer's values; a score-only scorer its values
    assert [c["case_id"] for c in result["cases"]][:7] == CASES[3:10]
    assert len(result["cases"]) == len({c["case_id"] for c in result["cases"]})
    c05 = next(c for c in result["cases"] if c["case_id"] == "c05")
    assert c05["change"] == {
        "tools.slot_fill": "regressed",
        "tools.procedural": "regressed",
        "response.similarity": "improved",
    }
    similarity = c05["scorers"]["response.similarity"]
    assert (similarity["baseline"]["value"], similarity["candidate"]["value"]) == (0.92, 0.96)
    assert "passed" not in str(similarity["baseline"])


def test_the_markdown_says_which_scorer_and_which_cases() -> None:
    from agentdocket.experiments.comparison_text import markdown

    result = compare(_side("A", 10), _side("B", 10), _users_case(), resamples=500)
    result["dataset"] = "mine"
    text = markdown(result)
    assert "**regression: 7 of 10 cases regressed and 0 improved on tools.slot_fill" in text
    assert "no regression" not in text
    for case in CASES[3:]:
        assert f"{case}: tools.slot_fill regressed, tools.procedural regressed" in text, text
    assert "tools.slot_fill passed -> slot_fill:x" in text
    assert "response.similarity 0.920 -> 0.960" in text


def test_a_small_regression_is_never_called_no_regression() -> None:
    passed = [True] * 8 + [False] * 2  # 2 of 10 regressed: not significant
    verdicts = {"tools.slot_fill": {**_judged("A", [True] * 10), **_judged("B", passed)}}
    result = compare(_side("A", 10), _side("B", 10), verdicts, resamples=500)
    entry = result["scorers"]["tools.slot_fill"]
    assert result["regression"] is False and entry["status"] == "not testable"
    assert "cannot be significant with 2 changed cases" in entry["summary"]
    assert result["gate"]["verdict"].startswith("no significant regression, but cases regressed")
    # 6 regressed and 1 improved: testable (7 changed), not significant (p = 0.125)
    before = [False] + [True] * 9
    after = [True] + [False] * 6 + [True] * 3
    verdicts = {"tools.slot_fill": {**_judged("A", before), **_judged("B", after)}}
    entry = compare(_side("A", 10), _side("B", 10), verdicts, resamples=500)["scorers"][
        "tools.slot_fill"
    ]
    assert entry["status"] == "tested" and not entry["significant"]
    assert entry["summary"].endswith("it detects 6 or more cases changing the same way")


def test_primary_scorers_gate_alone_and_max_drop_fails_without_significance() -> None:
    verdicts = _users_case()
    result = compare(
        _side("A", 10), _side("B", 10), verdicts, resamples=500, primary=["tools.slot_fill"]
    )
    slot = result["scorers"]["tools.slot_fill"]
    assert slot["family"] == "gate" and slot["family_size"] == 1
    assert slot["summary"].endswith("(p = 0.0156; significant at 0.05)")
    assert result["scorers"]["tools.procedural"]["family"] == "reported"
    assert result["gate"]["scorers"] == ["tools.slot_fill"] and result["regression"]
    passed = [True] * 8 + [False] * 2
    small = {"tools.slot_fill": {**_judged("A", [True] * 10), **_judged("B", passed)}}
    assert not compare(_side("A", 10), _side("B", 10), small, resamples=500)["regression"]
    gated = compare(_side("A", 10), _side("B", 10), small, resamples=500, max_drop=0.1)
    assert gated["regression"]
    assert (
        "tools.slot_fill dropped by 20 points, over --max-drop 10 points"
        in (gated["gate"]["verdict"])
    )
    with pytest.raises(KeyError):
        compare(_side("A", 10), _side("B", 10), small, primary=["nope"])


def test_what_it_claims_to_detect_it_detects() -> None:
    """With n cases and K scorers tested, "it detects k or more cases changing the same way":
    k one-way changes are significant, k - 1 are not."""
    for n, k_scorers in itertools.product((6, 10, 20, 40), (1, 2, 3, 5)):
        threshold = 0.05 / k_scorers
        k = next((m for m in range(1, n + 1) if stats.sign_test_floor(m) <= threshold), None)
        if k is None:
            continue
        assert stats.sign_test(0, k) <= threshold < stats.sign_test(0, k - 1)


@pytest.mark.slow
def test_the_family_wise_error_rate_stays_at_or_below_alpha_under_no_difference() -> None:
    """4,000 simulated comparisons under no difference with the default scorer mix: pass/fail
    scorers of every difficulty (some nearly always passing, so with few changed cases), two
    that repeat each other, a score-only one, one with no data, 10 to 30 cases. The share of
    comparisons that call any scorer better or worse is at most alpha (within 3 standard
    errors)."""
    rng = np.random.default_rng(28)
    sims, alpha, false = 4000, 0.05, 0
    for k in range(sims):
        n = int(rng.integers(10, 31))
        cases = [f"c{i}" for i in range(n)]
        sides = [Side(s, {c: [f"{s}-{c}"] for c in cases}) for s in "AB"]
        verdicts: dict[str, dict[str, Judged]] = {"no-data": {}}
        for name, low, high in (("easy", 0.9, 1.0), ("mid", 0.3, 0.9), ("hard", 0.0, 0.3)):
            chance = rng.uniform(low, high, size=n)
            verdicts[name] = {
                f"{s}-{c}": Judged(bool(rng.random() < chance[i]), None)
                for s in "AB"
                for i, c in enumerate(cases)
            }
        verdicts["mid-again"] = dict(verdicts["mid"])  # procedural repeats slot_fill
        level = rng.uniform(0.5, 0.9, size=n)
        verdicts["score"] = {
            f"{s}-{c}": Judged(None, float(level[i] + rng.normal(0, 0.05)))
            for s in "AB"
            for i, c in enumerate(cases)
        }
        result = compare(sides[0], sides[1], verdicts, resamples=100, seed=k)
        false += any(s["significant"] for s in result["scorers"].values())
    rate, se = false / sims, (alpha * (1 - alpha) / sims) ** 0.5
    assert rate <= alpha + 3 * se, rate


@pytest.mark.slow
def test_the_tarone_holm_procedure_keeps_the_error_rate_on_independent_nulls() -> None:
    """The adjustment alone, on 20,000 families of 1 to 8 independent exact tests under the
    null with 0 to 12 changed cases each: family-wise error at most alpha."""
    rng = np.random.default_rng(7)
    sims, alpha, false = 20_000, 0.05, 0
    for _ in range(sims):
        m = int(rng.integers(1, 9))
        changed = rng.integers(0, 13, size=m)
        regressed = [int(rng.binomial(c, 0.5)) for c in changed]
        p = [stats.sign_test(int(c) - r, r) for c, r in zip(changed, regressed, strict=True)]
        floors = [stats.sign_test_floor(int(c)) for c in changed]
        rejected, _ = stats.tarone_holm(p, floors, alpha)
        false += any(rejected)
    rate, se = false / sims, (alpha * (1 - alpha) / sims) ** 0.5
    assert rate <= alpha + 3 * se, rate
