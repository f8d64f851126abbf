"""Inter-annotator agreement: how far people (or judges) who label the same items agree beyond
what chance would give, as pure functions of the labels.

- Percent agreement: of the pairs of labels given to the same item, the share that are equal,
  averaged over the items (each item with at least two labels counts once).
- :func:`cohen_kappa` (Cohen 1960, "A coefficient of agreement for nominal scales"): two
  annotators over the same items, kappa = (p_o - p_e) / (1 - p_e), p_o the share of items they
  label alike, p_e the agreement expected by chance from each one's own label frequencies (the
  sum over labels of the product of their two shares). Weighted (Cohen 1968, "Weighted kappa:
  Nominal scale agreement provision for scaled disagreement or partial credit"): kappa =
  1 - (sum of w_ij times the observed share of pairs (i, j)) / (sum of w_ij times the share
  chance expects), the disagreement weight w_ij = |i - j| (linear) or (i - j)^2 (quadratic)
  for labels at positions i and j of the order; unweighted kappa is the case w_ij = 1 - [i = j].
- :func:`fleiss_kappa` (Fleiss 1971, "Measuring nominal scale agreement among many raters"):
  any number of raters per item, not the same raters on every item. An item's agreement P_i is
  the share of its pairs of raters who agree, sum_j n_ij (n_ij - 1) / (n_i (n_i - 1)) with n_ij
  the raters who gave label j and n_i all of its raters; P is the mean of P_i over the items,
  p_j the share of all ratings that are j, P_e = sum_j p_j^2, and kappa = (P - P_e) / (1 - P_e).
  Fleiss assumes the same number of raters per item; when the counts differ, this generalises
  it so: each item's P_i with its own n_i, the items weighted equally in P, the p_j pooled over
  all ratings (with equal counts it is Fleiss' formula exactly).
- :func:`krippendorff_alpha` (Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011);
  Hayes and Krippendorff 2007, "Answering the call for a standard reliability measure for coding
  data"): alpha = 1 - D_o / D_e = 1 - (n - 1) sum_ck o_ck d_ck / sum_ck n_c n_k d_ck. The
  coincidence matrix o counts, over the units, every ordered pair of values two different coders
  gave the same unit, each pair weighing 1 / (m_u - 1) where m_u is the unit's number of values;
  n_c is its row sums (how often c was given, in pairable units) and n their total. A unit with
  fewer than two values has no pair and is left out; missing values are allowed. The squared
  difference d_ck is, nominal: 0 for equal values, 1 otherwise; ordinal: (n_c + ... + n_k -
  (n_c + n_k) / 2)^2, the sum over the values from c to k in the order, so that two values are as
  far apart as the number of values given between them; interval: (c - k)^2.

Intervals: the bootstrap over items (an item, a unit or a pair resampled with replacement as a
whole, ``samples`` times, from a fixed ``seed`` so that the same labels give the same interval),
bias-corrected and accelerated by default (BCa: Efron 1987, "Better bootstrap confidence
intervals"; the acceleration from the jackknife over items), or the plain percentile interval
with ``method="percentile"``. In the tests' simulations of 150-item panels the 95% intervals
cover the population value in about 94-95% of the panels, BCa's a little more often than the
percentile's. Alpha's bootstrap resamples units, not Krippendorff's pairable values: the values
of one unit are not independent. Each statistic is a function of per-item sums, so a resample's
is a matrix of item counts times the items' contributions: a thousand resamples of hundreds of
items take milliseconds. A resample on which the statistic is undefined (a single label in it,
say) is dropped; :attr:`Estimate.samples` counts those kept. An undefined estimate (no variation
at all: chance agreement is total) is ``None``, with no interval.

Labels are any hashable values of one type (numbers, strings, booleans); ``None`` (or a float
NaN) is a missing label. Labels of mixed types are refused, naming the item.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Literal, cast

import numpy as np

from agentdocket.people.bootstrap import Array, Estimate, Resampling, divide, estimate
from agentdocket.people.coding import (
    AgreementError,
    Named,
    categories_of,
    check_types,
    codes_of,
    counts_of,
    family_of,
    missing,
)

Weights = Literal["linear", "quadratic"]
Measurement = Literal["nominal", "ordinal", "interval"]
Kind = Literal["nominal", "ordinal"]
Method = Literal["bca", "percentile"]

METHODS = ("bca", "percentile")


@dataclass(frozen=True)
class PairKappa:
    """Cohen's kappa of two annotators over the items both labelled."""

    first: str
    second: str
    kappa: Estimate


@dataclass(frozen=True)
class Agreement:
    """Everything :func:`agreement` measures of one panel: ``pairwise`` in the annotators'
    sorted order, ``alpha_ordinal`` None unless the labels are ordinal; ``n_items`` counts the
    items given, ``n_annotators`` those who labelled at least one (each estimate counts the items
    it could use)."""

    percent: Estimate
    pairwise: tuple[PairKappa, ...]
    fleiss: Estimate
    alpha_nominal: Estimate
    alpha_ordinal: Estimate | None
    n_items: int
    n_annotators: int


def _resampling(samples: int, seed: int, level: float, method: str) -> Resampling:
    if samples < 0:
        raise AgreementError(f"samples must be 0 or more, not {samples}")
    if not 0 < level < 1:
        raise AgreementError(f"level must be between 0 and 1, not {level}")
    if method not in METHODS:
        raise AgreementError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    return Resampling(samples, seed, level, method)


def _cohen(
    named: Named,
    weights: Weights | None,
    order: Sequence[Hashable] | None,
    options: Resampling,
) -> Estimate:
    check_types(named)
    categories = categories_of(named, order, ordered=weights is not None)
    k = len(categories)
    position = np.arange(k, dtype=float)
    if weights is None:
        w = 1.0 - np.eye(k)
    elif weights == "linear":
        w = np.abs(position[:, None] - position[None, :])
    elif weights == "quadratic":
        w = (position[:, None] - position[None, :]) ** 2
    else:
        raise AgreementError(f"weights must be None, 'linear' or 'quadratic', not {weights!r}")
    codes = codes_of(named, categories)
    first = np.array([c[0] for c in codes], dtype=np.intp)
    second = np.array([c[1] for c in codes], dtype=np.intp)
    n = len(named)
    features = np.zeros((n, 1 + 2 * k))
    features[:, 0] = w[first, second]  # the pair's disagreement
    features[np.arange(n), 1 + first] = 1.0  # the first annotator's label
    features[np.arange(n), 1 + k + second] = 1.0  # the second's

    def statistic(sums: Array) -> Array:
        rows, columns = sums[:, 1 : 1 + k], sums[:, 1 + k :]
        expected = ((rows @ w) * columns).sum(axis=1)  # times n^2
        return 1.0 - divide(sums[:, 0] * rows.sum(axis=1), expected)

    return estimate(features, statistic, options)


def cohen_kappa(
    pairs: Sequence[tuple[Hashable, Hashable]],
    *,
    weights: Weights | None = None,
    order: Sequence[Hashable] | None = None,
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    method: Method = "bca",
) -> Estimate:
    """Cohen's kappa of two annotators, ``pairs`` holding their labels of each item (a pair with
    a missing label is left out). ``weights``: linear or quadratic weighted kappa, the labels
    placed by ``order`` (default: sorted); ``order`` also lists labels neither annotator used."""
    options = _resampling(samples, seed, level, method)
    named: Named = [
        (f"item {i}", [a, b]) for i, (a, b) in enumerate(pairs) if not missing(a) and not missing(b)
    ]
    return _cohen(named, weights, order, options)


def _pair_agreement(counts: Array) -> Array:
    """Each item's share of agreeing pairs of labels (P_i)."""
    m = counts.sum(axis=1)
    return cast(Array, ((counts**2).sum(axis=1) - m) / (m * (m - 1)))


def _fleiss(named: Named, options: Resampling) -> Estimate:
    check_types(named)
    named = [(name, labels) for name, labels in named if len(labels) >= 2]
    categories = categories_of(named, None, ordered=False)
    counts = counts_of(codes_of(named, categories), len(categories))
    features = np.column_stack([_pair_agreement(counts), np.ones(len(named)), counts])

    def statistic(sums: Array) -> Array:
        observed = divide(sums[:, 0], sums[:, 1])
        ratings = sums[:, 2:]
        shares = ratings / np.maximum(ratings.sum(axis=1, keepdims=True), 1.0)
        chance = (shares**2).sum(axis=1)
        return divide(observed - chance, np.where(chance < 1 - 1e-12, 1 - chance, 0.0))

    return estimate(features, statistic, options)


def fleiss_kappa(
    items: Sequence[Sequence[Hashable]],
    *,
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    method: Method = "bca",
) -> Estimate:
    """Fleiss' kappa; ``items`` holds, for each item, the labels its raters gave (missing ones
    are left out, then items with fewer than two labels). Raters may differ in number per item:
    see the module's note."""
    options = _resampling(samples, seed, level, method)
    named: Named = [
        (f"item {i}", [x for x in labels if not missing(x)]) for i, labels in enumerate(items)
    ]
    return _fleiss(named, options)


def _ordinal_distances(totals: Array) -> Array:
    """Krippendorff's ordinal d_ck for each row of value totals n_c (rows x k x k)."""
    k = totals.shape[1]
    through = np.cumsum(totals, axis=1)  # n_1 + ... + n_c
    before = through - totals  # n_1 + ... + n_(c-1)
    low = np.minimum.outer(np.arange(k), np.arange(k))
    high = np.maximum.outer(np.arange(k), np.arange(k))
    spanned = through[:, high] - before[:, low]  # n_c + ... + n_k
    distances: Array = (spanned - (totals[:, :, None] + totals[:, None, :]) / 2) ** 2
    return distances


def _alpha(
    named: Named,
    measurement: Measurement,
    order: Sequence[Hashable] | None,
    options: Resampling,
) -> Estimate:
    check_types(named)
    named = [(name, labels) for name, labels in named if len(labels) >= 2]
    if measurement == "interval":
        if order is not None:
            raise AgreementError("order is for ordinal values: interval values are numbers")
        for name, labels in named:
            for label in labels:
                if family_of(label) != "number":
                    raise AgreementError(f"{name}: interval values are numbers, not {label!r}")
    elif measurement not in ("nominal", "ordinal"):
        raise AgreementError(
            f"level_of_measurement must be nominal, ordinal or interval, not {measurement!r}"
        )
    categories = categories_of(named, order, ordered=measurement == "ordinal")
    k = len(categories)
    counts = counts_of(codes_of(named, categories), k)
    pairable = counts.sum(axis=1, keepdims=True) - 1  # m_u - 1
    if measurement == "ordinal":
        # the distances follow the resample's own totals: keep each unit's coincidences whole
        coincidences = (counts[:, :, None] * counts[:, None, :]) / pairable[:, :, None]
        coincidences[:, np.arange(k), np.arange(k)] -= counts / pairable
        features = coincidences.reshape(len(named), k * k)

        def statistic(sums: Array) -> Array:
            o = sums.reshape(-1, k, k)
            totals = o.sum(axis=2)
            d = _ordinal_distances(totals)
            n = totals.sum(axis=1)
            observed = (o * d).sum(axis=(1, 2))
            expected = (np.einsum("mc,mck->mk", totals, d) * totals).sum(axis=1)
            alpha: Array = 1.0 - (n - 1) * divide(observed, expected)
            return alpha

        return estimate(features, statistic, options)
    if measurement == "nominal":
        d = 1.0 - np.eye(k)
    else:
        values = np.array(categories, dtype=float)
        d = (values[:, None] - values[None, :]) ** 2
    # a unit's observed disagreement: sum_ck o_ck d_ck, o = (n n^T - diag n) / (m - 1)
    disagreement = ((counts @ d) * counts).sum(axis=1) / pairable[:, 0]
    features = np.column_stack([disagreement, counts])

    def fixed(sums: Array) -> Array:
        totals = sums[:, 1:]
        n = totals.sum(axis=1)
        expected = ((totals @ d) * totals).sum(axis=1)
        alpha: Array = 1.0 - (n - 1) * divide(sums[:, 0], expected)
        return alpha

    return estimate(features, fixed, options)


def krippendorff_alpha(
    units: Sequence[Mapping[Any, Hashable]] | Sequence[Sequence[Hashable]],
    *,
    level_of_measurement: Measurement = "nominal",
    order: Sequence[Hashable] | None = None,
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    method: Method = "bca",
) -> Estimate:
    """Krippendorff's alpha; ``units`` holds, for each unit (item), its coders' values: a
    mapping coder -> value or a sequence of values, ``None`` where a coder gave none. Units with
    fewer than two values are left out. ``order``: the ordinal values' order (default: sorted)."""
    options = _resampling(samples, seed, level, method)
    named: Named = []
    for i, unit in enumerate(units):
        if isinstance(unit, str | bytes):
            raise AgreementError(f"unit {i}: {unit!r} is one value, not the values of a unit")
        values = unit.values() if isinstance(unit, Mapping) else unit
        named.append((f"unit {i}", [x for x in values if not missing(x)]))
    return _alpha(named, level_of_measurement, order, options)


def agreement(
    labels_by_item: Mapping[str, Mapping[str, Hashable]],
    *,
    kind: Kind = "nominal",
    order: Sequence[Hashable] | None = None,
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    method: Method = "bca",
) -> Agreement:
    """A panel's agreement from item -> annotator -> label (``None``: not labelled): percent
    agreement, Cohen's kappa of every pair of annotators who share two items or more, Fleiss'
    kappa, Krippendorff's nominal alpha and, for ``kind="ordinal"``, ordinal alpha (labels
    placed by ``order``, default sorted). Every interval is read from the same resampling seed."""
    options = _resampling(samples, seed, level, method)
    if kind not in ("nominal", "ordinal"):
        raise AgreementError(f"kind must be nominal or ordinal, not {kind!r}")
    by_item = [
        (f"item {item!r}", {who: x for who, x in labels.items() if not missing(x)})
        for item, labels in labels_by_item.items()
    ]
    named: Named = [(name, list(labels.values())) for name, labels in by_item]
    check_types(named)
    categories_of(named, order, ordered=kind == "ordinal")  # refuses, naming the item, up front
    rated = [(name, labels) for name, labels in named if len(labels) >= 2]
    categories = categories_of(rated, None, ordered=False)
    counts = counts_of(codes_of(rated, categories), len(categories))
    percent = estimate(
        np.column_stack([_pair_agreement(counts), np.ones(len(rated))]),
        lambda sums: divide(sums[:, 0], sums[:, 1]),
        options,
    )
    annotators = sorted({who for _, labels in by_item for who in labels})
    pairwise = []
    for first, second in combinations(annotators, 2):
        shared: Named = [
            (name, [labels[first], labels[second]])
            for name, labels in by_item
            if first in labels and second in labels
        ]
        if len(shared) >= 2:
            pairwise.append(PairKappa(first, second, _cohen(shared, None, order, options)))
    ordinal = _alpha(named, "ordinal", order, options) if kind == "ordinal" else None
    return Agreement(
        percent=percent,
        pairwise=tuple(pairwise),
        fleiss=_fleiss(named, options),
        alpha_nominal=_alpha(named, "nominal", order, options),
        alpha_ordinal=ordinal,
        n_items=len(labels_by_item),
        n_annotators=len(annotators),
    )
