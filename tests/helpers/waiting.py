"""Waiting for a condition that something asynchronous makes true (a server, a follower),
never for a fixed time."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(
    condition: Callable[[], object],
    what: str = "the condition",
    *,
    seconds: float = 30.0,
    detail: Callable[[], str] | None = None,
    every: float = 0.05,
) -> None:
    """Return once ``condition()`` holds; fail after ``seconds`` naming ``what`` (and
    ``detail()``, such as a server's log)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            more = f": {detail()}" if detail is not None else ""
            raise AssertionError(f"{what}, within {seconds:.0f} s{more}")
        time.sleep(every)  # polling the condition, not standing in for it
