"""Redaction before persistence: secrets and personal data replaced with a marker.

Two kinds of rule, applied to every event payload (and every case) before it is written
anywhere, the database or the local spool:

- **keys**: an object member whose name is a secret's name (``api_key``, ``password``,
  ``authorization``, ``openai_api_key``, ``x-api-key``, ...) has its whole value replaced;
- **patterns**: every match of a regular expression inside any string (an OpenAI or AWS key, a
  GitHub or Slack token, a bearer token, a JWT, an e-mail address) is replaced.

The default rules (``secrets``) cover credentials; ``email`` is a built-in set to opt into.
``AGENTDOCKET_REDACT`` chooses: unset or ``default`` for the defaults, ``off`` for none, or the
path of a TOML file::

    [redaction]
    builtins = ["secrets", "email"]      # default: ["secrets"]
    keys = ["ssn", "customer_number"]    # more member names (matched case-insensitively,
                                         # also as the last part of a longer name)
    marker = "[REDACTED:{rule}]"         # {rule}: the name of the rule that matched
    [redaction.patterns]
    employee_id = "EMP-[0-9]{6}"

Checking costs one search of the payload's JSON text: one pass of an Aho-Corasick automaton
over its lowercased text for every rule's literal, then one search for the patterns that have
none. Only a payload with a hit is walked and rebuilt, so clean events pass through unchanged
(the same object).
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson
from ahocorasick_rs import BytesAhoCorasick, Implementation

from agentdocket.errors import AgentdocketError
from agentdocket.events import Case, Dataset, Event

ENV_VAR = "AGENTDOCKET_REDACT"
DEFAULT_MARKER = "[REDACTED:{rule}]"

# Member names whose value is a secret, as the last ``_``/``-``/``.``-separated part(s) of a
# name: ``api_key`` also covers ``openai_api_key`` and ``x-api-key``.
SECRET_KEYS = (
    "api_key",
    "apikey",
    "access_key",
    "secret_key",
    "private_key",
    "secret",
    "client_secret",
    "password",
    "passwd",
    "token",
    "access_token",
    "refresh_token",
    "auth_token",
    "id_token",
    "session_token",
    "bearer_token",
    "authorization",
    "proxy_authorization",
    "cookie",
    "set_cookie",
    "credentials",
)

BUILTIN_PATTERNS: dict[str, dict[str, str]] = {
    "secrets": {
        "openai_key": r"\bsk-(?:proj-|ant-|or-)?[A-Za-z0-9_-]{16,}",
        "aws_access_key": r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        "github_token": r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})",
        "slack_token": r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
        "google_api_key": r"\bAIza[0-9A-Za-z_-]{35}",
        "jwt": r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        "bearer": r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*",
        "private_key_block": r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
    },
    "email": {
        "email": r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b",
    },
}


# Substrings (lowercase) every match of a built-in pattern contains: the cheap first test.
BUILTIN_LITERALS: dict[str, tuple[str, ...]] = {
    "openai_key": ("sk-",),
    "aws_access_key": ("akia", "asia"),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "slack_token": ("xox",),
    "google_api_key": ("aiza",),
    "jwt": ("eyj",),
    "bearer": ("bearer",),
    "private_key_block": ("-----begin",),
    "email": ("@",),
}
# UTF-8 of the only characters outside ASCII whose lowercase holds an ASCII letter: U+212A
# (to "k") and U+0130 (to "i" and a combining dot). Lowercased as bytes, a payload could hide
# a literal behind them: one that holds them goes to the full probe.
LOWER_TO_ASCII = (b"\xe2\x84\xaa", b"\xc4\xb0")
_BUILTIN_TEXT = {name: p for patterns in BUILTIN_PATTERNS.values() for name, p in patterns.items()}


class RedactionConfigError(AgentdocketError, ValueError):
    """The redaction settings are wrong; the message names the file and the setting."""


def _key_regex(names: Iterable[str]) -> re.Pattern[str]:
    alternatives = sorted({re.escape(n.lower()).replace("_", "[-_.]?") for n in names}, key=len)
    return re.compile(rf"(?i)^(?:[^\"]*[-_.])?(?:{'|'.join(reversed(alternatives))})$")


@dataclass(frozen=True)
class Redactor:
    """Rules and the marker; :meth:`event` and :meth:`dataset` apply them."""

    keys: tuple[str, ...] = SECRET_KEYS
    patterns: tuple[tuple[str, str], ...] = tuple(BUILTIN_PATTERNS["secrets"].items())
    marker: str = DEFAULT_MARKER

    def __post_init__(self) -> None:
        compiled = []
        for name, pattern in self.patterns:
            try:
                compiled.append((name, re.compile(pattern)))
            except re.error as exc:
                raise RedactionConfigError(f"pattern {name!r} ({pattern!r}): {exc}") from None
        object.__setattr__(self, "_patterns", compiled)
        object.__setattr__(self, "_key", _key_regex(self.keys) if self.keys else None)
        # The probe deciding whether a payload needs the walk: substrings any hit must contain
        # (searched in the lowercased JSON text, in C), and the patterns that have none.
        # A secret member's name ends with the last word of a rule's name, then the quote.
        literals = {name.lower().split("_")[-1] + '"' for name in self.keys}
        unfiltered = []
        for name, pattern in self.patterns:
            if name in BUILTIN_LITERALS and pattern == _BUILTIN_TEXT.get(name):
                literals.update(BUILTIN_LITERALS[name])
            else:
                unfiltered.append(pattern)
        # A literal containing a shorter one adds nothing: the shorter one is found first.
        minimal = {x for x in literals if not any(y != x and y in x for y in literals)}
        # All of them searched in one pass over lowercased UTF-8, by an Aho-Corasick automaton
        # (a DFA, in Rust): about 1 us for a 475-character payload, against 5.9 us for one
        # `in` per literal.
        object.__setattr__(
            self,
            "_automaton",
            BytesAhoCorasick(
                [*sorted(x.encode() for x in minimal), *LOWER_TO_ASCII],
                implementation=Implementation.DFA,
            )
            if minimal
            else None,
        )
        # Inline flags are only allowed at the start of a pattern; scope each one.
        scoped = [
            f"(?{p[2 : p.index(')')]}:{p[p.index(')') + 1 :]})" if p.startswith("(?i)") else p
            for p in unfiltered
        ]
        object.__setattr__(
            self, "_probe", re.compile("|".join(f"(?:{p})" for p in scoped)) if scoped else None
        )

    def __reduce__(self) -> tuple[type[Redactor], tuple[Any, ...]]:
        """Pickled as its rules (the compiled probe is made again): a setting a process hands
        to another, as ``serve --processes`` does."""
        return (type(self), (self.keys, self.patterns, self.marker))

    # --- building -------------------------------------------------------------------------------

    @classmethod
    def off(cls) -> Redactor:
        return cls(keys=(), patterns=())

    @classmethod
    def from_env(cls) -> Redactor:
        """The rules ``AGENTDOCKET_REDACT`` chooses (see the module's documentation)."""
        value = os.environ.get(ENV_VAR, "").strip()
        if value in ("", "default"):
            return cls()
        if value.lower() in ("off", "none", "0", "false"):
            return cls.off()
        return cls.from_file(Path(value))

    @classmethod
    def from_file(cls, path: Path) -> Redactor:
        try:
            with open(path, "rb") as f:
                doc = tomllib.load(f)
        except OSError as exc:
            raise RedactionConfigError(f"{path}: cannot read ({exc.strerror})") from None
        except tomllib.TOMLDecodeError as exc:
            raise RedactionConfigError(f"{path}: not valid TOML ({exc})") from None
        section = doc.get("redaction", doc)
        if not isinstance(section, dict):
            raise RedactionConfigError(f"{path}: [redaction] must be a table")
        return cls.from_settings(section, where=str(path))

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], where: str = "settings") -> Redactor:
        known = {"builtins", "keys", "patterns", "marker"}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise RedactionConfigError(
                f"{where}: unknown setting(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(known))})"
            )
        builtins = settings.get("builtins", ["secrets"])
        if not isinstance(builtins, list) or not all(isinstance(b, str) for b in builtins):
            raise RedactionConfigError(f"{where}: builtins must be a list of names")
        patterns: dict[str, str] = {}
        for name in builtins:
            if name not in BUILTIN_PATTERNS:
                raise RedactionConfigError(
                    f"{where}: builtins: unknown set {name!r} "
                    f"(known: {', '.join(BUILTIN_PATTERNS)})"
                )
            patterns.update(BUILTIN_PATTERNS[name])
        extra = settings.get("patterns", {})
        if not isinstance(extra, dict) or not all(isinstance(v, str) for v in extra.values()):
            raise RedactionConfigError(f"{where}: patterns must map names to regular expressions")
        patterns.update(extra)
        keys = settings.get("keys", [])
        if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys):
            raise RedactionConfigError(f"{where}: keys must be a list of member names")
        marker = settings.get("marker", DEFAULT_MARKER)
        if not isinstance(marker, str):
            raise RedactionConfigError(f"{where}: marker must be a string")
        all_keys = (*SECRET_KEYS, *keys) if "secrets" in builtins else tuple(keys)
        try:
            return cls(keys=all_keys, patterns=tuple(patterns.items()), marker=marker)
        except RedactionConfigError as exc:
            raise RedactionConfigError(f"{where}: {exc}") from None

    # --- applying -------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return bool(self.keys or self.patterns)

    def needs(self, value: Any) -> bool:
        """Whether ``value`` (any JSON) may hold something a rule redacts: a cheap test that
        is never wrong when it says no (:meth:`event` checks a yes by applying the rules)."""
        if isinstance(value, str):
            text = value
        else:
            try:
                text = orjson.dumps(value, default=str).decode()
            except TypeError:  # a lone surrogate, an integer past 64 bits: the slower encoder
                text = json.dumps(value, ensure_ascii=False, default=str)
        # Lowercased as text first, which leaves no character whose lowercase is ASCII (the
        # automaton's other patterns); a lone surrogate passes through as its three bytes.
        if self._has_literal(text.lower().encode("utf-8", "surrogatepass")):
            return True
        probe: re.Pattern[str] | None = self._probe  # type: ignore[attr-defined]
        return probe is not None and probe.search(text) is not None

    def flagged(self, raws: Sequence[bytes], texts: Sequence[str]) -> list[bool]:
        """:meth:`needs` of many payloads at once, given as their JSON (UTF-8, and the same as
        text): the automaton reads them all in one call, joined by NUL (which JSON never
        holds raw, and no literal holds), lowercased as bytes. One call, not one a payload:
        the automaton lets go of the interpreter lock while it reads, and a thread taking it
        back waits its turn. A payload holding a character whose lowercase is ASCII (KELVIN
        SIGN, I WITH DOT ABOVE) is flagged too, for the full probe to decide."""
        if not raws:
            return []
        flags = self._flagged_by_literals(raws)
        probe: re.Pattern[str] | None = self._probe  # type: ignore[attr-defined]
        if probe is not None:
            flags = [f or probe.search(t) is not None for f, t in zip(flags, texts, strict=True)]
        return flags

    def _flagged_by_literals(self, raws: Sequence[bytes]) -> list[bool]:
        automaton: BytesAhoCorasick | None = self._automaton  # type: ignore[attr-defined]
        if automaton is None:
            return [False] * len(raws)
        found = automaton.find_matches_as_indexes(b"\x00".join(raws).lower())
        starts = list(itertools.accumulate((len(r) + 1 for r in raws[:-1]), initial=0))
        flags = [False] * len(raws)
        for _, start, _ in found:
            flags[bisect.bisect_right(starts, start) - 1] = True
        return flags

    def _has_literal(self, lower: bytes) -> bool:
        automaton: BytesAhoCorasick | None = self._automaton  # type: ignore[attr-defined]
        return automaton is not None and bool(automaton.find_matches_as_indexes(lower))

    def value(self, value: Any) -> Any:
        """``value`` (any JSON) with every rule applied."""
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, Mapping):
            key: re.Pattern[str] | None = self._key  # type: ignore[attr-defined]
            out = {}
            for k, v in value.items():
                if key is not None and isinstance(k, str) and v is not None and key.match(k):
                    out[k] = self.marker.format(rule=k)
                else:
                    out[k] = self.value(v)
            return out
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def _text(self, text: str) -> str:
        for name, pattern in self._patterns:  # type: ignore[attr-defined]
            if pattern.search(text):
                text = pattern.sub(self.marker.format(rule=name), text)
        return text

    def event(self, event: Event, text: str | None = None, *, probed: bool = False) -> Event:
        """The event with its payload redacted (the same object when nothing matched).
        ``text``, the payload's JSON when the caller has it, spares serialising it again;
        ``probed``: the caller's :meth:`flagged` said yes already."""
        if not probed and not self.needs(event.payload if text is None else text):
            return event
        redacted = self.value(event.payload)
        return event if redacted == event.payload else replace(event, payload=redacted)

    def events(self, events: Sequence[Event]) -> list[Event]:
        if not self.active:
            return list(events)
        return [self.event(e) for e in events]

    def dataset(self, dataset: Dataset) -> Dataset:
        """The dataset with every case redacted (the same object when nothing matched)."""
        if not self.active:
            return dataset
        cases = tuple(self.case(c) for c in dataset.cases)
        if all(new is old for new, old in zip(cases, dataset.cases, strict=True)):
            return dataset
        return replace(dataset, cases=cases)

    def case(self, case: Case) -> Case:
        doc = case.to_json()
        if not self.needs(doc):
            return case
        redacted = self.value(doc)
        return case if redacted == doc else Case.from_json(redacted)
