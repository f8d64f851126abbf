"""ROUGE-L exactly as ``rouge_score`` computes it (``rougeL``, no stemmer), faster.

Tokens: the text lower-cased, every run of characters other than ``a-z0-9`` a separator (as
``rouge_score``'s default tokenizer). The longest common subsequence is computed bit-parallel
(Hyyrö's bit-vector algorithm over Python integers: one pass per token of the prediction, each
a few machine-word operations on a bitmask of the target), so a pair of 60-word texts takes
microseconds instead of a Python double loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"[a-z0-9]+")
# every ASCII character that is not a-z or 0-9 becomes a space
_ASCII_SPACES = {i: " " for i in range(128) if not (chr(i).isdigit() or "a" <= chr(i) <= "z")}


@dataclass(frozen=True)
class RougeL:
    precision: float
    recall: float
    fmeasure: float


def tokens(text: str) -> list[str]:
    """``rouge_score``'s default tokenisation without stemming: the maximal runs of ``a-z0-9``
    in the lower-cased text (it replaces everything else by spaces and splits)."""
    lowered = text.lower()
    if lowered.isascii():  # the common case: one C-level pass, about 2x faster than the regex
        return lowered.translate(_ASCII_SPACES).split()
    return _TOKEN.findall(lowered)


def lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence of two token lists."""
    if len(a) < len(b):
        a, b = b, a
    n = len(a)
    if n == 0 or not b:
        return 0
    masks: dict[str, int] = {}
    for i, token in enumerate(a):
        masks[token] = masks.get(token, 0) | (1 << i)
    full = (1 << n) - 1
    v = full
    for token in b:
        u = v & masks.get(token, 0)
        v = ((v + u) | (v - u)) & full
    return n - v.bit_count()


def rouge_l(target: str, prediction: str) -> RougeL:
    """ROUGE-L of ``prediction`` against ``target``: precision = LCS / prediction tokens,
    recall = LCS / target tokens, F = their harmonic mean (``rouge_score.score(target,
    prediction)["rougeL"]``)."""
    t, p = tokens(target), tokens(prediction)
    if not t or not p:
        return RougeL(0.0, 0.0, 0.0)
    lcs = lcs_length(t, p)
    precision = lcs / len(p)
    recall = lcs / len(t)
    if precision + recall > 0:
        return RougeL(precision, recall, 2 * precision * recall / (precision + recall))
    return RougeL(precision, recall, 0.0)
