"""The store's errors."""

from __future__ import annotations


class StoreError(RuntimeError):
    """A store operation that cannot be done, with the reason."""


class DatasetConflict(StoreError):
    """A dataset version that already exists with different content."""
