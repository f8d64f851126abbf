"""Calling judge models: any langchain-core ``BaseChatModel``, recorded, cached and retried.

Judge scorers do not call models themselves: they hand their questions (:class:`Ask`) to the
:class:`JudgeSession` the runner opens around each batch. The session

- serves a call already made (same model, prompt, temperature, sample index, attempt) from the
  store's ``judge_calls`` cache, so re-scoring is reproducible and never pays twice;
- calls the model for the rest, at most ``max_concurrency`` at a time, backing off on rate
  limits;
- parses each reply in the prompt's format (:mod:`agentdocket.scorers.judges.parse`); an
  unparseable reply is asked again up to ``retries`` times, as a conversation: the question,
  the reply, and a reminder of the format (:func:`~agentdocket.scorers.judges.parse.reminder`),
  so that a model decoding greedily does not just give the same reply again; then it is
  reported as ``judge:unparseable``, never guessed;
- names a reply the model cut off at its output limit (a ``finish_reason`` of ``length``,
  ``max_tokens``) in the reason of its ``judge:unparseable``: "cut off at N tokens";
- records every call it made as an ``llm.called`` event (the messages sent, raw reply, parsed
  result, model, temperature, sample index, attempt, latency, tokens, finish reason) in the
  judge trace of its verdict; the runner appends those events in the same transaction as the
  verdicts.

A retry's messages are all derived from what the cache holds (the question, the stored reply,
the format the reply missed), so a second pass is served from the cache attempt by attempt;
what the cache does not hold is whether a stored reply was cut off, so only a call made in this
pass names its cut-off.
"""

from __future__ import annotations

import contextvars
import hashlib
import importlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentdocket.events import ChatMessage, Event, LlmCalled
from agentdocket.events.model import now
from agentdocket.scorers.base import option
from agentdocket.scorers.judges.parse import Unparseable, reminder
from agentdocket.scorers.judges.unavailable import JudgeUnavailable as JudgeUnavailable
from agentdocket.store.projections import JUDGE_CACHE_KEY as CACHE_KEY

Lookup = Callable[[Sequence[str]], Mapping[str, tuple[str, str]]]


def resolve_model(spec: Any) -> tuple[Any, str]:
    """The chat model and the name it is recorded under. ``spec`` is a ``BaseChatModel`` or a
    string such as ``openai:gpt-4o`` (loaded with langchain's ``init_chat_model``), or
    ``local:smollm2`` (the model run here, :mod:`agentdocket.scorers.judges.local`)."""
    if spec is None:
        raise JudgeUnavailable(
            "this scorer needs a judge model: `agentdocket score --judge PROVIDER:MODEL`, or a "
            "scorer version registered with config={'model': <a BaseChatModel>}"
        )
    if isinstance(spec, str) and spec.startswith("local:"):
        from agentdocket.scorers.judges.local import local_model

        return local_model(spec), spec
    if isinstance(spec, str) and spec.startswith("python:"):
        # python:MODULE:ATTR, a model object or a function making one (custom construction)
        module_name, _, attr = spec.removeprefix("python:").partition(":")
        try:
            found = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise JudgeUnavailable(f"model {spec!r} cannot be loaded: {exc}") from None
        model, _ = resolve_model(
            found() if callable(found) and not hasattr(found, "invoke") else found
        )
        return model, spec.removeprefix("python:")
    if isinstance(spec, str):
        try:
            from langchain.chat_models import (  # type: ignore[import-not-found]
                init_chat_model,
            )
        except ImportError:
            raise JudgeUnavailable(
                f"judge model {spec!r} is named by a string, which needs the 'langchain' "
                "package and the provider's (e.g. langchain-openai): pip install langchain "
                "langchain-openai"
            ) from None
        try:
            return init_chat_model(spec), spec
        except (ImportError, ValueError) as exc:
            raise JudgeUnavailable(f"judge model {spec!r} cannot be loaded: {exc}") from None
    from langchain_core.language_models import BaseChatModel

    if not isinstance(spec, BaseChatModel):
        raise JudgeUnavailable(
            f"a judge model must be a langchain-core BaseChatModel or a 'provider:model' "
            f"string, not {type(spec).__name__}"
        )
    name = (
        getattr(spec, "model_name", None)
        or getattr(spec, "model", None)
        or getattr(spec, "name", None)
        or spec._llm_type
    )
    return spec, str(name)


@dataclass(frozen=True)
class Ask:
    """One question to a judge, for the verdict whose judge trace is ``trace_id``."""

    trace_id: str
    prompt: str
    parse: Callable[[str], Any]
    sample: int = 0
    role: str = "judge"


@dataclass
class Answer:
    """What came of an :class:`Ask`: the parsed verdict, or the failure."""

    parsed: Any = None
    reply: str | None = None
    failure: str | None = None  # judge:unparseable or judge:error
    error: str | None = None
    attempts: int = 0
    cached: int = 0  # attempts served from the cache
    keys: list[str] = field(default_factory=list)
    recorded_in: list[str] = field(default_factory=list)  # judge traces holding its calls
    expected: str | None = None  # the format its last reply missed (for the reminder)

    @property
    def trace_id(self) -> str | None:
        """Where this answer's calls are recorded: its own judge trace when it made a call,
        else the trace of the first call it was served from."""
        return self.recorded_in[-1] if self.recorded_in else None


def cache_key(model: str, temperature: float | None, sample: int, attempt: int, prompt: str) -> str:
    body = orjson.dumps([model, temperature, sample, attempt, prompt])
    return hashlib.sha256(body).hexdigest()


Messages = tuple[tuple[str, str], ...]  # (role, content): user and assistant


def conversation(ask: Ask, answer: Answer) -> Messages:
    """What is sent for ``ask``'s next attempt: its prompt; after a reply that did not parse,
    the prompt, that reply, and a reminder of the format."""
    if answer.reply is None or answer.expected is None:
        return (("user", ask.prompt),)
    return (("user", ask.prompt), ("assistant", answer.reply), ("user", reminder(answer.expected)))


def _keyed(messages: Messages) -> str:
    """The prompt text of ``messages`` in the cache key: the prompt alone for a first attempt
    (the key it always had), the whole conversation for a retry."""
    if len(messages) == 1:
        return messages[0][1]
    return orjson.dumps([list(m) for m in messages]).decode()


# finish reasons saying a reply stopped at the output limit (OpenAI's, Anthropic's, Google's)
CUT_OFF = frozenset({"length", "max_tokens", "MAX_TOKENS"})


def _finish_reason(message: Any) -> str | None:
    metadata = getattr(message, "response_metadata", None) or {}
    reason = metadata.get("finish_reason") or metadata.get("stop_reason")
    return str(reason) if reason else None


@dataclass(frozen=True)
class Call:
    """One call made: its reply or error, time, token usage and finish reason."""

    reply: str | None
    error: str | None
    seconds: float
    usage: Mapping[str, int] = field(default_factory=dict)
    finish: str | None = None

    @property
    def cut_off(self) -> str | None:
        """ "cut off at N tokens" when the model stopped at its output limit."""
        if self.finish not in CUT_OFF:
            return None
        tokens = self.usage.get("output_tokens")
        return f"cut off at {tokens} tokens" if tokens else "cut off at the output limit"


def _rate_limited(exc: BaseException) -> bool:
    status = getattr(exc, "status_code", None) or getattr(exc, "status", None)
    return status == 429 or "ratelimit" in type(exc).__name__.lower()


class JudgeSession:
    """Judge calls for one batch: cached, concurrent, recorded (see the module docstring)."""

    def __init__(
        self,
        lookup: Lookup | None = None,
        *,
        max_concurrency: int = 4,
        rate_limit_retries: int = 5,
        backoff_s: float = 1.0,
        concurrency_cap: int | None = None,
    ) -> None:
        self.lookup: Lookup = lookup or (lambda keys: {})
        self.max_concurrency = max_concurrency
        # an upper bound over any scorer's own max_concurrency (a follower's judge budget)
        self.concurrency_cap = concurrency_cap
        self.cache_hits = 0
        self.rate_limit_retries = rate_limit_retries
        self.backoff_s = backoff_s
        self.events: list[Event] = []
        self.calls_made = 0
        self._seq: dict[str, int] = {}

    def ask(
        self,
        model: Any,
        name: str,
        temperature: float | None,
        asks: Sequence[Ask],
        retries: int = 2,
        max_concurrency: int | None = None,
    ) -> list[Answer]:
        """Every ask answered: from the cache, or by calling ``model``, retrying unparseable
        replies up to ``retries`` times."""
        answers = [Answer() for _ in asks]
        pending = list(range(len(asks)))
        observe = _observer.get()

        def calling(messages: Messages) -> Call:
            made = self._call(model, messages, temperature)
            if observe is not None:
                observe(name)
            return made

        for attempt in range(retries + 1):
            if not pending:
                break
            sent = {i: conversation(asks[i], answers[i]) for i in pending}
            keys = {
                i: cache_key(name, temperature, asks[i].sample, attempt, _keyed(sent[i]))
                for i in pending
            }
            cached = self.lookup(list(keys.values()))
            # each distinct call once: identical questions in a batch share one reply
            first: dict[str, int] = {}
            for i in pending:
                if keys[i] not in cached:
                    first.setdefault(keys[i], i)
            fresh = list(first.values())
            self.cache_hits += sum(1 for i in pending if keys[i] in cached)
            workers = min(max_concurrency or self.max_concurrency, len(fresh))
            if self.concurrency_cap is not None:
                workers = min(workers, self.concurrency_cap)
            workers = max(1, workers)
            with ThreadPoolExecutor(workers) as pool:
                results = list(pool.map(calling, [sent[i] for i in fresh]))
            calls = {keys[i]: result for i, result in zip(fresh, results, strict=True)}
            still = []
            for i in pending:
                answer = answers[i]
                answer.attempts += 1
                answer.keys.append(keys[i])
                call: Call | None = None
                reply: str | None
                if keys[i] in cached:
                    answer.cached += 1
                    reply, error = cached[keys[i]][0], None
                    answer.recorded_in.append(cached[keys[i]][1])
                else:
                    call = calls[keys[i]]
                    reply, error = call.reply, call.error
                    answer.cached += int(first[keys[i]] != i)
                    answer.recorded_in.append(asks[first[keys[i]]].trace_id)
                answer.reply = reply
                if error is not None:
                    answer.failure, answer.error = "judge:error", error
                elif reply is not None:
                    try:
                        answer.parsed = asks[i].parse(reply)
                        answer.failure = answer.expected = None
                    except Unparseable as exc:
                        answer.parsed = None
                        answer.failure, answer.expected = "judge:unparseable", exc.expected
                        cut = call.cut_off if call is not None else None
                        answer.error = f"{cut}: {exc}" if cut else str(exc)
                        still.append(i)
                if call is not None and first.get(keys[i]) == i:
                    # the call made now: recorded with what it parsed to
                    self._record(
                        asks[i], name, temperature, attempt, keys[i], sent[i], call, answer.parsed
                    )
            pending = still
        return answers

    def _call(self, model: Any, messages: Messages, temperature: float | None) -> Call:
        """One call, backing off on rate limits."""
        from langchain_core.messages import AIMessage, HumanMessage

        sent = [HumanMessage(c) if r == "user" else AIMessage(c) for r, c in messages]
        for attempt in range(self.rate_limit_retries + 1):
            started = time.perf_counter()
            try:
                kwargs = {} if temperature is None else {"temperature": temperature}
                try:
                    message = model.invoke(sent, **kwargs)
                except TypeError:  # a model that does not take temperature per call
                    message = model.invoke(sent)
            except Exception as exc:  # a provider's failure is recorded, not raised
                if _rate_limited(exc) and attempt < self.rate_limit_retries:
                    time.sleep(self.backoff_s * 2**attempt)
                    continue
                return Call(None, f"{type(exc).__name__}: {exc}", time.perf_counter() - started)
            self.calls_made += 1
            seconds = time.perf_counter() - started
            content = message.content if isinstance(message.content, str) else str(message.content)
            usage = getattr(message, "usage_metadata", None) or {}
            return Call(content, None, seconds, dict(usage), _finish_reason(message))
        raise AssertionError("unreachable")

    def _record(
        self,
        ask: Ask,
        name: str,
        temperature: float | None,
        attempt: int,
        key: str,
        messages: Messages,
        call: Call,
        parsed: Any,
    ) -> None:
        attributes: dict[str, Any] = {
            CACHE_KEY: key,
            "sample": ask.sample,
            "attempt": attempt,
            "parsed": parsed,
        }
        if call.finish is not None:
            attributes["finish_reason"] = call.finish
        reply = call.reply
        payload = LlmCalled(
            model=name,
            role=ask.role,
            input_messages=[ChatMessage(role=r, content=c) for r, c in messages],
            output_messages=[] if reply is None else [ChatMessage(role="assistant", content=reply)],
            temperature=temperature,
            input_tokens=call.usage.get("input_tokens"),
            output_tokens=call.usage.get("output_tokens"),
            duration_ms=call.seconds * 1000,
            error=call.error,
            attributes=attributes,
        )
        seq = self._seq.get(ask.trace_id, 0)
        self._seq[ask.trace_id] = seq + 1
        self.events.append(
            Event.create(
                trace_id=ask.trace_id, span_id=key[:16], seq=seq, ts=now(), payload=payload
            )
        )


_observer: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar(
    "agentdocket_judge_call_observer", default=None
)


@contextmanager
def observing_calls(observer: Callable[[str], None]) -> Iterator[None]:
    """``observer(model name)`` is told of each judge call made within this block as it
    returns (from the session's threads): a progress display's count of calls."""
    token = _observer.set(observer)
    try:
        yield
    finally:
        _observer.reset(token)


_session: contextvars.ContextVar[JudgeSession | None] = contextvars.ContextVar(
    "agentdocket_judge_session", default=None
)


@contextmanager
def judging(session: JudgeSession) -> Iterator[JudgeSession]:
    """Judge scorers called within this block use ``session``."""
    token = _session.set(session)
    try:
        yield session
    finally:
        _session.reset(token)


def current_session() -> JudgeSession:
    """The runner's session; outside the runner, a session with no cache whose recorded calls
    stay in memory (``scorer.verdict(trace)`` in a notebook)."""
    session = _session.get()
    if session is None:
        session = JudgeSession()
        _session.set(session)
    return session


def linked_trace(own: str, answers: Sequence[Answer]) -> str:
    """The judge trace a verdict links to: its own when a call behind it was made now (or
    nothing was recorded), else the trace of the first call it was served from, so that the
    link always leads to calls."""
    places = [a.trace_id for a in answers if a.trace_id]
    return own if own in places or not places else places[0]


def judge_trace_id(subject_trace_id: str, scorer: str, config: Mapping[str, Any]) -> str:
    """The trace a verdict's judge calls are recorded in: one per run, scorer and judge."""
    body = f"{subject_trace_id}/{scorer}/{config.get('model')!s}/{config.get('temperature')}"
    digest = hashlib.sha256(body.encode()).hexdigest()[:32]
    return digest if digest != "0" * 32 else "1" * 32


# The options every LLM judge takes (a model is needed to run one: --judge, or config["model"]).
JUDGE_OPTIONS = {
    "model": option(
        (str, object), None, "the judge model: a langchain-core chat model, or 'provider:name'"
    ),
    "temperature": option((float, int), 0.0, "sampling temperature of the judge's calls"),
    "retries": option(
        int, 2, "times an unparseable reply is asked again, with a reminder of the format"
    ),
    "max_concurrency": option(int, None, "calls in flight at once (default: the session's)"),
}
