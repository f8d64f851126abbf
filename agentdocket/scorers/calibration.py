"""Judge calibration ("GRAMMAR: Grounded and Modular Methodology for Assessment of Closed-Domain
Retrieval-Augmented Language Models", section 3): one verdict set read as predictions of another, a
binary classification with "pass" as the positive class.

- precision = TP / (TP + FP): low precision is optimism (failing runs judged passing);
- recall = TP / (TP + FN): low recall is cynicism (passing runs judged failing);
- agreement = (TP + TN) / n, and Cohen's kappa, agreement beyond chance;

each with a percentile bootstrap confidence interval (pairs resampled with replacement, a fixed
seed so that a report can be reproduced). A metric whose denominator is zero is undefined
(``None``), in the estimate and in the resamples where it happens.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

Pair = tuple[bool, bool]  # (the judge says pass, the truth says pass)
METRICS = ("precision", "recall", "agreement", "kappa")


@dataclass(frozen=True)
class Calibration:
    n: int
    tp: int
    fp: int
    fn: int
    tn: int
    precision: float | None
    recall: float | None
    agreement: float | None
    kappa: float | None
    intervals: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    level: float = 0.95
    samples: int = 0


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def _metrics(tp: int, fp: int, fn: int, tn: int) -> dict[str, float | None]:
    n = tp + fp + fn + tn
    if n == 0:
        return dict.fromkeys(METRICS)
    observed = (tp + tn) / n
    judge_pos, truth_pos = (tp + fp) / n, (tp + fn) / n
    chance = judge_pos * truth_pos + (1 - judge_pos) * (1 - truth_pos)
    return {
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "agreement": observed,
        "kappa": (observed - chance) / (1 - chance) if chance < 1 else None,
    }


def _counts(pairs: Sequence[Pair]) -> tuple[int, int, int, int]:
    tp = sum(1 for j, t in pairs if j and t)
    fp = sum(1 for j, t in pairs if j and not t)
    fn = sum(1 for j, t in pairs if not j and t)
    return tp, fp, fn, len(pairs) - tp - fp - fn


def calibrate(
    pairs: Sequence[Pair], samples: int = 1000, level: float = 0.95, seed: int = 0
) -> Calibration:
    """Precision, recall, agreement and kappa of the judge against the truth, with intervals."""
    tp, fp, fn, tn = _counts(pairs)
    estimate = _metrics(tp, fp, fn, tn)
    rng = random.Random(seed)
    drawn: dict[str, list[float]] = {m: [] for m in METRICS}
    n = len(pairs)
    # the four cells, resampled: a draw is a multinomial over the observed cells
    cells = [0] * tp + [1] * fp + [2] * fn + [3] * tn
    for _ in range(samples if n else 0):
        counts = [0, 0, 0, 0]
        for cell in rng.choices(cells, k=n):
            counts[cell] += 1
        for name, value in _metrics(*counts).items():
            if value is not None:
                drawn[name].append(value)
    intervals: dict[str, tuple[float, float] | None] = {}
    tail = (1 - level) / 2
    for name, values in drawn.items():
        if not values:
            intervals[name] = None
            continue
        values.sort()
        lo = values[int(tail * (len(values) - 1))]
        hi = values[int((1 - tail) * (len(values) - 1) + 0.5)]
        intervals[name] = (lo, hi)
    return Calibration(
        n,
        tp,
        fp,
        fn,
        tn,
        precision=estimate["precision"],
        recall=estimate["recall"],
        agreement=estimate["agreement"],
        kappa=estimate["kappa"],
        intervals=intervals,
        level=level,
        samples=samples,
    )


POSITIVE = frozenset({"Match", "Perfect"})
NEGATIVE = frozenset({"Not Match", "Imperfect"})


def decision(passed: bool | None, label: str | None) -> bool | None:
    """A verdict as pass / fail: ``passed`` when it has one, else its label (Match, Perfect /
    Not Match, Imperfect); None when it decides neither (a 1-5 score, a failed judge)."""
    if passed is not None:
        return passed
    if label in POSITIVE:
        return True
    if label in NEGATIVE:
        return False
    return None
