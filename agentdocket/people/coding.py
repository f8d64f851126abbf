"""Labels as the agreement coefficients count them: one type of label, their categories in
order, each item's labels as category codes and the items x categories counts."""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from agentdocket.errors import AgentdocketError
from agentdocket.people.bootstrap import Array

Named = list[tuple[str, list[Hashable]]]  # (an item's name for messages, its labels)


class AgreementError(AgentdocketError, ValueError):
    """Labels that cannot be compared: of mixed types, outside the order given, unordered."""


def missing(label: object) -> bool:
    return label is None or (isinstance(label, float | np.floating) and label != label)  # NaN


def family_of(label: object) -> str:
    if isinstance(label, bool | np.bool_):
        return "bool"
    if isinstance(label, numbers.Real):
        return "number"
    return type(label).__name__


def check_types(named: Named) -> None:
    """Refuse labels of more than one type (1 and "1" are different labels, silently)."""
    first: tuple[str, str, Hashable] | None = None
    families: dict[type, str] = {}
    for name, labels in named:
        for label in labels:
            family = families.get(type(label)) or families.setdefault(type(label), family_of(label))
            if first is None:
                first = (family, name, label)
            elif family != first[0]:
                raise AgreementError(
                    f"{name}: label {label!r} is a {family}, but {first[1]} has {first[2]!r}, "
                    f"a {first[0]}: the labels must be of one type"
                )


def categories_of(named: Named, order: Sequence[Hashable] | None, ordered: bool) -> list[Hashable]:
    """The labels' categories: ``order`` when given (every label must be in it), else the labels
    sorted, else (when they cannot be and no order is needed) as they come."""
    if order is not None:
        categories = list(order)
        if len(set(categories)) != len(categories):
            raise AgreementError(f"order {categories!r} names a label twice")
        known = set(categories)
        for name, labels in named:
            for label in labels:
                if label not in known:
                    raise AgreementError(f"{name}: label {label!r} is not in the order given")
        return categories
    seen = list(dict.fromkeys(label for _, labels in named for label in labels))
    try:
        return sorted(cast(list[Any], seen))
    except TypeError:
        if ordered:
            raise AgreementError(
                "the labels cannot be sorted: give their order (order=[...])"
            ) from None
        return seen


def codes_of(named: Named, categories: list[Hashable]) -> list[npt.NDArray[np.intp]]:
    index = {c: i for i, c in enumerate(categories)}
    return [np.array([index[x] for x in labels], dtype=np.intp) for _, labels in named]


def counts_of(codes: list[npt.NDArray[np.intp]], k: int) -> Array:
    """Items x categories: how many of each item's labels are each category."""
    rows = np.repeat(np.arange(len(codes)), [len(item) for item in codes])
    flat = np.concatenate([*codes, np.zeros(0, dtype=np.intp)])
    cells = np.bincount(rows * k + flat, minlength=len(codes) * k)
    return cells.reshape(len(codes), k).astype(float)
