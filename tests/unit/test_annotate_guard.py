"""The annotation page's guard against forged requests, its pure parts: the form tokens, the
origin a request says it comes from, and why each kind of forged form is refused."""

from __future__ import annotations

import re

import pytest

from agentdocket.people.annotate_guard import (
    FIELD,
    SIGNIN_TOKEN,
    elsewhere,
    form_token,
    origin_of,
    same,
    session_refusal,
    signin_refusal,
    signin_token,
)
from agentdocket.store.queues import token_digest

OWN = "http://127.0.0.1:4318"


def test_a_form_token_is_the_session_s_own_and_not_its_stored_digest() -> None:
    token = "n3w-t0ken_abcdefghijklmnopqrstuv"
    assert form_token(token) == form_token(token)  # any serve process derives the same
    assert re.fullmatch(r"[0-9a-f]{64}", form_token(token))
    assert form_token(token) != form_token(token + "x")  # rotated: another token
    assert form_token(token) != token_digest(token)  # a copy of the database does not give it
    assert token not in form_token(token)


def test_a_sign_in_token_is_random_and_of_its_shape() -> None:
    drawn = {signin_token() for _ in range(50)}
    assert len(drawn) == 50 and all(SIGNIN_TOKEN.fullmatch(t) for t in drawn)


def test_tokens_compare_whatever_text_is_sent() -> None:
    assert same("abc", "abc") and not same("abc", "abd") and not same("", "abc")
    assert not same("é\u0000☃", "abc")  # not ASCII: no TypeError, just unequal


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://127.0.0.1:4318", ("http", "127.0.0.1", 4318)),
        ("HTTP://Annotate.Example.COM", ("http", "annotate.example.com", 80)),
        ("https://annotate.example.com:443", ("https", "annotate.example.com", 443)),
        ("http://[::1]:8000", ("http", "::1", 8000)),
        ("null", None),
        ("", None),
        ("file://", None),
        ("ftp://example.com", None),
        ("http://example.com/path", None),
        ("http://example.com?x=1", None),
        ("http://user@example.com", None),
        ("http://example.com:99999", None),
        ("http://example.com:port", None),
        ("http://", None),
    ],
)
def test_an_origin_is_a_scheme_a_host_and_a_port_or_nothing(
    url: str, origin: tuple[str, str, int] | None
) -> None:
    assert origin_of(url) == origin


@pytest.mark.parametrize(
    "headers",
    [
        {},  # an old browser, or no browser: the tokens decide
        {"sec-fetch-site": "same-origin"},
        {"sec-fetch-site": "none"},  # the person's own doing
        {"sec-fetch-site": "same-origin", "origin": OWN},
        {"origin": "http://127.0.0.1:4318"},
        {"origin": "HTTP://127.0.0.1:4318"},
    ],
)
def test_a_request_from_the_page_itself_passes(headers: dict[str, str]) -> None:
    assert elsewhere(headers, OWN) is None
    assert elsewhere({"origin": "https://a.example"}, "https://a.example:443") is None


@pytest.mark.parametrize(
    ("headers", "said"),
    [
        ({"sec-fetch-site": "cross-site"}, "another site (Sec-Fetch-Site: cross-site)"),
        ({"sec-fetch-site": "same-site"}, "Sec-Fetch-Site: same-site"),  # another port
        ({"sec-fetch-site": "something-new"}, "another site"),  # unknown: refused
        ({"sec-fetch-site": "cross-site", "origin": OWN}, "Sec-Fetch-Site: cross-site"),
        ({"origin": "http://localhost:4318"}, "another origin"),
        ({"origin": "http://127.0.0.1:4319"}, "another origin"),
        ({"origin": "https://127.0.0.1:4318"}, "another origin"),
        ({"origin": "null"}, "another origin"),  # a sandboxed frame, a file
        ({"origin": ""}, "another origin"),
        ({"sec-fetch-site": "same-origin", "origin": "http://evil.example"}, "another origin"),
    ],
)
def test_a_request_from_elsewhere_is_refused_saying_so(headers: dict[str, str], said: str) -> None:
    why = elsewhere(headers, OWN)
    assert why is not None and said in why


def test_a_signed_in_form_needs_its_session_s_token() -> None:
    session = "ann-session-token"
    assert session_refusal({FIELD: form_token(session)}, session) is None
    missing = session_refusal({"nonce": "0" * 32}, session)
    assert missing is not None and "no form token" in missing
    assert session_refusal({FIELD: ""}, session) == missing
    for wrong in (form_token("bob-session-token"), session, "0" * 64, "é"):
        why = session_refusal({FIELD: wrong}, session)
        assert why is not None and "not your sign-in's" in why


def test_a_sign_in_form_needs_the_browser_s_sign_in_cookie_echoed() -> None:
    cookie = signin_token()
    assert signin_refusal({FIELD: cookie, "token": "t"}, cookie) is None
    missing = signin_refusal({"token": "t"}, cookie)
    assert missing is not None and "no form token" in missing
    for absent in (None, "", "not-one-the-page-draws"):
        why = signin_refusal({FIELD: cookie}, absent)
        assert why is not None and "no sign-in cookie" in why
    wrong = signin_refusal({FIELD: signin_token()}, cookie)
    assert wrong is not None and "not your browser's" in wrong
    # a page elsewhere that guesses the field but cannot send the cookie
    assert signin_refusal({FIELD: "0" * 64}, None) is not None
