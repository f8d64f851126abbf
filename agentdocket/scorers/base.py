"""Scorers: pure functions from a trace (with its case) to a verdict, registered by name and
version with their configuration.

A scorer's function returns an :class:`Outcome` (or ``None`` when the trace gives it nothing to
judge, e.g. no case); :meth:`Scorer.verdict` wraps it into a ``Verdict`` payload tagged with the
scorer's name, version and the hash of exactly what it judged. The hash makes re-scoring
idempotent: the same run, scorer, version and inputs give the same verdict event id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentdocket.events import Trace, Verdict


@dataclass(frozen=True)
class Outcome:
    """What a scorer decided about one trace."""

    passed: bool | None = None
    score: float | None = None
    label: str | None = None
    failure_type: str | None = None  # "area:problem", e.g. "slot_fill:missing_call"
    rationale: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


ScoreFn = Callable[[Trace, Mapping[str, Any]], Outcome | None]


@dataclass(frozen=True)
class Scorer:
    """A named, versioned scorer with its configuration."""

    name: str
    version: str
    description: str
    fn: ScoreFn
    config: Mapping[str, Any] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()  # the event kinds (and "case") its verdict depends on

    def score(self, trace: Trace) -> Outcome | None:
        return self.fn(trace, self.config)

    def input_hash(self, trace: Trace) -> str:
        """Hash of what this scorer judges: the events of its input kinds, the case, the config."""
        kinds = set(self.inputs)
        events = [
            [str(e.event_id), e.schema_version]
            for e in trace.events
            if not kinds or e.kind in kinds
        ]
        body = {
            "events": events,
            "case": trace.case.to_json() if trace.case is not None and "case" in kinds else None,
            "config": dict(self.config),
        }
        encoded = orjson.dumps(body, option=orjson.OPT_SORT_KEYS, default=_named)
        return hashlib.sha256(encoded).hexdigest()

    def verdict(self, trace: Trace) -> Verdict | None:
        """The verdict on ``trace``, or None when there is nothing to judge."""
        outcome = self.score(trace)
        if outcome is None:
            return None
        return Verdict(
            scorer=self.name,
            scorer_version=self.version,
            input_hash=self.input_hash(trace),
            subject_trace_id=trace.trace_id,
            passed=outcome.passed,
            score=outcome.score,
            label=outcome.label,
            failure_type=outcome.failure_type,
            rationale=outcome.rationale,
            details=outcome.details,
        )


def _named(value: Any) -> str:
    """A configuration value that is not JSON (a function) by its qualified name."""
    return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', repr(value))}"


_REGISTRY: dict[str, dict[str, Scorer]] = {}


def register(scorer: Scorer) -> Scorer:
    """Make a scorer available by name and version (a name+version registers once)."""
    versions = _REGISTRY.setdefault(scorer.name, {})
    existing = versions.get(scorer.version)
    if existing is not None and existing is not scorer:
        raise ValueError(f"scorer {scorer.name} version {scorer.version} is already registered")
    versions[scorer.version] = scorer
    return scorer


def scorers() -> list[Scorer]:
    """Every registered scorer version, by name then version."""
    return [v for name in sorted(_REGISTRY) for _, v in sorted(_REGISTRY[name].items())]


def get(name: str, version: str | None = None) -> Scorer:
    """A scorer by name; the newest registered version unless ``version`` is given."""
    versions = _REGISTRY.get(name)
    if not versions:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise KeyError(f"no scorer named {name!r}; known: {known}")
    if version is None:
        return versions[max(versions, key=_version_key)]
    if version not in versions:
        raise KeyError(f"scorer {name!r} has no version {version!r}; known: {sorted(versions)}")
    return versions[version]


def _version_key(version: str) -> tuple[Any, ...]:
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in version.split("."))
