"""Agreement statistics against the literature's worked examples and slow, loop-based
implementations written straight from the papers; their bootstrap intervals' coverage by
simulation of panels whose population value is known in closed form; and the edge cases."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Hashable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from agentdocket.people.agreement import (
    AgreementError,
    Estimate,
    agreement,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
)
from tests.helpers.agreement_reference import alpha_by_pairs, fleiss_by_formula

# Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011): 4 observers, 12 units,
# "." missing. Rows are the observers A..D, columns the units.
RELIABILITY_DATA = """
1 2 3 3 2 1 4 1 2 . . .
1 2 3 3 2 2 4 1 2 5 . 3
. 3 3 3 2 3 4 2 2 5 1 .
1 2 3 3 2 4 4 1 2 5 1 .
"""


def _units() -> list[list[int | None]]:
    rows = [line.split() for line in RELIABILITY_DATA.strip().splitlines()]
    return [[None if r[u] == "." else int(r[u]) for r in rows] for u in range(len(rows[0]))]


@pytest.mark.parametrize(
    "metric,published", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_krippendorffs_example_gives_the_papers_alpha(metric: str, published: float) -> None:
    exact = alpha_by_pairs(_units(), metric)
    estimate = krippendorff_alpha(_units(), level_of_measurement=metric, samples=200)
    assert estimate.value == pytest.approx(float(exact), abs=1e-12)
    assert round(estimate.value, 3) == round(float(exact), 3) == published
    assert estimate.n_items == 11  # unit 12 has one value: not pairable
    assert estimate.low is not None and estimate.high is not None
    assert estimate.low <= estimate.value <= estimate.high


def test_nominal_alpha_of_the_example_is_an_exact_fraction() -> None:
    # the paper's worked nominal case: n = 40 pairable values, the values' totals 9, 13, 10,
    # 5, 3, and 8 off the coincidence matrix's diagonal
    totals = [9, 13, 10, 5, 3]
    paper = 1 - Fraction((40 - 1) * 8, 40**2 - sum(t * t for t in totals))
    assert alpha_by_pairs(_units(), "nominal") == paper
    assert alpha_by_pairs(_units(), "nominal") == Fraction(113, 152)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("metric", ["nominal", "ordinal", "interval"])
def test_alpha_matches_the_pairs_formula_on_random_panels(seed: int, metric: str) -> None:
    rng = np.random.default_rng(seed)
    values = rng.integers(1, 6, size=(25, 4)).astype(object)
    values[rng.random(values.shape) < 0.3] = None
    units = values.tolist()
    exact = alpha_by_pairs(units, metric)
    got = krippendorff_alpha(units, level_of_measurement=metric, samples=0)
    assert got.value == pytest.approx(float(exact), abs=1e-12)


def test_ordinal_alpha_follows_the_order_given_not_the_labels_spelling() -> None:
    words = {1: "never", 2: "rarely", 3: "sometimes", 4: "often", 5: "always"}
    units = [[None if v is None else words[v] for v in unit] for unit in _units()]
    order = [words[v] for v in range(1, 6)]
    got = krippendorff_alpha(units, level_of_measurement="ordinal", order=order, samples=0)
    assert got.value == pytest.approx(float(alpha_by_pairs(_units(), "ordinal")), abs=1e-12)


# Fleiss' kappa's worked example (Wikipedia, "Fleiss' kappa"): 10 items, 14 raters, 5
# categories; each row counts the raters who chose each category.
FLEISS_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def _rows_as_labels(table: Sequence[Sequence[int]]) -> list[list[int]]:
    return [[j + 1 for j, count in enumerate(row) for _ in range(count)] for row in table]


def test_fleiss_kappa_of_the_worked_example() -> None:
    got = fleiss_kappa(_rows_as_labels(FLEISS_TABLE), samples=200)
    assert got.value is not None and round(got.value, 3) == 0.210
    # the worked example's P-bar = 0.378 and P_e = 0.213, exactly
    p_bar = sum(Fraction(sum(c * c for c in row) - 14, 14 * 13) for row in FLEISS_TABLE) / 10
    p_e = sum(Fraction(sum(column), 140) ** 2 for column in zip(*FLEISS_TABLE, strict=True))
    assert (round(float(p_bar), 3), round(float(p_e), 3)) == (0.378, 0.213)
    assert got.value == pytest.approx(float((p_bar - p_e) / (1 - p_e)), abs=1e-12)
    assert got.n_items == 10


@pytest.mark.parametrize("seed", range(5))
def test_fleiss_kappa_with_unequal_raters_is_the_documented_generalisation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items = [rng.integers(0, 4, size=rng.integers(1, 7)).tolist() for _ in range(30)]
    assert fleiss_kappa(items, samples=0).value == pytest.approx(fleiss_by_formula(items))
    # with the same raters on every item, it is Fleiss' formula exactly
    equal = [rng.integers(0, 3, size=5).tolist() for _ in range(30)]
    assert fleiss_kappa(equal, samples=0).value == pytest.approx(fleiss_by_formula(equal))


def _pairs(table: Sequence[Sequence[int]], labels: Sequence[Hashable]) -> list[tuple[Any, Any]]:
    return [
        (labels[i], labels[j])
        for i, row in enumerate(table)
        for j, count in enumerate(row)
        for _ in range(count)
    ]


def test_cohen_kappa_of_a_two_by_two_table_by_hand() -> None:
    # rows: the first annotator yes / no; columns: the second
    table = [[20, 5], [10, 15]]
    n = 50
    observed = Fraction(20 + 15, n)
    chance = Fraction(25, n) * Fraction(30, n) + Fraction(25, n) * Fraction(20, n)
    by_hand = (observed - chance) / (1 - chance)
    assert by_hand == Fraction(2, 5)
    got = cohen_kappa(_pairs(table, ["yes", "no"]), samples=200)
    assert got.value == pytest.approx(0.4, abs=1e-12)
    assert got.n_items == 50


def test_weighted_kappa_of_a_three_category_table() -> None:
    """scikit-learn's three-category example (kappa 0.9315, linear 0.9412, quadratic 0.9541),
    worked by hand: rows the first annotator, columns the second."""
    table = [[46, 0, 0], [4, 40, 0], [0, 0, 10]]
    rows, columns, n = [46, 44, 10], [50, 40, 10], 100
    pairs = _pairs(table, [0, 1, 2])
    for weights, weight, published in [
        (None, lambda i, j: int(i != j), 0.9315),
        ("linear", lambda i, j: abs(i - j), 0.9412),
        ("quadratic", lambda i, j: (i - j) ** 2, 0.9541),
    ]:
        observed = Fraction(sum(weight(i, j) * table[i][j] for i in range(3) for j in range(3)))
        chance = Fraction(
            sum(weight(i, j) * rows[i] * columns[j] for i in range(3) for j in range(3)), n
        )
        by_hand = 1 - observed / chance
        got = cohen_kappa(pairs, weights=weights, samples=0).value
        assert got == pytest.approx(float(by_hand), abs=1e-12)
        assert round(float(by_hand), 4) == published


def test_weights_place_the_labels_by_the_order_given() -> None:
    order = ["low", "mid", "high"]
    table = [[46, 0, 0], [4, 40, 0], [0, 0, 10]]
    by_name = cohen_kappa(_pairs(table, order), weights="linear", order=order, samples=0)
    by_index = cohen_kappa(_pairs(table, [0, 1, 2]), weights="linear", samples=0)
    assert by_name.value == pytest.approx(by_index.value)
    # alphabetical order (high, low, mid) would place them otherwise
    unordered = cohen_kappa(_pairs(table, order), weights="linear", samples=0)
    assert unordered.value != pytest.approx(by_index.value)


def test_the_convenience_report_agrees_with_the_functions() -> None:
    units = _units()
    panel = {
        f"unit{u}": {who: v for who, v in zip("ABCD", unit, strict=True)}
        for u, unit in enumerate(units, 1)
    }
    report = agreement(panel, kind="ordinal", samples=300, seed=3)
    assert report.n_items == 12 and report.n_annotators == 4
    assert report.alpha_nominal.value == pytest.approx(113 / 152)
    assert report.alpha_ordinal is not None
    assert report.alpha_ordinal.value == pytest.approx(
        float(alpha_by_pairs(units, "ordinal")), abs=1e-12
    )
    assert report.fleiss.value == pytest.approx(
        fleiss_by_formula([[v for v in unit if v is not None] for unit in units])
    )
    assert [(p.first, p.second) for p in report.pairwise] == list(itertools.combinations("ABCD", 2))
    for pair in report.pairwise:
        i, j = "ABCD".index(pair.first), "ABCD".index(pair.second)
        shared = [(u[i], u[j]) for u in units if u[i] is not None and u[j] is not None]
        assert pair.kappa == cohen_kappa(shared, samples=300, seed=3)
    # percent agreement: each unit's share of agreeing pairs, averaged over the 11 pairable
    shares = []
    for unit in units:
        present = [v for v in unit if v is not None]
        if len(present) >= 2:
            pairs = list(itertools.combinations(present, 2))
            shares.append(sum(a == b for a, b in pairs) / len(pairs))
    assert report.percent.value == pytest.approx(sum(shares) / len(shares))
    assert report.percent.n_items == 11


def test_intervals_are_reproducible_and_resamples_without_the_statistic_are_dropped() -> None:
    pairs = [("a", "a")] * 9 + [("a", "b")]
    first = cohen_kappa(pairs, samples=1000, seed=7)
    assert first == cohen_kappa(pairs, samples=1000, seed=7)
    assert first.value == 0.0
    # a resample without the one disagreement has a single label: kappa undefined, dropped
    # (about (9/10)^10 = 35% of them)
    assert 550 < first.samples < 750
    assert first.low is not None and first.high is not None
    other = cohen_kappa(pairs, samples=1000, seed=8)
    assert other.samples != first.samples
    assert cohen_kappa(pairs, samples=0) == Estimate(0.0, None, None, 10, 0.95, 0, "bca")


def test_a_thousand_resamples_of_five_hundred_items_take_well_under_a_second() -> None:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 5, size=(500, 3))
    labels[:, 1] = np.where(rng.random(500) < 0.6, labels[:, 0], labels[:, 1])
    rows = labels.tolist()
    for run in (
        lambda: cohen_kappa([(r[0], r[1]) for r in rows], weights="quadratic"),
        lambda: fleiss_kappa(rows),
        lambda: krippendorff_alpha(rows, level_of_measurement="ordinal"),
    ):
        start = time.perf_counter()
        estimate = run()
        assert time.perf_counter() - start < 1.0
        assert estimate.samples == 1000


# --- coverage, by simulation -------------------------------------------------------------------
# Items have a latent class drawn with known prevalence; an annotator gives it with a known
# probability, else one of the other classes at random. The population kappa and alpha then
# follow in closed form from the joint distribution of two annotators' labels.

PREVALENCE = np.array([0.5, 0.3, 0.2])
K = len(PREVALENCE)
ITEMS, REPLICATIONS = 150, 500


def _given(accuracy: float) -> np.ndarray:
    """P(label a | class z), rows z."""
    given = np.full((K, K), (1 - accuracy) / (K - 1))
    np.fill_diagonal(given, accuracy)
    return given


def _population_cohen(first: float, second: float) -> float:
    joint = np.einsum("z,za,zb->ab", PREVALENCE, _given(first), _given(second))
    observed, chance = np.trace(joint), joint.sum(axis=1) @ joint.sum(axis=0)
    return float((observed - chance) / (1 - chance))


def _population_exchangeable(accuracy: float) -> float:
    """Fleiss' kappa and alpha (their common limit) for annotators of the same accuracy: the
    chance that two agree, against the pooled label shares."""
    given = _given(accuracy)
    observed = PREVALENCE @ (given**2).sum(axis=1)
    shares = PREVALENCE @ given
    return float((observed - shares @ shares) / (1 - shares @ shares))


def _panel(rng: np.random.Generator, accuracies: Sequence[float]) -> np.ndarray:
    truth = rng.choice(K, size=ITEMS, p=PREVALENCE)
    columns = []
    for accuracy in accuracies:
        right = rng.random(ITEMS) < accuracy
        columns.append(np.where(right, truth, (truth + rng.integers(1, K, size=ITEMS)) % K))
    return np.stack(columns, axis=1)


def _cohen_panel(rng: np.random.Generator, seed: int, method: str) -> Estimate:
    labels = _panel(rng, [0.8, 0.65])
    return cohen_kappa([(a, b) for a, b in labels.tolist()], seed=seed, method=method)


def _fleiss_panel(rng: np.random.Generator, seed: int, method: str) -> Estimate:
    # 3 to 5 raters an item: the generalisation to unequal counts
    labels = _panel(rng, [0.7] * 5).tolist()
    raters = rng.integers(3, 6, size=ITEMS)
    items = [row[:m] for row, m in zip(labels, raters, strict=True)]
    return fleiss_kappa(items, seed=seed, method=method)


def _alpha_panel(rng: np.random.Generator, seed: int, method: str) -> Estimate:
    # 4 coders, each value missing with probability 1/4
    labels = _panel(rng, [0.75] * 4).astype(object)
    labels[rng.random(labels.shape) < 0.25] = None
    return krippendorff_alpha(labels.tolist(), seed=seed, method=method)


SIMULATIONS: dict[str, tuple[Callable[[np.random.Generator, int, str], Estimate], float]] = {
    "cohen": (_cohen_panel, _population_cohen(0.8, 0.65)),
    "fleiss": (_fleiss_panel, _population_exchangeable(0.7)),
    "alpha": (_alpha_panel, _population_exchangeable(0.75)),
}


@pytest.mark.parametrize("method", ["bca", "percentile"])
@pytest.mark.parametrize("statistic", list(SIMULATIONS))
def test_the_95_percent_interval_covers_the_population_value(statistic: str, method: str) -> None:
    """500 simulated panels of 150 items: the 95% interval covers the population value in
    92-98% of them (a standard error of 1 point at 95%)."""
    simulate, population = SIMULATIONS[statistic]
    rng = np.random.default_rng(2026)
    covered = 0
    for replication in range(REPLICATIONS):
        estimate = simulate(rng, replication, method)
        assert estimate.low is not None and estimate.high is not None
        covered += estimate.low <= population <= estimate.high
    coverage = covered / REPLICATIONS
    print(f"{statistic} ({method}): population {population:.4f}, coverage {coverage:.3f}")
    assert 0.92 <= coverage <= 0.98, coverage


def test_the_population_values_are_those_of_a_large_panel() -> None:
    """The closed forms above, checked once against one panel of 100,000 items."""
    rng = np.random.default_rng(1)
    truth = rng.choice(K, size=100_000, p=PREVALENCE)

    def annotate(accuracy: float) -> np.ndarray:
        right = rng.random(truth.size) < accuracy
        return np.where(right, truth, (truth + rng.integers(1, K, size=truth.size)) % K)

    a, b = annotate(0.8), annotate(0.65)
    got = cohen_kappa(list(zip(a.tolist(), b.tolist(), strict=True)), samples=0).value
    assert got == pytest.approx(_population_cohen(0.8, 0.65), abs=0.01)
    three = np.stack([annotate(0.7) for _ in range(3)], axis=1).tolist()
    assert fleiss_kappa(three, samples=0).value == pytest.approx(
        _population_exchangeable(0.7), abs=0.01
    )


# --- edge cases --------------------------------------------------------------------------------


def test_unanimity_on_one_label_is_undefined_not_a_crash() -> None:
    panel = {f"q{i}": {"ann": "yes", "bob": "yes", "cy": "yes"} for i in range(5)}
    report = agreement(panel, samples=100)
    assert report.percent.value == 1.0
    assert report.percent.low == report.percent.high == 1.0
    for estimate in (report.fleiss, report.alpha_nominal, *(p.kappa for p in report.pairwise)):
        assert estimate.value is None and estimate.low is None and estimate.high is None
        assert estimate.samples == 0
    assert len(report.pairwise) == 3
    assert cohen_kappa([("x", "x")] * 4).value is None
    assert krippendorff_alpha([[3, 3, None]] * 4, level_of_measurement="interval").value is None


def test_one_item() -> None:
    assert cohen_kappa([("a", "b")], samples=50).value == 0.0  # agreement 0, chance 0
    assert cohen_kappa([("a", "a")], samples=50).value is None
    one = fleiss_kappa([["a", "a", "b"]], samples=50)
    # P = 1/3, p = (2/3, 1/3), P_e = 5/9: kappa = (1/3 - 5/9) / (4/9) = -1/2
    assert one.value == pytest.approx(-0.5) and one.low == one.high == pytest.approx(-0.5)
    # one unit a, a, b: o_aa = o_ab = o_ba = 1, n = 3, D_o sum 2, D_e sum 2*1*2: 1 - 2 * 2/4 = 0
    assert krippendorff_alpha([["a", "a", "b"]], samples=50).value == pytest.approx(0.0)
    report = agreement({"only": {"ann": "a", "bob": "b"}}, samples=50)
    assert report.n_items == 1 and report.pairwise == ()  # one shared item: no pairwise kappa
    assert report.percent.value == 0.0


def test_an_annotator_with_a_single_item_has_no_pairwise_kappa_but_counts() -> None:
    panel = {f"q{i}": {"ann": i % 3, "bob": (i * 2) % 3} for i in range(10)}
    panel["q0"]["cy"] = 1
    report = agreement(panel, samples=100)
    assert report.n_annotators == 3
    assert [(p.first, p.second) for p in report.pairwise] == [("ann", "bob")]
    assert report.fleiss.n_items == 10 and report.alpha_nominal.n_items == 10
    lists = [[v for v in labels.values()] for labels in panel.values()]
    assert report.fleiss.value == pytest.approx(fleiss_by_formula(lists))


def test_missing_labels_are_left_out() -> None:
    with_gaps = [[1, 2, None], [2, 2, math.nan], [3, 3, 3], [None, 1, None]]
    without = [[1, 2], [2, 2], [3, 3, 3], [1]]
    assert krippendorff_alpha(with_gaps, samples=0) == krippendorff_alpha(without, samples=0)
    assert fleiss_kappa(with_gaps, samples=0) == fleiss_kappa(without, samples=0)
    assert cohen_kappa([(1, 1), (2, None), (2, 2), (1, 2)], samples=0).n_items == 3


def test_labels_of_mixed_types_are_refused_naming_the_item() -> None:
    panel = {"q1": {"ann": 1, "bob": 1}, "q2": {"ann": 2, "bob": "2"}}
    with pytest.raises(ValueError, match=r"item 'q2': label '2' is a str.*item 'q1' has 1"):
        agreement(panel)
    with pytest.raises(AgreementError, match="item 1: label True is a bool"):
        cohen_kappa([(0, 1), (True, 1)])
    with pytest.raises(AgreementError, match="unit 2"):
        krippendorff_alpha([["a", "b"], ["a", None], [None, 3]])
    with pytest.raises(AgreementError, match="item 0"):
        fleiss_kappa([[1, 2.5, "x"]])


def test_labels_outside_the_order_or_unorderable_are_refused() -> None:
    with pytest.raises(AgreementError, match="item 'q2': label 'meh' is not in the order"):
        agreement(
            {"q1": {"a": "bad", "b": "good"}, "q2": {"a": "meh", "b": "good"}},
            kind="ordinal",
            order=["bad", "good"],
        )
    with pytest.raises(AgreementError, match="cannot be sorted"):
        krippendorff_alpha([[(1, "a"), (1, 2)]], level_of_measurement="ordinal")
    with pytest.raises(AgreementError, match="interval values are numbers"):
        krippendorff_alpha([["a", "b"]], level_of_measurement="interval")
    with pytest.raises(AgreementError, match="unit 0"):
        krippendorff_alpha(["ab"])
    with pytest.raises(AgreementError, match="names a label twice"):
        cohen_kappa([(1, 2)], order=[1, 2, 1])


def test_units_may_map_coders_to_values() -> None:
    as_maps = [dict(zip("ABCD", unit, strict=True)) for unit in _units()]
    assert krippendorff_alpha(as_maps, samples=50) == krippendorff_alpha(_units(), samples=50)


def test_options_out_of_range_are_refused() -> None:
    pairs = [(1, 1), (1, 2), (2, 2)]
    for bad, message in [
        ({"samples": -1}, "samples must be 0 or more"),
        ({"level": 1.0}, "level must be between 0 and 1"),
        ({"method": "basic"}, "method must be one of bca, percentile"),
        ({"weights": "cubic"}, "weights must be None, 'linear' or 'quadratic'"),
    ]:
        with pytest.raises(AgreementError, match=message):
            cohen_kappa(pairs, **bad)
    with pytest.raises(AgreementError, match="level_of_measurement must be"):
        krippendorff_alpha([[1, 2]], level_of_measurement="ratio")
    with pytest.raises(AgreementError, match="kind must be nominal or ordinal"):
        agreement({"q": {"a": 1, "b": 2}}, kind="interval")
    percentile = cohen_kappa(pairs * 10, method="percentile")
    assert percentile.method == "percentile" and percentile != cohen_kappa(pairs * 10)
