"""Agreement statistics the slow way, in loops written straight from the papers: the
reference the agreement module and the agreement command are checked against."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from fractions import Fraction
from typing import Any


def alpha_by_pairs(units: Sequence[Sequence[Hashable | None]], metric: str) -> Fraction:
    """Krippendorff's alpha in exact arithmetic, the paper's way: the coincidence matrix from
    the pairable values (each ordered pair of two coders' values in a unit adds 1/(m_u - 1)),
    then alpha = 1 - (n - 1) sum o_ck d_ck / sum n_c n_k d_ck."""
    values = sorted({v for unit in units for v in unit if v is not None})
    o = {(c, k): Fraction(0) for c in values for k in values}
    for unit in units:
        present = [v for v in unit if v is not None]
        m = len(present)
        if m < 2:
            continue
        for i in range(m):
            for j in range(m):
                if i != j:
                    o[present[i], present[j]] += Fraction(1, m - 1)
    n_c = {c: sum(o[c, k] for k in values) for c in values}
    n = sum(n_c.values())

    def delta(c: Any, k: Any) -> Fraction:
        if metric == "nominal":
            return Fraction(0 if c == k else 1)
        if metric == "interval":
            return Fraction((c - k) ** 2)
        low, high = min(c, k), max(c, k)  # ordinal
        between = sum(n_c[g] for g in values if low <= g <= high)
        return (between - (n_c[c] + n_c[k]) / 2) ** 2

    observed = sum(o[c, k] * delta(c, k) for c in values for k in values)
    expected = sum(n_c[c] * n_c[k] * delta(c, k) for c in values for k in values)
    return 1 - (n - 1) * observed / expected


def fleiss_by_formula(items: Sequence[Sequence[Hashable]]) -> float:
    """The documented generalisation, item by item: P_i with each item's own n_i, the items
    weighted equally, p_j pooled over all ratings."""
    items = [list(i) for i in items if len(i) >= 2]
    labels = sorted({x for i in items for x in i})
    shares = []
    for item in items:
        n = len(item)
        shares.append(sum(item.count(c) * (item.count(c) - 1) for c in labels) / (n * (n - 1)))
    p_bar = sum(shares) / len(shares)
    ratings = [x for i in items for x in i]
    p_e = sum((ratings.count(c) / len(ratings)) ** 2 for c in labels)
    return (p_bar - p_e) / (1 - p_e)
