"""The annotation page's guard against requests another site makes in a person's browser
(cross-site request forgery): the token each state-changing form carries, and the checks such
a request passes before it changes anything. Pure functions: each check returns why it
refuses, or None. The page (:mod:`agentdocket.people.annotate`) explains the design.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from urllib.parse import urlsplit

FIELD = "csrf"  # the hidden field of each state-changing form, the sign-in form's too
PURPOSE = b"agentdocket/annotate: form token, v1"  # what a signed-in form token is for
SIGNIN_TOKEN = re.compile(r"[0-9a-f]{64}")  # the sign-in cookie's value, as the page draws it
FROM_ITSELF = frozenset({"same-origin", "none"})  # Sec-Fetch-Site values let through
PORTS = {"http": 80, "https": 443}

Origin = tuple[str, str, int]  # scheme, host (lower case), port


def form_token(session: str) -> str:
    """The token a signed-in annotator's forms carry: HMAC-SHA256 of :data:`PURPOSE` under
    their session token (the cookie's value), in hex. Only a browser holding the cookie (or a
    page it was served to) has it; it tells nothing of the session token, and differs from
    the token's digest the store keeps."""
    return hmac.new(session.encode(), PURPOSE, hashlib.sha256).hexdigest()


def signin_token() -> str:
    """A new value for the sign-in cookie (32 random bytes, in hex)."""
    return secrets.token_hex(32)


def same(given: str, expected: str) -> bool:
    """Whether two tokens are equal, in time that does not depend on where they differ (any
    text: compared as UTF-8)."""
    return hmac.compare_digest(given.encode(), expected.encode())


def origin_of(url: str) -> Origin | None:
    """``scheme://host[:port]`` as a comparable origin (the scheme's port when none is
    given), or None for anything else (``null``, a path, a user, a port out of range)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in PORTS or not parts.hostname or "@" in parts.netloc:
        return None
    if parts.path or parts.query or parts.fragment or url.strip().endswith(("?", "#")):
        return None
    return scheme, parts.hostname.lower(), port if port is not None else PORTS[scheme]


def elsewhere(headers: Mapping[str, str], own: str) -> str | None:
    """Why a state-changing request with these headers did not come from the page itself,
    whose origin is ``own``; None when nothing says it did not. ``Sec-Fetch-Site`` (when the
    browser sends it) must be ``same-origin`` or ``none``, so neither another site nor another
    origin of the same site (another port on the host) gets through; ``Origin`` (when sent)
    must be ``own``, and ``null`` is not."""
    fetched = headers.get("sec-fetch-site")
    if fetched is not None and fetched.strip().lower() not in FROM_ITSELF:
        return (
            f"The form was sent from another site (Sec-Fetch-Site: {fetched.strip()[:40]}); "
            "this page takes forms only from itself."
        )
    origin = headers.get("origin")
    if origin is None:
        return None
    theirs = origin_of(origin)
    if theirs is None or theirs != origin_of(own):
        return "The form was sent from another origin; this page takes forms only from itself."
    return None


def session_refusal(form: Mapping[str, str], session: str) -> str | None:
    """Why a signed-in annotator's posted form is refused: it carries no form token, or not
    the one of the session whose cookie came with it (:func:`form_token`); else None."""
    given = form.get(FIELD, "")
    if not given:
        return "The form carries no form token: reload the page and send it again."
    if not same(given, form_token(session)):
        return "The form's token is not your sign-in's: reload the page and send it again."
    return None


def signin_refusal(form: Mapping[str, str], cookie: str | None) -> str | None:
    """Why a posted sign-in form is refused: it carries no token, the browser sent no sign-in
    cookie (cookies off, or the form came from elsewhere), or the two differ; else None."""
    given = form.get(FIELD, "")
    if not given:
        return "The sign-in form carries no form token: reload the page and sign in again."
    if not cookie or not SIGNIN_TOKEN.fullmatch(cookie):
        return (
            "Your browser sent no sign-in cookie with the form (are cookies off for this "
            "page?): reload the page and sign in again."
        )
    if not same(given, cookie):
        return "The sign-in form's token is not your browser's: reload the page and sign in again."
    return None
