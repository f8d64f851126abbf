"""What a simulated annotator panel gives in the population: the figures the people tests
check their estimates against."""

from __future__ import annotations

import numpy as np


def population(
    prevalence: float, errors: list[float], sens: float, spec: float
) -> tuple[float, float]:
    """Precision and recall of a judge (sensitivity, specificity against the latent truth)
    against the majority of independent annotators with these error rates, exactly."""
    n = len(errors)

    def p_majority_right() -> float:
        total = 0.0
        for mask in range(2**n):
            right = [bool(mask >> i & 1) for i in range(n)]
            p = float(np.prod([1 - e if r else e for r, e in zip(right, errors, strict=True)]))
            if 2 * sum(right) > n:
                total += p
        return total

    m = p_majority_right()
    both = prevalence * sens * m + (1 - prevalence) * (1 - spec) * (1 - m)
    judge = prevalence * sens + (1 - prevalence) * (1 - spec)
    people = prevalence * m + (1 - prevalence) * (1 - m)
    return both / judge, both / people
