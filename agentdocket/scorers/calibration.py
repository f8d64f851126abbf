"""Judge calibration ("GRAMMAR: Grounded and Modular Methodology for Assessment of Closed-Domain
Retrieval-Augmented Language Models", section 3): one verdict set read as predictions of another, a
binary classification with "pass" as the positive class.

- precision = TP / (TP + FP): low precision is optimism (failing runs judged passing);
- recall = TP / (TP + FN): low recall is cynicism (passing runs judged failing);
- F1 = 2 TP / (2 TP + FP + FN), the harmonic mean of the two;
- agreement = (TP + TN) / n, and Cohen's kappa, agreement beyond chance;

each with a percentile bootstrap confidence interval (pairs resampled with replacement, a fixed
seed so that a report can be reproduced). A metric whose denominator is zero is undefined
(``None``), in the estimate and in the resamples where it happens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

Pair = tuple[bool, bool]  # (the judge says pass, the truth says pass)
METRICS = ("precision", "recall", "f1", "agreement", "kappa")


@dataclass(frozen=True)
class Calibration:
    n: int
    tp: int
    fp: int
    fn: int
    tn: int
    precision: float | None
    recall: float | None
    f1: float | None
    agreement: float | None
    kappa: float | None
    intervals: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    level: float = 0.95
    samples: int = 0


def _metrics(
    tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, tn: np.ndarray
) -> dict[str, np.ndarray]:
    """Each metric of each row of cell counts; NaN where its denominator is zero."""
    tp, fp, fn, tn = (np.asarray(x, dtype=float) for x in (tp, fp, fn, tn))
    n = tp + fp + fn + tn
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = (tp + tn) / n
        judge_pos, truth_pos = (tp + fp) / n, (tp + fn) / n
        chance = judge_pos * truth_pos + (1 - judge_pos) * (1 - truth_pos)
        kappa = np.where(chance < 1, (observed - chance) / (1 - chance), np.nan)
        return {
            "precision": tp / (tp + fp),
            "recall": tp / (tp + fn),
            "f1": 2 * tp / (2 * tp + fp + fn),
            "agreement": observed,
            "kappa": kappa,
        }


def _counts(pairs: Sequence[Pair]) -> tuple[int, int, int, int]:
    tp = sum(1 for j, t in pairs if j and t)
    fp = sum(1 for j, t in pairs if j and not t)
    fn = sum(1 for j, t in pairs if not j and t)
    return tp, fp, fn, len(pairs) - tp - fp - fn


def _value(x: np.ndarray) -> float | None:
    v = float(x)
    return None if np.isnan(v) else v


def calibrate(
    pairs: Sequence[Pair], samples: int = 1000, level: float = 0.95, seed: int = 0
) -> Calibration:
    """Precision, recall, F1, agreement and kappa of the judge against the truth, with
    percentile bootstrap intervals: the pairs resampled with replacement, which is a
    multinomial draw over the four observed cells (``numpy`` with ``seed``)."""
    tp, fp, fn, tn = _counts(pairs)
    n = len(pairs)
    estimate = {k: _value(v) for k, v in _metrics(*(np.array(c) for c in (tp, fp, fn, tn))).items()}
    intervals: dict[str, tuple[float, float] | None] = dict.fromkeys(METRICS)
    if n and samples:
        draws = np.random.default_rng(seed).multinomial(n, np.array([tp, fp, fn, tn]) / n, samples)
        tail = (1 - level) / 2
        for name, values in _metrics(*draws.T).items():
            kept = np.sort(values[~np.isnan(values)])
            if kept.size:
                lo = kept[int(tail * (kept.size - 1))]
                hi = kept[int((1 - tail) * (kept.size - 1) + 0.5)]
                intervals[name] = (float(lo), float(hi))
    return Calibration(
        n,
        tp,
        fp,
        fn,
        tn,
        precision=estimate["precision"],
        recall=estimate["recall"],
        f1=estimate["f1"],
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
