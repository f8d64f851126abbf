"""The comparison's gate: which scorers count, what each outcome is and says (worse,
inconclusive, pass, no data; lost answers), what it claims it can see, and by simulation that
its error rate stays at or below alpha under no difference, with repeats and cases of every
difficulty."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from agentdocket.experiments import power, stats
from agentdocket.experiments.compare import WORSE, Judged, Side, compare
from agentdocket.experiments.comparison_text import rows

CASES = [f"c{i:02d}" for i in range(20)]


def _side(label: str, n: int, repeats: int = 1, errors: dict[str, str] | None = None) -> Side:
    runs = {case: [f"{label}-{case}-{r}" for r in range(repeats)] for case in CASES[:n]}
    return Side(label, runs, errors or {})


def _judged(
    label: str, passed: list[bool | None], score: list[float | None] | None = None
) -> dict[str, Judged]:
    out = {}
    for i, p in enumerate(passed):
        s = None if score is None else score[i]
        out[f"{label}-{CASES[i]}-0"] = Judged(p, s, None if p or p is None else "slot_fill:x")
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
    result = compare(_side("A", 10), _side("B", 10), _users_case())
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
    assert result["regression"] is True and result["outcome"] == "worse"
    assert result["gate"]["verdict"].startswith("regression: 7 of 10 cases regressed")
    # what the gate could not see is said
    assert "interaction.metrics: no case judged on both sides" in result["gate"]["unseen"]
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

    result = compare(_side("A", 10), _side("B", 10), _users_case())
    result["dataset"] = "mine"
    text = markdown(result)
    assert "**regression: 7 of 10 cases regressed and 0 improved on tools.slot_fill" in text
    assert "no regression" not in text
    for case in CASES[3:10]:
        assert f"{case}: tools.slot_fill regressed, tools.procedural regressed" in text, text
    assert "tools.slot_fill passed -> slot_fill:x" in text
    assert "response.similarity 0.920 -> 0.960" in text
    assert "- not seen: interaction.metrics: no case judged on both sides" in text


def test_the_direction_follows_the_test_not_the_mean() -> None:
    """Fifteen cases fall by 0.05 and one rises by 1.0: the mean rises (+0.016) but the
    signed-rank test says worse; the verdict is worse, its estimate (the Hodges-Lehmann shift)
    is -0.05 inside an interval below zero, and the mean is reported apart."""
    n = 16
    before = [0.5] * 15 + [0.0]
    after = [0.45] * 15 + [1.0]
    verdicts = {
        "judge.score": {
            **_judged("A", [None] * n, list(before)),
            **_judged("B", [None] * n, list(after)),
        }
    }
    result = compare(_side("A", n), _side("B", n), verdicts)
    entry = result["scorers"]["judge.score"]
    d = entry["difference"]
    assert entry["verdict"] == WORSE and entry["outcome"] == "worse" and result["regression"]
    assert d["estimate"] == pytest.approx(-0.05) and d["ci_high"] < 0
    assert d["mean"] == pytest.approx(0.015625) and d["measure"].startswith("Hodges-Lehmann")
    assert entry["p_value"] < 0.01


def test_a_small_regression_is_inconclusive_and_says_what_it_cannot_see() -> None:
    """3 of 6 cases go from pass to fail: the exact test cannot reach 0.05 with 3 changed
    cases. The gate is inconclusive (not a pass), and says the smallest drop 6 cases can show
    and how many cases would catch this one."""
    verdicts = {
        "tools.slot_fill": {
            **_judged("A", [True] * 6),
            **_judged("B", [True] * 3 + [False] * 3),
        }
    }
    result = compare(_side("A", 6), _side("B", 6), verdicts)
    entry = result["scorers"]["tools.slot_fill"]
    assert result["outcome"] == entry["outcome"] == "inconclusive" and not result["regression"]
    assert result["gate"]["verdict"].startswith("inconclusive: cases regressed")
    assert "cannot be significant with 3 changed cases" in entry["summary"]
    assert (
        "with 6 cases the smallest drop it can flag at alpha 0.05 is 100 points (6 cases doing "
        "worse, none better)" in entry["summary"]
    )
    needed = entry["detectable"]["needed"][0]["cases"]
    assert needed is not None and 10 < needed < 30, needed
    assert f"would be caught 80% of the time with about {needed} cases" in entry["summary"]
    # the claim holds: at that many cases the drop seen (half the cases regressing, none
    # improving) is flagged at least 80% of the time, at a third fewer it is not
    assert power.sign_power(needed, 0.0, 0.5, 0.05) >= 0.8
    assert power.sign_power(needed * 2 // 3, 0.0, 0.5, 0.05) < 0.8


def test_an_identical_candidate_passes() -> None:
    verdicts = {
        "tools.slot_fill": {
            **_judged("A", [True, False, True, True, False, True]),
            **_judged("B", [True, False, True, True, False, True]),
        }
    }
    result = compare(_side("A", 6), _side("B", 6), verdicts)
    assert result["outcome"] == "pass" and not result["regression"]
    assert result["gate"]["verdict"] == "pass: no case regressed"
    entry = result["scorers"]["tools.slot_fill"]
    assert "the smallest drop it can flag at alpha 0.05 is 100 points" in entry["summary"]


def test_a_lost_answer_is_a_failure_and_fails_the_gate_by_name() -> None:
    """The candidate stops answering 4 of 6 cases (2 without a response, 1 error, 1 timeout):
    for a pass/fail scorer those are failures, not absent cases; for a score scorer they
    cannot be paired but are named; the gate fails naming them."""
    errors = {"B-c02-0": "RuntimeError: boom", "B-c03-0": "timed out after 30 s"}
    base, cand = _side("A", 6), _side("B", 6, errors=errors)
    lost = {f"B-{c}-0": Judged(None, None, "response:missing") for c in CASES[:2]}
    verdicts = {
        "answer.reference": {
            **_judged("A", [True] * 6),
            **lost,
            **{f"B-{c}-0": Judged(True, None) for c in CASES[4:6]},
        },
        "response.similarity": {
            **_judged("A", [None] * 6, [0.9] * 6),
            **lost,
            **{f"B-{c}-0": Judged(None, 0.9) for c in CASES[4:6]},
        },
    }
    result = compare(base, cand, verdicts)
    ref = result["scorers"]["answer.reference"]
    assert ref["paired"] == 6 and ref["regressed"] == 4
    assert ref["candidate"]["missing_kinds"] == {
        "agent:error": 1,
        "agent:timeout": 1,
        "response:missing": 2,
    }
    assert set(ref["lost_answers"]) == set(CASES[:4])
    assert result["scorers"]["response.similarity"]["paired"] == 2
    assert result["outcome"] == "worse" and result["regression"]
    reason = (
        "4 of 6 cases lost their answer on answer.reference (agent:error 1, agent:timeout 1, "
        "response:missing 2): c00, c01, c02, c03"
    )
    assert reason in result["gate"]["reasons"]
    assert result["cases"][0]["change"]["answer.reference"] == "lost its answer"


def test_a_judge_that_failed_is_nobodys_failure_but_is_counted() -> None:
    verdicts = {
        "answer.reference": {
            **_judged("A", [True] * 6),
            **_judged("B", [True] * 4),
            "B-c04-0": Judged(None, None, "judge:unparseable"),
            "B-c05-0": Judged(None, None, "judge:error"),
        }
    }
    result = compare(_side("A", 6), _side("B", 6), verdicts)
    entry = result["scorers"]["answer.reference"]
    assert entry["paired"] == 4 and entry["regressed"] == 0 and not entry["lost_answers"]
    assert entry["candidate"]["missing"] == 2 and entry["candidate"]["unparseable"] == 1
    assert "(n=4, 2 missing (1 unparseable))" in rows(result)[0][2]
    assert (
        "answer.reference: 2 cases the judge could not decide on the candidate"
        in (result["gate"]["unseen"])
    )


def test_no_data_is_not_a_pass() -> None:
    verdicts: dict[str, dict[str, Judged]] = {"tools.slot_fill": _judged("A", [True] * 6)}
    result = compare(_side("A", 6), _side("B", 6), verdicts)
    assert result["outcome"] == "no data" and not result["regression"]
    assert result["gate"]["verdict"].startswith("no data: no gating scorer judged a case")


def test_primary_scorers_gate_alone_and_max_drop_fails_without_significance() -> None:
    verdicts = _users_case()
    result = compare(_side("A", 10), _side("B", 10), verdicts, primary=["tools.slot_fill"])
    slot = result["scorers"]["tools.slot_fill"]
    assert slot["family"] == "gate" and slot["family_size"] == 1
    assert slot["summary"].endswith("(p = 0.0156; significant at 0.05)")
    assert result["scorers"]["tools.procedural"]["family"] == "reported"
    assert result["gate"]["scorers"] == ["tools.slot_fill"] and result["regression"]
    passed = [True] * 8 + [False] * 2
    small = {"tools.slot_fill": {**_judged("A", [True] * 10), **_judged("B", passed)}}
    assert not compare(_side("A", 10), _side("B", 10), small)["regression"]
    gated = compare(_side("A", 10), _side("B", 10), small, max_drop=0.1)
    assert gated["regression"]
    assert (
        "tools.slot_fill dropped by 20 points on average, over --max-drop 10 points"
        in gated["gate"]["verdict"]
    )
    with pytest.raises(KeyError):
        compare(_side("A", 10), _side("B", 10), small, primary=["nope"])


def test_what_it_claims_to_detect_it_detects() -> None:
    """With n cases and K scorers tested, "the smallest drop it can flag" is m cases doing
    worse: m one-way changes are significant, m - 1 are not."""
    for n, k_scorers in itertools.product((6, 10, 20, 40), (1, 2, 3, 5)):
        threshold = 0.05 / k_scorers
        found = power.smallest_drop(n, 1, threshold)
        if found is None:
            assert stats.sign_test(0, n) > threshold
            continue
        m, drop = found
        assert drop == m / n
        assert stats.sign_test(0, m) <= threshold < stats.sign_test(0, m - 1)


def _verdicts_under_null(
    rng: np.random.Generator, n: int, repeats: int
) -> tuple[list[Side], dict[str, dict[str, Judged]]]:
    """Both sides the same agent: cases of every difficulty (some nearly always passing, so
    with few changed cases), two scorers that repeat each other, a score-only one, one with no
    data, and a few runs without an answer."""
    cases = [f"c{i}" for i in range(n)]
    sides = [Side(s, {c: [f"{s}-{c}-{r}" for r in range(repeats)] for c in cases}) for s in "AB"]
    verdicts: dict[str, dict[str, Judged]] = {"no-data": {}}
    for name, low, high in (("easy", 0.9, 1.0), ("mid", 0.3, 0.9), ("hard", 0.0, 0.3)):
        chance = rng.uniform(low, high, size=n)
        verdicts[name] = {
            f"{s}-{c}-{r}": (
                Judged(None, None, "response:missing")
                if rng.random() < 0.03
                else Judged(bool(rng.random() < chance[i]), None)
            )
            for s in "AB"
            for i, c in enumerate(cases)
            for r in range(repeats)
        }
    verdicts["mid-again"] = dict(verdicts["mid"])  # procedural repeats slot_fill
    level = rng.uniform(0.5, 0.9, size=n)
    verdicts["score"] = {
        f"{s}-{c}-{r}": Judged(None, float(level[i] + rng.normal(0, 0.05)))
        for s in "AB"
        for i, c in enumerate(cases)
        for r in range(repeats)
    }
    return sides, verdicts


@pytest.mark.slow
def test_the_gate_keeps_its_error_rate_under_no_difference_with_repeats() -> None:
    """2,000 simulated comparisons under no difference, 6 to 40 cases, 1 to 5 repeats, with
    the scorer mix above: the share that call any scorer better or worse is at most alpha
    (within 3 standard errors), and the gate fails (worse) no more often."""
    rng = np.random.default_rng(28)
    sims, alpha, false, failed = 2000, 0.05, 0, 0
    for _ in range(sims):
        sides, verdicts = _verdicts_under_null(
            rng, int(rng.integers(6, 41)), int(rng.choice([1, 3, 5]))
        )
        # no lost answer here: a lost answer fails the gate whatever the test says
        result = compare(sides[0], sides[1], verdicts)
        false += any(s["significant"] for s in result["scorers"].values())
        failed += result["outcome"] == "worse" and not any(
            s["lost_answers"] for s in result["scorers"].values()
        )
    rate, se = false / sims, (alpha * (1 - alpha) / sims) ** 0.5
    assert rate <= alpha + 3 * se, rate
    assert failed / sims <= alpha + 3 * se, failed


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
        false += any(stats.tarone_holm(p, floors, alpha).rejected)
    rate, se = false / sims, (alpha * (1 - alpha) / sims) ** 0.5
    assert rate <= alpha + 3 * se, rate


@pytest.mark.slow
def test_the_policy_table_in_the_docs_is_what_the_simulation_gives() -> None:
    """docs/experiments.md's table of how often the gate fails an identical candidate and
    misses a drop: its first row (6 cases), computed again by scripts/gate_simulation.py."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(
        "gate_simulation", root / "scripts" / "gate_simulation.py"
    )
    assert spec is not None and spec.loader is not None
    simulation = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(simulation)
    page = (root / "docs" / "experiments.md").read_text()
    for repeats in (1, 3, 5):
        line = "| " + " | ".join(simulation.row(6, repeats, 1000)) + " |"
        assert line in page, line
