"""Text the databases cannot hold, stored reversibly.

PostgreSQL refuses the NUL character (U+0000) in ``text`` and ``jsonb``, and no JSON encoder
writes a lone surrogate (U+D800 to U+DFFF, which Python strings may carry). A span whose tool
result holds a NUL is still a span worth keeping, so before anything is written, every string
of a payload or case (member names included) is escaped with the noncharacter U+FDD0, which
Unicode sets aside for a program's internal use:

==========================  =========================
in the data                 stored as
==========================  =========================
U+0000                      U+FDD0 ``0``
U+FDD0                      U+FDD0 U+FDD0
a lone surrogate U+Dxxx     U+FDD0 ``u`` and 4 hex digits
==========================  =========================

Both databases store the same escaped text, and reading unescapes it, so the events read back
(and exported) are the events that came in. Only a payload whose JSON holds one of these
characters is walked; every other one passes through as the same object.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

ESC = "\ufdd0"
ESC_BYTES = ESC.encode()
_NEEDS = re.compile("[\x00\ufdd0\ud800-\udfff]")
_ESCAPED = re.compile("\ufdd0(0|\ufdd0|u[0-9a-f]{4})")


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group()
    if ch == "\x00":
        return ESC + "0"
    if ch == ESC:
        return ESC + ESC
    return f"{ESC}u{ord(ch):04x}"


def _unescape_seq(match: re.Match[str]) -> str:
    code = match.group(1)
    if code == "0":
        return "\x00"
    if code == ESC:
        return ESC
    return chr(int(code[1:], 16))


def escape_text(text: str) -> str:
    return _NEEDS.sub(_escape_char, text) if _NEEDS.search(text) else text


def unescape_text(text: str) -> str:
    return _ESCAPED.sub(_unescape_seq, text) if ESC in text else text


def _walk(value: Any, text: Any) -> Any:
    if isinstance(value, str):
        return text(value)
    if isinstance(value, Mapping):
        return {text(k) if isinstance(k, str) else k: _walk(v, text) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(v, text) for v in value]
    return value


def escape_json(value: Any, raw: bytes | None = None) -> tuple[Any, str | None]:
    """``value`` with its strings escaped (the same object when nothing needs it), and, when
    nothing did, its JSON text: a further probe of the same value (redaction's) can read that
    instead of serialising it again. ``raw``: ``value``'s JSON, when the caller has it."""
    if raw is None:
        try:
            raw = orjson.dumps(value)
        except TypeError:  # a lone surrogate (or a value no JSON can hold: the walk tells)
            return _walk(value, escape_text), None
    if b"\\u0000" in raw or ESC_BYTES in raw:
        return _walk(value, escape_text), None
    return value, raw.decode()


def escape(value: Any) -> Any:
    """``value`` with its strings escaped; the same object when nothing needs it."""
    return escape_json(value)[0]


def unescape(value: Any) -> Any:
    """The inverse of :func:`escape` (a full walk: probe the stored text before calling)."""
    return _walk(value, unescape_text)


def loads(data: str | bytes | bytearray | memoryview) -> Any:
    """JSON text as stored, decoded and unescaped."""
    if isinstance(data, memoryview):
        data = bytes(data)
    value = orjson.loads(data)
    if isinstance(data, str):
        return unescape(value) if ESC in data else value
    return unescape(value) if ESC_BYTES in data else value
