"""Scorers: pure functions from a trace (with its case) to a verdict, registered by name and
version with their configuration.

A scorer's function returns an :class:`Outcome` (or ``None`` when the trace gives it nothing to
judge, e.g. no case); :meth:`Scorer.verdict` wraps it into a ``Verdict`` payload tagged with the
scorer's name, version and the hash of exactly what it judged. The hash makes re-scoring
idempotent: the same run, scorer, version and inputs give the same verdict event id.

A scorer that gains from seeing many traces at once (embeddings are encoded in batches) gives a
``batch`` function as well; the runner calls it on each batch it reads.
"""

from __future__ import annotations

import contextvars
import dataclasses
import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import orjson

from agentdocket.events import Conversation, Trace, Verdict


@dataclass(frozen=True)
class Outcome:
    """What a scorer decided about one trace."""

    passed: bool | None = None
    score: float | None = None
    label: str | None = None
    failure_type: str | None = None  # "area:problem", e.g. "slot_fill:missing_call"
    rationale: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    judge_trace_id: str | None = None  # the trace of the judge calls behind it


ScoreFn = Callable[[Trace, Mapping[str, Any]], Outcome | None]
# Readings a scorer may name among its inputs, and the event kinds each reads.
READINGS = {
    "answer": frozenset({"response", "llm.called", "llm.messages"}),
    "question": frozenset({"run.started", "llm.called", "llm.messages"}),
}
BatchFn = Callable[[Sequence[Trace], Mapping[str, Any]], list[Outcome | None]]
# A session scorer's function: a whole conversation (its turns, its case) to one outcome, given a
# batch of conversations at once.
ConversationFn = Callable[[Sequence[Conversation], Mapping[str, Any]], list[Outcome | None]]
# A report metric: (the verdict detail it is computed from, how values are combined): "mean"
# over the verdicts carrying it, "sum", or "ratio:OTHER", the sum of it over the sum of OTHER.
Metric = tuple[str, str]


@dataclass(frozen=True)
class Option:
    """One setting of a scorer: the types it takes, its default, what it means."""

    types: tuple[type, ...]
    default: Any
    description: str
    choices: tuple[str, ...] = ()  # the strings it takes, where not any (a function too)

    def check(self, scorer: str, name: str, value: Any) -> None:
        if value is None and self.default is None:
            return
        if not isinstance(value, self.types) and not callable(value):
            wanted = " or ".join(t.__name__ for t in self.types)
            raise TypeError(
                f"scorer {scorer}: option {name!r} takes {wanted}, not {type(value).__name__}"
            )
        if self.choices and isinstance(value, str) and value not in self.choices:
            raise ValueError(
                f"scorer {scorer}: option {name!r} takes {' or '.join(map(repr, self.choices))} "
                f"(or a function, from Python), not {value!r}"
            )

    def parse(self, scorer: str, name: str, text: str) -> Any:
        """``text`` (from a command line) as the value this option takes: ``true`` / ``false``
        for a switch, a number, JSON for a list or a mapping, else the text itself."""
        lowered = text.strip().lower()
        for kind in self.types:
            if kind is bool:
                if lowered in ("true", "yes", "on", "1"):
                    return True
                if lowered in ("false", "no", "off", "0"):
                    return False
            elif kind is int:
                try:
                    return int(text)
                except ValueError:
                    pass
            elif kind is float:
                try:
                    return float(text)
                except ValueError:
                    pass
            elif kind in (list, dict):
                try:
                    value = orjson.loads(text)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(value, kind):
                    return value
            elif kind is str:
                self.check(scorer, name, text)
                return text
        wanted = " or ".join(t.__name__ for t in self.types)
        raise ValueError(f"scorer {scorer}: option {name!r} takes {wanted}, not {text!r}")


def option(
    types: type | tuple[type, ...], default: Any, description: str, choices: tuple[str, ...] = ()
) -> Option:
    return Option(types if isinstance(types, tuple) else (types,), default, description, choices)


def with_options(scorer: Scorer, given: Mapping[str, Any], *, typed: bool = False) -> Scorer:
    """``scorer`` run with options given as text (``KEY=VALUE`` on a command line), typed by
    its declared options; with ``typed``, given as values (a TOML table), checked against
    them. The options that change its configuration become part of its
    version (``1+closed_domain=false``): a different setting is a different verdict set, and
    reports and dashboards say which setting gave what they show. An unknown key is an error
    listing the scorer's options."""
    values: dict[str, Any] = {}
    for name, text in given.items():
        declared = scorer.options.get(name)
        if declared is None:
            known = ", ".join(sorted(scorer.options)) or "none"
            raise KeyError(f"scorer {scorer.name} has no option {name!r} (its options: {known})")
        if typed:
            declared.check(scorer.name, name, text)
            values[name] = text
        else:
            values[name] = declared.parse(scorer.name, name, text)
    changed = {
        k: v for k, v in values.items() if scorer.config.get(k, scorer.options[k].default) != v
    }
    if not changed:
        return scorer
    suffix = ",".join(
        f"{k}={orjson.dumps(v).decode() if not isinstance(v, str) else v}"
        for k, v in sorted(changed.items())
    )
    return dataclasses.replace(
        scorer, version=f"{scorer.version}+{suffix}", config={**scorer.config, **changed}
    )


@dataclass(frozen=True)
class Scorer:
    """A named, versioned scorer with its configuration.

    ``inputs`` names the event kinds (and ``"case"``) the verdict depends on: the runner reads
    only those, and the input hash covers exactly them. Two readings may be named too:
    ``"answer"`` (:attr:`Trace.response`: the response events, or the model calls of a run
    that recorded none) and ``"question"`` (:attr:`Trace.question`: the model calls of a run
    whose start names no question). A model call counts in the hash only where it is read.
    ``metrics`` says which verdict details a report aggregates, under which names.
    """

    name: str
    version: str
    description: str
    fn: ScoreFn
    config: Mapping[str, Any] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    batch: BatchFn | None = None
    metrics: Mapping[str, Metric] = field(default_factory=dict)
    judge: bool = False  # calls an LLM judge: needs a model, not run unless asked for
    # "group": the scorer judges each run among the runs of its case's semantic group; the
    # runner hands it whole groups, and a run's input hash covers its whole group; "session":
    # it judges whole conversations (``conversations``), its verdict kept on a session's last
    # turn
    scope: Literal["run", "group", "session"] = "run"
    # The settings it takes (``config`` holds the values it runs with; a declared option absent
    # from it is unset, so that declaring one never changes an input hash) and the keys of the
    # details its verdicts carry, each with what it means: one place for reports, dashboards and
    # docs to read them from.
    options: Mapping[str, Option] = field(default_factory=dict)
    details: Mapping[str, str] = field(default_factory=dict)
    # Loads what the scorer needs before its first run (a model), so that a follower pays
    # for it at start and not in the lag of the first runs it judges.
    warm: Callable[[], object] | None = None
    # A session scorer's function (``scope == "session"``); ``fn`` then refuses a single run.
    conversations: ConversationFn | None = None

    def __post_init__(self) -> None:
        if (self.scope == "session") != (self.conversations is not None):
            raise ValueError(
                f"scorer {self.name}: a session scorer (scope 'session') needs a conversations "
                "function, and only a session scorer has one"
            )
        if (self.scope == "session") != self.name.startswith("session."):
            raise ValueError(
                f"scorer {self.name}: session scorers, and only they, are named session.*"
            )
        if not self.options:
            return
        unknown = sorted(set(self.config) - set(self.options))
        if unknown:
            raise KeyError(
                f"scorer {self.name}: unknown options {', '.join(unknown)}; it takes "
                f"{', '.join(sorted(self.options))}"
            )
        for name, value in self.config.items():
            self.options[name].check(self.name, name, value)
        missing = sorted({d for d, _ in self.metrics.values()} - set(self.details))
        if missing:
            raise KeyError(f"scorer {self.name}: metrics read undeclared details {missing}")

    def score(self, trace: Trace) -> Outcome | None:
        return self.fn(trace, self.config)

    def outcomes(self, traces: Sequence[Trace]) -> list[Outcome | None]:
        """The outcome for each trace (through ``batch`` when the scorer has one)."""
        if self.batch is not None:
            found = self.batch(traces, self.config)
            if len(found) != len(traces):
                raise RuntimeError(
                    f"scorer {self.name} {self.version}: batch gave {len(found)} outcomes for "
                    f"{len(traces)} traces"
                )
            return found
        return [self.fn(t, self.config) for t in traces]

    @cached_property
    def event_kinds(self) -> frozenset[str]:
        kinds = set(self.inputs) - {"case", *READINGS}
        for reading in READINGS.keys() & set(self.inputs):
            kinds |= READINGS[reading]
        return frozenset(kinds)

    @cached_property
    def _hash_kinds(self) -> tuple[frozenset[str], frozenset[str]]:
        """The kinds whose events the input hash covers: where a reading falls back to the
        model calls, and where it does not (they count only where read)."""
        kinds = set(self.event_kinds)
        if "run.started" not in self.inputs:
            kinds.discard("run.started")
        if "llm.called" in self.inputs:
            return frozenset(kinds), frozenset(kinds)
        return frozenset(kinds), frozenset(kinds - {"llm.called", "llm.messages"})

    def _hashed_kinds(self, trace: Trace) -> frozenset[str]:
        """The kinds whose events this trace's verdict depends on: model calls only where a
        reading falls back to them."""
        with_calls, without = self._hash_kinds
        if with_calls is without or with_calls == without:
            return with_calls
        fallback = ("answer" in self.inputs and not trace.of_kind("response")) or (
            "question" in self.inputs and not (trace.started is not None and trace.started.question)
        )
        return with_calls if fallback else without

    def input_hash(self, trace: Trace) -> str:
        """Hash of what this scorer judges: the ids and schema versions of the events of its
        input kinds (in trace order), the case's digest, the configuration."""
        kinds = self._hashed_kinds(trace)
        every, name = not self.inputs, self.name
        parts = []
        for e in trace.events:
            if e.kind == "verdict" and e.payload.get("scorer") == name:
                continue  # its own verdicts are outputs, not inputs
            if e.kind == "label":
                continue  # people's labels are never a scorer's input
            if every or e.kind in kinds:
                parts.append(e.event_id.bytes)
                parts.append(e.schema_version.to_bytes(2, "big"))
        case = trace.case.digest if trace.case is not None and "case" in self.inputs else "-"
        parts.append(f"|{case}|{self._config_json}".encode())
        return hashlib.sha256(b"".join(parts)).hexdigest()

    @cached_property
    def _config_json(self) -> str:
        return orjson.dumps(dict(self.config), option=orjson.OPT_SORT_KEYS, default=_named).decode()

    def conversation_hash(self, conversation: Conversation) -> str:
        """Hash of what this session scorer judges: the session's id and, turn by turn, the
        events of its input kinds (verdicts only where ``"verdict"`` is an input, and never a
        session scorer's: they are outputs), the case's digest, the configuration. A new turn
        is a new input."""
        kinds = self.event_kinds
        every = not self.inputs
        parts = [conversation.session_id.encode(), b"|"]
        for turn in conversation.turns:
            parts.append(turn.trace_id.encode())
            for e in turn.events:
                if e.kind == "label" or (
                    e.kind == "verdict"
                    and (
                        "verdict" not in kinds
                        or str(e.payload.get("scorer")).startswith("session.")
                    )
                ):
                    continue
                if every or e.kind in kinds:
                    parts.append(e.event_id.bytes)
                    parts.append(e.schema_version.to_bytes(2, "big"))
        case = conversation.case
        digest = case.digest if case is not None and "case" in self.inputs else "-"
        parts.append(f"|{digest}|{self._config_json}".encode())
        return hashlib.sha256(b"".join(parts)).hexdigest()

    def to_verdict(self, trace: Trace, outcome: Outcome, input_hash: str | None = None) -> Verdict:
        return Verdict(
            scorer=self.name,
            scorer_version=self.version,
            input_hash=input_hash or self.input_hash(trace),
            subject_trace_id=trace.trace_id,
            passed=outcome.passed,
            score=outcome.score,
            label=outcome.label,
            failure_type=outcome.failure_type,
            rationale=outcome.rationale,
            details=outcome.details,
            judge_trace_id=outcome.judge_trace_id,
        )

    def verdict(self, trace: Trace) -> Verdict | None:
        """The verdict on ``trace``, or None when there is nothing to judge."""
        outcome = self.outcomes([trace])[0]
        return None if outcome is None else self.to_verdict(trace, outcome)


def session_scorer(
    name: str, version: str, description: str, judge_fn: ConversationFn, **settings: Any
) -> Scorer:
    """A scorer of whole sessions: ``judge_fn`` takes conversations (see :class:`Scorer`)."""

    def one_run(trace: Trace, config: Mapping[str, Any]) -> Outcome | None:
        raise TypeError(f"{name} judges sessions, not a single run: score it over sessions")

    return Scorer(
        name, version, description, one_run, scope="session", conversations=judge_fn, **settings
    )


def _named(value: Any) -> str:
    """A configuration value that is not JSON (a function) by its qualified name."""
    return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', repr(value))}"


# --- sharing work between scorers of one batch -----------------------------------------------


@dataclass
class _Shared:
    """One :func:`shared_outcomes` block: the outcomes computed, and each configuration's
    key (by identity: a configuration does not change while a batch is scored)."""

    outcomes: dict[tuple[Any, ...], Outcome | None] = field(default_factory=dict)
    configs: dict[int, tuple[Mapping[str, Any], bytes]] = field(default_factory=dict)

    def config_key(self, config: Mapping[str, Any]) -> bytes:
        found = self.configs.get(id(config))
        if found is None or found[0] is not config:
            found = self.configs[id(config)] = (config, _config_key(config))
        return found[1]


_memo: contextvars.ContextVar[_Shared | None] = contextvars.ContextVar(
    "agentdocket_scorer_memo", default=None
)


def _config_key(config: Mapping[str, Any]) -> bytes:
    return orjson.dumps(dict(config), default=_named)


@contextmanager
def shared_outcomes() -> Iterator[None]:
    """Within this block, :func:`remembered` computes each (function, trace, config) once, so a
    scorer built from others (``tools.procedural``) reuses their outcomes in the same batch."""
    token = _memo.set(_Shared())
    try:
        yield
    finally:
        _memo.reset(token)


def remembered(fn: ScoreFn, trace: Trace, config: Mapping[str, Any]) -> Outcome | None:
    """``fn(trace, config)``, computed once per :func:`shared_outcomes` block."""
    shared = _memo.get()
    if shared is None:
        return fn(trace, config)
    key = (fn, id(trace), trace.trace_id, shared.config_key(config))
    memo = shared.outcomes
    if key not in memo:
        memo[key] = fn(trace, config)
    return memo[key]


# --- registry ---------------------------------------------------------------------------------

_REGISTRY: dict[str, dict[str, Scorer]] = {}


def register(scorer: Scorer) -> Scorer:
    """Make a scorer available by name and version (a name+version registers once)."""
    versions = _REGISTRY.setdefault(scorer.name, {})
    existing = versions.get(scorer.version)
    if existing is not None and existing is not scorer:
        raise ValueError(f"scorer {scorer.name} version {scorer.version} is already registered")
    versions[scorer.version] = scorer
    return scorer


def unregister(name: str, version: str) -> None:
    """Forget a registered version (for tests and notebooks)."""
    versions = _REGISTRY.get(name, {})
    versions.pop(version, None)
    if not versions:
        _REGISTRY.pop(name, None)


def scorers() -> list[Scorer]:
    """Every registered scorer version, by name then version."""
    return [
        _REGISTRY[name][v]
        for name in sorted(_REGISTRY)
        for v in sorted(_REGISTRY[name], key=version_key)
    ]


def latest(judges: bool = False) -> list[Scorer]:
    """The newest version of each registered scorer (LLM judges only if ``judges``)."""
    found = [get(name) for name in sorted(_REGISTRY)]
    return [s for s in found if judges or not s.judge]


def matching(name: str) -> list[str]:
    """Registered names equal to ``name`` or under it (``review.peer`` ->
    ``review.peer.interaction_planning``, ...)."""
    return sorted(n for n in _REGISTRY if n == name or n.startswith(name + "."))


def get(name: str, version: str | None = None) -> Scorer:
    """A scorer by name; the newest registered version unless ``version`` is given."""
    versions = _REGISTRY.get(name)
    if not versions:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise KeyError(f"no scorer named {name!r}; known: {known}")
    if version is None:
        return versions[max(versions, key=version_key)]
    if version not in versions:
        raise KeyError(f"scorer {name!r} has no version {version!r}; known: {sorted(versions)}")
    return versions[version]


def version_key(version: str) -> tuple[Any, ...]:
    """Orders versions numerically where they are numbers: 2 < 10, 1.2 < 1.10."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in version.split("."))
