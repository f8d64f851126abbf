"""The annotators' page (``/annotate/`` on ``agentdocket serve``): two annotators label a whole
queue in headless Chromium, driven by Selenium through the keyboard alone (a skip, a step back
and a relabel among it), against the real serve process; forged forms from pages on other
origins, auto-submitted in that browser, refused and changing nothing; and its HTTP contract in
process (sign-in, access, validation, a double submit, hostile text, each way a forged
request is refused). On SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
import http.server
import json
import os
import random
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from click.testing import CliRunner
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.wait import WebDriverWait
from starlette.applications import Starlette
from starlette.testclient import TestClient

from agentdocket.cli import main
from agentdocket.events import (
    Case,
    ChatMessage,
    Dataset,
    Document,
    Event,
    LlmCalled,
    Retrieval,
    ToolCalled,
    ToolReturned,
)
from agentdocket.events.rubrics import Rubric
from agentdocket.people.agreement import fleiss_kappa, krippendorff_alpha
from agentdocket.people.annotate import COOKIE, SIGNIN_COOKIE, Annotation
from agentdocket.people.annotate_guard import FIELD, form_token
from agentdocket.store import Opener, open_store
from agentdocket.store.labels import StoredLabel, latest
from tests.helpers.agreement_reference import alpha_by_pairs, fleiss_by_formula
from tests.helpers.factory import T0, run_events, span, verdict_event
from tests.helpers.otlp_server import Server

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
HOSTILE = "<script>alert(1)</script>"
REASON = "cannot tell from the trace"
CORRECT = Rubric(name="correct", question="Is the answer correct?", kind="pass_fail")
CLARITY = Rubric(
    name="clarity", question="How clear is the answer? (1: muddled, 5: crisp)", kind="scale"
)


@dataclass(frozen=True)
class Seeded:
    ids: list[str]  # the queue's items, in order
    tokens: dict[str, str]  # annotator -> token


def _worded(events: list[Event], i: int, answer: str | None = None) -> list[Event]:
    """A run of the factory with a question and an answer a person can read."""
    out = []
    for e in events:
        p = dict(e.payload)
        if e.kind == "run.started":
            p["question"] = f"How many concerts did the Blue Hall host in {2010 + i}?"
        elif e.kind == "response":
            p["text"] = answer or f"The Blue Hall hosted {3 * i + 4} concerts in {2010 + i}."
        else:
            out.append(e)
            continue
        out.append(dataclasses.replace(e, payload=p))
    return out


def _seed(url: str, n: int = 20) -> Seeded:
    """``n`` runs (the last one answering with a script), a dataset case with its reference
    answer, verdicts on some runs, two rubrics, three annotators, the queue ``main`` of the
    runs (two annotators an item: ann and bob) and the queue ``other`` (eve's alone)."""
    rng = random.Random(11)
    case = Case(case_id="c1", reference_answer="The Blue Hall's yearly concert count.")
    with open_store(url) as store:
        store.datasets.register(Dataset("ds", "1", (case,), "concerts"))
        ids = []
        for i in range(n):
            start = T0.replace(minute=i)
            events = _worded(run_events(rng, start=start), i, HOSTILE if i == n - 1 else None)
            if i % 2 == 0:
                events.append(verdict_event(events, passed=i % 4 == 0))
            store.append(events)
            ids.append(events[0].trace_id)
        for rubric in (CORRECT, CLARITY):
            store.labels.register_rubric(rubric)
        tokens = {who: store.queues.add_annotator(who) for who in ("ann", "bob", "eve")}
        rubrics = [("correct", "1"), ("clarity", "1")]
        store.queues.create(
            "main",
            rubrics=rubrics,
            per_item=2,
            items=ids,
            members=["ann", "bob"],
            selection={"runs": n},
            show_verdicts=True,
        )
        store.queues.create(
            "other", rubrics=rubrics, per_item=1, items=ids[:1], members=["eve"], selection={}
        )
    return Seeded(ids, tokens)


# --- in process: the HTTP contract --------------------------------------------------------------


@pytest.fixture
def page(url: str) -> Iterator[tuple[TestClient, Seeded]]:
    seeded = _seed(url, 3)
    annotation = Annotation(Opener(url))
    yield TestClient(Starlette(routes=annotation.routes)), seeded
    annotation.close()


def _field(html: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert found is not None, name
    return found.group(1)


def _nonce(html: str) -> str:
    nonce = _field(html, "nonce")
    assert re.fullmatch(r"[0-9a-f]{32}", nonce)
    return nonce


def _signed_in(client: TestClient, token: str) -> None:
    """The client signed in with ``token``: the cookie, as signing in sets it."""
    client.cookies.clear()
    client.cookies.set(COOKIE, token)


def test_signing_in_sets_a_strict_cookie_and_a_wrong_token_is_401(
    page: tuple[TestClient, Seeded],
) -> None:
    client, seeded = page
    shown = client.get("/annotate/")
    assert shown.status_code == 200 and shown.headers["referrer-policy"] == "same-origin"
    presession = shown.headers["set-cookie"]
    assert presession.startswith(f"{SIGNIN_COOKIE}=")
    for flag in ("HttpOnly", "SameSite=strict", "Path=/annotate"):
        assert flag in presession
    assert "expires" not in presession.lower() and "max-age" not in presession.lower()
    signin = _field(shown.text, FIELD)
    assert client.cookies[SIGNIN_COOKIE] == signin and re.fullmatch(r"[0-9a-f]{64}", signin)
    again = client.get("/annotate/")  # a second tab: the same token, so both forms work
    assert _field(again.text, FIELD) == signin
    wrong = client.post("/annotate/login", data={FIELD: signin, "token": "not-a-token"})
    assert wrong.status_code == 401 and "No annotator has that token" in wrong.text
    assert _field(wrong.text, FIELD) == signin
    item = f"/annotate/q/main/item/{seeded.ids[0]}"
    assert client.get(item, follow_redirects=False).headers["location"] == "/annotate/"
    right = client.post("/annotate/login", data={FIELD: signin, "token": seeded.tokens["ann"]})
    cookies = right.history[0].headers.get_list("set-cookie")
    (cookie,) = [c for c in cookies if c.startswith(f"{COOKIE}=")]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/annotate" in cookie
    (dropped,) = [c for c in cookies if c.startswith(f"{SIGNIN_COOKIE}=")]
    assert "Max-Age=0" in dropped  # the pre-session cookie has done its work
    assert SIGNIN_COOKIE not in client.cookies
    assert "main" in right.text and "Start" in right.text
    assert "script-src 'sha256-" in right.headers["content-security-policy"]
    assert _field(right.text, FIELD) == form_token(seeded.tokens["ann"])  # the sign-out form
    out = client.post("/annotate/logout", data={FIELD: form_token(seeded.tokens["ann"])})
    assert "Sign in to annotate" in out.text and COOKIE not in client.cookies


def test_an_annotator_sees_only_their_queues_and_their_items(
    page: tuple[TestClient, Seeded],
) -> None:
    client, seeded = page
    _signed_in(client, seeded.tokens["ann"])
    assert client.get(f"/annotate/q/main/item/{seeded.ids[0]}").status_code == 200
    # a run that exists, in a queue she is not in; a queue she is not in; no such run
    assert client.get(f"/annotate/q/other/item/{seeded.ids[0]}").status_code == 404
    assert client.get("/annotate/q/other/next").status_code == 404
    assert client.get(f"/annotate/q/main/item/{'0' * 32}").status_code == 404
    assert client.get("/annotate/q/main/item/nope").status_code == 404
    assert client.get("/annotate/nowhere").status_code == 404


def test_a_wrong_answer_is_422_naming_the_rubric_and_a_double_submit_is_one_label(
    page: tuple[TestClient, Seeded], url: str
) -> None:
    client, seeded = page
    _signed_in(client, seeded.tokens["bob"])
    item = f"/annotate/q/main/item/{seeded.ids[2]}"
    shown = client.get(item).text
    nonce, token = _nonce(shown), _field(shown, FIELD)
    assert token == form_token(seeded.tokens["bob"])
    bad = client.post(
        item, data={FIELD: token, "nonce": nonce, "action": "label", "answer-0": "true"}
    )
    assert bad.status_code == 422 and "rubric &#x27;clarity&#x27;: choose an answer" in bad.text
    assert 'value="true" checked' in bad.text  # what was sent stays chosen
    assert _field(bad.text, FIELD) == token  # and the form can be sent again
    bad = client.post(
        item,
        data={FIELD: token, "nonce": nonce, "action": "label", "answer-0": "true", "answer-1": "7"},
    )
    assert bad.status_code == 422 and "from 1 to 5" in bad.text
    form = {FIELD: token, "nonce": nonce, "action": "label", "answer-0": "false", "answer-1": "2"}
    for _ in range(2):
        sent = client.post(item, data=form, follow_redirects=False)
        assert sent.status_code == 303 and sent.headers["location"] == "/annotate/q/main/next"
    with open_store(url) as store:
        given = store.labels.given(queue="main")
    assert sorted((g.rubric, g.value) for g in given) == [("clarity", 2), ("correct", False)]
    again = client.get(item).text
    assert 'value="false" checked' in again and 'value="2" checked' in again
    assert "planner.suffix_match" in again  # the judges' verdicts, now that bob labelled it
    no_reason = client.post(
        item, data={FIELD: token, "nonce": _nonce(again), "action": "skip", "reason": ""}
    )
    assert no_reason.status_code == 422 and "why you skip" in no_reason.text
    assert 'value="false" checked' in no_reason.text  # his labels stay shown


def test_a_run_s_hostile_text_shows_as_text(page: tuple[TestClient, Seeded]) -> None:
    client, seeded = page
    _signed_in(client, seeded.tokens["ann"])
    text = client.get(f"/annotate/q/main/item/{seeded.ids[-1]}").text
    assert HOSTILE not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


# --- in process: forged requests -----------------------------------------------------------------


@dataclass(frozen=True)
class Sent:
    """A state-changing request as the page's own form sends it: where to, the form, and the
    cookies the browser holds."""

    path: str
    form: dict[str, str]
    cookies: dict[str, str]


def _own_forms(client: TestClient, seeded: Seeded) -> dict[str, Sent]:
    """Ann's label, skip and sign-out as her page's forms send them, and a sign-in as eve from
    a browser shown the sign-in form."""
    ann = seeded.tokens["ann"]
    sent = {}
    for action, tid, more in (
        ("label", seeded.ids[0], {"answer-0": "false", "answer-1": "1"}),
        ("skip", seeded.ids[1], {"reason": "unreadable"}),
    ):
        _signed_in(client, ann)
        shown = client.get(f"/annotate/q/main/item/{tid}").text
        form = {FIELD: _field(shown, FIELD), "nonce": _nonce(shown), "action": action, **more}
        sent[action] = Sent(f"/annotate/q/main/item/{tid}", form, {COOKIE: ann})
    sent["logout"] = Sent("/annotate/logout", {FIELD: form_token(ann)}, {COOKIE: ann})
    client.cookies.clear()
    signin = _field(client.get("/annotate/").text, FIELD)
    token = seeded.tokens["eve"]
    sent["login"] = Sent(
        "/annotate/login", {FIELD: signin, "token": token}, {SIGNIN_COOKIE: signin}
    )
    client.cookies.clear()
    return sent


def _send(client: TestClient, sent: Sent, headers: dict[str, str]) -> Any:  # httpx2's Response
    """Post ``sent`` as a browser does (an empty form too is a form), with ``headers``."""
    client.cookies.clear()
    for name, value in sent.cookies.items():
        client.cookies.set(name, value)
    return client.post(
        sent.path,
        content=urlencode(sent.form),
        headers={"content-type": "application/x-www-form-urlencoded", **headers},
        follow_redirects=False,
    )


def _labels(url: str) -> list[tuple[str, str, str, object, str | None]]:
    with open_store(url) as store:
        given = store.labels.given(queue="main")
    return sorted((g.author, g.trace_id, g.rubric, g.value, g.skipped) for g in given)


def _without(form: dict[str, str], name: str) -> dict[str, str]:
    return {k: v for k, v in form.items() if k != name}


def _wrong_token(form: dict[str, str], seeded: Seeded) -> dict[str, str]:
    """The form with another's token: bob's session's, or another browser's sign-in."""
    other = form_token(seeded.tokens["bob"]) if "token" not in form else "0" * 64
    return {**form, FIELD: other}


# each way a request is refused: what it does to the page's own form and headers, what 403 says
Change = Callable[[dict[str, str], Seeded], dict[str, str]]
FORGED: dict[str, tuple[Change, dict[str, str], str]] = {
    "missing token": (lambda f, s: _without(f, FIELD), {}, "no form token"),
    "wrong token": (_wrong_token, {}, "reload the page"),
    "cross-site": (lambda f, s: f, {"sec-fetch-site": "cross-site"}, "another site"),
    "same-site": (lambda f, s: f, {"sec-fetch-site": "same-site"}, "another site"),
    "foreign origin": (lambda f, s: f, {"origin": "http://localhost:4318"}, "another origin"),
    "null origin": (lambda f, s: f, {"origin": "null"}, "another origin"),
}


@pytest.mark.parametrize("how", list(FORGED))
def test_a_forged_request_is_403_and_changes_nothing(
    page: tuple[TestClient, Seeded], url: str, how: str
) -> None:
    """Each state-changing form (label, skip, sign-out, sign-in), refused one way: 403 saying
    why, no label, no cookie set or dropped."""
    client, seeded = page
    change, headers, why = FORGED[how]
    before = _labels(url)
    for action, own in _own_forms(client, seeded).items():
        forged = dataclasses.replace(own, form=change(own.form, seeded))
        refused = _send(client, forged, headers)
        assert refused.status_code == 403, (action, refused.text)
        assert "<title>Refused" in refused.text and why in refused.text, action
        assert "Nothing was changed." in refused.text
        assert "set-cookie" not in refused.headers, action  # no sign-in, no sign-out
        assert dict(client.cookies) == forged.cookies
        assert _labels(url) == before, action
        home = client.get("/annotate/").text
        assert ("signed in as <strong>ann</strong>" in home) == (action != "login")


def test_the_page_s_own_forms_pass_with_the_headers_a_browser_sends(
    page: tuple[TestClient, Seeded], url: str
) -> None:
    client, seeded = page
    own = _own_forms(client, seeded)
    headers = {"sec-fetch-site": "same-origin", "origin": "http://testserver"}
    for action in ("label", "skip"):
        sent = _send(client, own[action], headers)
        assert (sent.status_code, sent.headers["location"]) == (303, "/annotate/q/main/next")
    assert [(a, t, r, s) for a, t, r, _, s in _labels(url)] == sorted(
        [
            ("ann", seeded.ids[0], "correct", None),
            ("ann", seeded.ids[0], "clarity", None),
            ("ann", seeded.ids[1], "correct", "unreadable"),
            ("ann", seeded.ids[1], "clarity", "unreadable"),
        ]
    )
    out = _send(client, own["logout"], {**headers, "sec-fetch-site": "none"})
    assert out.status_code == 303
    dropped = out.headers["set-cookie"]
    assert dropped.startswith(f'{COOKIE}="";') and "Max-Age=0" in dropped
    signed = _send(client, own["login"], {})  # no browser: the tokens decide
    assert signed.status_code == 303
    assert signed.headers["set-cookie"].startswith(f"{COOKIE}={seeded.tokens['eve']};")
    _signed_in(client, seeded.tokens["eve"])
    assert "signed in as <strong>eve</strong>" in client.get("/annotate/").text


def test_a_sign_in_needs_the_browser_s_own_sign_in_cookie(
    page: tuple[TestClient, Seeded],
) -> None:
    """A form elsewhere can copy the field's shape but not make the browser send the cookie."""
    client, seeded = page
    signin = _field(client.get("/annotate/").text, FIELD)
    form = {FIELD: signin, "token": seeded.tokens["ann"]}
    for cookie in (None, "not-one-the-page-draws", "1" * 64):
        client.cookies.clear()
        if cookie is not None:
            client.cookies.set(SIGNIN_COOKIE, cookie)
        refused = client.post("/annotate/login", data=form)
        assert refused.status_code == 403 and "set-cookie" not in refused.headers
        assert COOKIE not in client.cookies
    # a sign-out with no session: nothing to end, nothing changed
    client.cookies.clear()
    gone = client.post("/annotate/logout", data={FIELD: ""}, follow_redirects=False)
    assert gone.status_code == 303 and "set-cookie" not in gone.headers


# --- in a browser: the whole queue through the keyboard -----------------------------------------


def _browser(tmp_path: Path) -> WebDriver:
    options = Options()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,900",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ):
        options.add_argument(arg)
    return webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))


def _press(driver: WebDriver, *keys: str) -> None:
    """Keys as a person types them, to whatever has the focus (the page, at first)."""
    ActionChains(driver).send_keys(*keys).perform()


def _press_and_load(driver: WebDriver, *keys: str) -> None:
    """Press ``keys``, then wait until the page they lead to has loaded (a mark set on this
    page's window is gone: another document is there)."""
    driver.execute_script("window.leaving = true")
    _press(driver, *keys)
    WebDriverWait(driver, 30, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script("return !window.leaving && document.readyState === 'complete'")
    )


def _item(driver: WebDriver) -> str | None:
    found = re.search(r"/item/([0-9a-f]{32})$", driver.current_url)
    return found.group(1) if found else None


def _checked(driver: WebDriver) -> list[str]:
    radios = driver.find_elements(By.CSS_SELECTOR, "input[type=radio]:checked")
    return [str(r.get_attribute("value")) for r in radios]


class Shots:
    """Screenshots: into docs/images with AGENTDOCKET_SCREENSHOTS=1, else the test's tmp."""

    def __init__(self, tmp_path: Path) -> None:
        self.folder = DOCS_IMAGES if os.environ.get("AGENTDOCKET_SCREENSHOTS") == "1" else tmp_path
        self.folder.mkdir(parents=True, exist_ok=True)

    def take(self, driver: WebDriver, name: str, width: int = 1280) -> None:
        if width != 1280:
            driver.set_window_size(width, 900)
        path = self.folder / f"annotation-{name}.png"
        assert driver.save_screenshot(str(path)), path
        if width != 1280:
            driver.set_window_size(1280, 900)
        assert path.stat().st_size < 150_000, f"{path}: {path.stat().st_size} bytes"


def _answers(who: str, n: int) -> tuple[str, str]:
    """The keys ``who`` presses on their ``n``th item: correct (1 pass, 2 fail), clarity."""
    return ("2" if (n + len(who)) % 3 == 0 else "1"), str(1 + (n + len(who)) % 5)


def _work_through(driver: WebDriver, who: str, shots: Shots | None) -> dict[str, tuple[str, str]]:
    """``who`` labels every item the queue hands them, keys only; ann skips her third item
    and, from her fourth, steps back to it and labels it after all; bob, from his sixth,
    steps back to his fifth and changes both answers. Returns the keys each item got last."""
    given: dict[str, tuple[str, str]] = {}
    order: list[str] = []
    while (tid := _item(driver)) is not None:
        if tid not in order:
            order.append(tid)
            n = len(order)
            if who == "bob" and n == 6:
                previous = order[4]
                _press_and_load(driver, "b")
                assert _item(driver) == previous
                was = given[previous]
                assert _checked(driver) == ["true" if was[0] == "1" else "false", was[1]]
                assert driver.find_elements(By.XPATH, "//h2[contains(., 'verdicts')]")
                given[previous] = ("2", "2")
                _press_and_load(driver, "2", "2", Keys.ENTER)
                assert _item(driver) == tid  # on to the item he had before
            if who == "ann" and n == 3:
                _press(driver, "s")
                _press_and_load(driver, REASON, Keys.ENTER)
                continue
            if who == "ann" and n == 4:
                _press_and_load(driver, "b")
                assert _item(driver) == order[2]
                reason = driver.find_element(By.ID, "skip-reason").get_attribute("value")
                assert reason == REASON and _checked(driver) == []
                given[order[2]] = ("1", "5")
                _press_and_load(driver, "1", "5", Keys.ENTER)
                assert _item(driver) == tid
        answer = driver.find_element(By.CSS_SELECTOR, ".answer").text
        if "alert" in answer:  # the run answering with a script: shown, not run
            assert answer == HOSTILE
            with pytest.raises(NoAlertPresentException):
                driver.switch_to.alert.accept()
        else:
            assert answer.startswith("The Blue Hall hosted")
        keys = _answers(who, len(order))
        given[tid] = keys
        _press(driver, keys[0])
        if shots is not None and len(order) == 1:
            shots.take(driver, "item")
            shots.take(driver, "item-narrow", width=400)
        _press_and_load(driver, keys[1], Keys.ENTER)
    assert driver.title.startswith("main: done"), driver.title
    if shots is not None:
        shots.take(driver, "done")
    return given


@pytest.mark.slow
@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="no /usr/bin/chromium (scripts/browser-up installs it)"
)
def test_two_annotators_label_a_queue_with_the_keyboard(url: str, tmp_path: Path) -> None:
    seeded = _seed(url)
    server = Server(url, tmp_path / "spool").start()
    base = f"http://127.0.0.1:{server.port}"
    driver = _browser(tmp_path)
    try:
        assert f"annotation page on {base}/annotate/" in server.log.read_text()
        shots = Shots(tmp_path)
        keys: dict[str, dict[str, tuple[str, str]]] = {}
        for who in ("ann", "bob"):
            driver.delete_all_cookies()
            driver.get(f"{base}/annotate/")
            if who == "ann":
                shots.take(driver, "signin")
                _press_and_load(driver, "wrong token", Keys.ENTER)
                assert "No annotator has that token" in driver.page_source
            _press_and_load(driver, seeded.tokens[who], Keys.ENTER)
            assert "Your queues" in driver.title
            assert "<strong>main</strong>" in driver.page_source
            assert "<strong>other</strong>" not in driver.page_source
            _press_and_load(driver, "1")  # the first queue: main
            keys[who] = _work_through(driver, who, shots if who == "ann" else None)
        # over HTTP: another queue's item, although the run exists, and a wrong token
        ann = {COOKIE: seeded.tokens["ann"]}
        other = httpx.get(f"{base}/annotate/q/other/item/{seeded.ids[0]}", cookies=ann)
        assert other.status_code == 404
        with httpx.Client(base_url=base) as client:
            bare = client.post("/annotate/login", data={"token": "wrong"})
            assert bare.status_code == 403 and "no form token" in bare.text
            signin = _field(client.get("/annotate/").text, FIELD)
            login = client.post("/annotate/login", data={FIELD: signin, "token": "wrong"})
            assert login.status_code == 401
    finally:
        driver.quit()
        server.stop()

    with open_store(url) as store:
        given = store.labels.given(queue="main")
        queue = store.queues.get("main")
        assert queue is not None
        progress = store.queues.progress(queue)
    assert all(g.source == "queue" and g.rubric_version == "1" for g in given)
    skips = [g for g in given if g.skipped is not None]
    assert {(g.author, g.skipped, g.rubric) for g in skips} == {
        ("ann", REASON, "correct"),
        ("ann", REASON, "clarity"),
    }
    labels = [g for g in given if g.skipped is None]
    times = Counter((g.author, g.trace_id, g.rubric) for g in labels)
    twice = {key for key, n in times.items() if n > 1}
    (relabelled,) = {tid for _, tid, _ in twice}
    assert twice == {("bob", relabelled, "correct"), ("bob", relabelled, "clarity")}
    assert max(times.values()) == 2
    current = latest(given)
    assert len(current) == 20 * 2 * 2
    for tid in seeded.ids:
        assert {g.author for g in current if g.trace_id == tid} == {"ann", "bob"}
    for g in current:
        correct, clarity = keys[g.author][g.trace_id]
        want = (correct == "1") if g.rubric == "correct" else int(clarity)
        assert g.value == want, (g.author, g.trace_id, g.rubric)
    assert keys["bob"][relabelled] == ("2", "2")
    assert (progress.complete, progress.labels) == (20, 40)
    _agreement_is_the_reference_computation(url, current)


def _agreement_is_the_reference_computation(url: str, current: list[StoredLabel]) -> None:
    """``agreement --queue main`` on what the annotators gave: the point estimates as the
    loop-based formulas from the papers compute them, the intervals as the statistics module
    gives them on the labels read here."""
    out = CliRunner().invoke(
        main, ["--database", url, "agreement", "--queue", "main", "--format", "json"]
    )
    assert out.exit_code == 0, out.output
    found = {r["rubric"]: r for r in json.loads(out.output)}
    for rubric in ("correct", "clarity"):
        by_run: dict[str, dict[str, object]] = {}
        for g in current:
            if g.rubric == rubric:
                by_run.setdefault(g.trace_id, {})[g.author] = g.value
        units = [[by_run[t].get(w) for w in ("ann", "bob")] for t in sorted(by_run)]
        items = [[v for v in unit if v is not None] for unit in units]
        got = found[rubric]
        fleiss = fleiss_kappa(items, samples=1000, seed=0)
        alpha = krippendorff_alpha(units, samples=1000, seed=0)
        assert got["fleiss"]["value"] == pytest.approx(fleiss_by_formula(items), abs=1e-12)
        assert got["alpha_nominal"]["value"] == pytest.approx(
            float(alpha_by_pairs(units, "nominal")), abs=1e-12
        )
        assert (got["fleiss"]["low"], got["fleiss"]["high"]) == (fleiss.low, fleiss.high)
        assert (got["alpha_nominal"]["low"], got["alpha_nominal"]["high"]) == (
            alpha.low,
            alpha.high,
        )
        (pair,) = got["pairwise"]
        assert (pair["first"], pair["second"]) == ("ann", "bob")
    ordinal = found["clarity"]["alpha_ordinal"]
    assert ordinal is not None and ordinal["low"] is not None


# --- in a browser: what is judged first, the trace below -----------------------------------------


def _long_run(rng: random.Random) -> list[Event]:
    """A worded run of the factory whose trace is long: before its answer, twelve retrievals of
    five documents each, and six tool calls and six model calls among them."""
    events = _worded(run_events(rng, start=T0.replace(hour=13)), 7)
    at = next(i for i, e in enumerate(events) if e.kind == "response")
    head, tail = events[:at], events[at:]
    tid, root = head[0].trace_id, head[0].span_id
    payloads: list[Any] = []
    for k in range(12):
        text = f"The Blue Hall's programme for the season, part {k}: concerts, dates, prices. "
        documents = [
            Document(id=f"hall-{k}-{d}", score=0.9 - d / 10, text=text * 3) for d in range(5)
        ]
        payloads.append(Retrieval(query=f"Blue Hall concerts, part {k}", documents=documents))
        if k % 2 == 0:
            payloads += [
                ToolCalled(call_id=f"more-{k}", tool="search", arguments={"q": f"concerts {k}"}),
                ToolReturned(call_id=f"more-{k}", result={"hits": [k, k + 1]}),
                LlmCalled(
                    model="m-plan",
                    role="planner",
                    output_messages=[ChatMessage(role="assistant", content="Look further.")],
                ),
            ]
    seq, ts = len(head), head[-1].ts
    steps = []
    for payload in payloads:
        ts += timedelta(milliseconds=10)
        steps.append(
            Event.create(
                trace_id=tid,
                span_id=span(rng),
                parent_span_id=root,
                seq=seq,
                ts=ts,
                payload=payload,
            )
        )
        seq += 1
    ends = [
        dataclasses.replace(e, seq=seq + j, ts=ts + timedelta(milliseconds=10 * (j + 1)))
        for j, e in enumerate(tail)
    ]
    return [*head, *steps, *ends]


def _boxes(driver: WebDriver, *selectors: str) -> dict[str, dict[str, float]]:
    """Where the first element of each selector is on the page as shown (its bounding box in
    the viewport), with the viewport's height and width as ``fold`` and ``width``."""
    found = driver.execute_script(
        """
        var out = {};
        arguments[0].forEach(function (css) {
          var el = document.querySelector(css);
          if (!el) return;
          var r = el.getBoundingClientRect();
          out[css] = {top: r.top, bottom: r.bottom, left: r.left, right: r.right};
        });
        out.page = {fold: window.innerHeight, width: document.documentElement.clientWidth,
                    scrollWidth: document.documentElement.scrollWidth,
                    height: document.documentElement.scrollHeight, scrolled: window.scrollY};
        return out;
        """,
        list(selectors),
    )
    assert set(found) == {*selectors, "page"}, (selectors, found)
    return {k: {n: float(v) for n, v in box.items()} for k, box in found.items()}


JUDGED = (".question", ".answer", ".reference", "fieldset.rubric input", "#save")


@pytest.mark.slow
@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="no /usr/bin/chromium (scripts/browser-up installs it)"
)
def test_the_answer_and_the_form_come_first_however_long_the_trace(
    url: str, tmp_path: Path
) -> None:
    """On a run with a long trace (retrievals, tool and model calls), at 1280x800 the question,
    the answer, the reference answer and the form (its first rubric's first answer, its save
    button) are all in the first screenful, the trace below them, and the form stays in view
    beside the trace as the annotator scrolls; 400 pixels wide, the page is one column in that
    order (the answers, the form, the trace) with nothing wider than the screen."""
    seeded = _seed(url, 1)
    long = _long_run(random.Random(3))
    with open_store(url) as store:
        store.append(long)
        store.queues.create(
            "long",
            rubrics=[("correct", "1"), ("clarity", "1")],
            per_item=1,
            items=[long[0].trace_id],
            members=["ann"],
            selection={},
        )
    server = Server(url, tmp_path / "spool").start()
    base = f"http://127.0.0.1:{server.port}"
    driver = _browser(tmp_path)
    try:
        driver.get(f"{base}/annotate/")
        _press_and_load(driver, seeded.tokens["ann"], Keys.ENTER)
        driver.set_window_size(1280, 800)
        driver.get(f"{base}/annotate/q/long/item/{long[0].trace_id}")
        assert driver.find_element(By.CSS_SELECTOR, ".answer").text.startswith("The Blue Hall")
        assert len(driver.find_elements(By.CSS_SELECTOR, "ol.steps > li.step")) >= 25
        boxes = _boxes(driver, *JUDGED, "ol.steps")
        page = boxes["page"]
        assert page["scrolled"] == 0 and page["height"] > 4 * page["fold"], page  # a long run
        for css in JUDGED:
            assert 0 <= boxes[css]["top"] < boxes[css]["bottom"] <= page["fold"], (css, boxes)
        assert boxes["ol.steps"]["top"] >= boxes[".reference"]["bottom"], boxes
        assert boxes["fieldset.rubric input"]["left"] > boxes[".answer"]["right"], boxes
        # scrolled to the end of the trace, the form is still there beside it
        driver.execute_script("window.scrollTo(0, document.documentElement.scrollHeight)")
        boxes = _boxes(driver, "fieldset.rubric input", "#save")
        for css in ("fieldset.rubric input", "#save"):
            assert 0 <= boxes[css]["top"] < boxes[css]["bottom"] <= boxes["page"]["fold"], boxes

        driver.set_window_size(400, 800)
        driver.execute_script("window.scrollTo(0, 0)")
        boxes = _boxes(driver, *JUDGED, "ol.steps")
        tops = [boxes[css]["top"] for css in (*JUDGED, "ol.steps")]
        assert tops == sorted(tops), boxes  # one column: the answers, the form, the trace
        for css in (".question", ".answer", ".reference"):
            assert boxes[css]["bottom"] <= boxes["page"]["fold"], (css, boxes)
        assert boxes["page"]["scrollWidth"] <= boxes["page"]["width"], boxes["page"]
    finally:
        driver.quit()
        server.stop()


# --- in a browser: forms forged on other origins ------------------------------------------------


class Elsewhere:
    """A web server of another origin than the page's: its pages hold a form that posts
    itself to the annotation page as soon as it loads. Reached as ``http://localhost:PORT`` it
    is another site; as ``http://127.0.0.1:PORT`` another origin of the page's own site (the
    annotator's SameSite=Strict cookie goes with its forms)."""

    def __init__(self) -> None:
        pages: dict[str, bytes] = {}
        self.pages = pages

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = pages.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def forge(self, name: str, action: str, fields: dict[str, str]) -> str:
        """A page at ``/name`` posting ``fields`` to ``action`` on load; its path."""
        inputs = "".join(
            f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">'
            for k, v in fields.items()
        )
        self.pages[f"/{name}"] = (
            "<!doctype html><html><head><title>Free concert tickets</title></head><body>"
            f'<form id="f" method="post" action="{escape(action)}">{inputs}</form>'
            '<script>document.getElementById("f").submit()</script></body></html>'
        ).encode()
        return f"/{name}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


@pytest.fixture
def elsewhere() -> Iterator[Elsewhere]:
    server = Elsewhere()
    yield server
    server.close()


def _lands(driver: WebDriver, address: str, base: str) -> str:
    """Open a page elsewhere whose form posts itself to the page at ``base``; the text of the
    page the browser lands on there."""
    driver.get(address)
    WebDriverWait(driver, 30, ignored_exceptions=(WebDriverException,)).until(
        lambda d: (
            d.current_url.startswith(base)
            and d.execute_script("return document.readyState === 'complete'")
            and d.title.endswith("agentdocket")
        )
    )
    return str(driver.find_element(By.TAG_NAME, "main").text)


def _signed_in_as(driver: WebDriver, base: str) -> str | None:
    """Who the browser is signed in as on the page (None: the sign-in form)."""
    driver.get(f"{base}/annotate/")
    if driver.title.startswith("Sign in"):
        return None
    found = re.search(r"signed in as (\S+)", driver.find_element(By.TAG_NAME, "header").text)
    assert found is not None, driver.page_source
    return found.group(1)


@pytest.mark.slow
@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="no /usr/bin/chromium (scripts/browser-up installs it)"
)
def test_forms_forged_on_other_origins_are_refused_and_change_nothing(
    url: str, tmp_path: Path, elsewhere: Elsewhere
) -> None:
    """Pages on another site and on another port of the page's own host post a label, a
    sign-in as eve and a sign-out in the browser of an annotator: each is refused with 403 and
    changes nothing, while she signs in, labels, skips and signs out with the page's own
    forms."""
    seeded = _seed(url, 4)
    server = Server(url, tmp_path / "spool").start()
    base = f"http://127.0.0.1:{server.port}"
    other_site = f"http://localhost:{elsewhere.port}"
    next_door = f"http://127.0.0.1:{elsewhere.port}"  # same site: SameSite lets cookies go
    guess = {FIELD: "0" * 64}
    label = elsewhere.forge(
        "label",
        f"{base}/annotate/q/main/item/{seeded.ids[0]}",
        {**guess, "nonce": "f" * 32, "action": "label", "answer-0": "false", "answer-1": "1"},
    )
    login = elsewhere.forge(
        "login", f"{base}/annotate/login", {**guess, "token": seeded.tokens["eve"]}
    )
    logout = elsewhere.forge("logout", f"{base}/annotate/logout", guess)
    driver = _browser(tmp_path)
    try:
        # signed out, the sign-in form shown: pages elsewhere would sign her in as eve
        assert _signed_in_as(driver, base) is None
        for origin, said in ((other_site, "cross-site"), (next_door, "same-site")):
            text = _lands(driver, f"{origin}{login}", base)
            assert driver.title.startswith("Refused"), driver.page_source
            assert f"Sec-Fetch-Site: {said}" in text and "Nothing was changed." in text
            assert _signed_in_as(driver, base) is None
        assert COOKIE not in {c["name"] for c in driver.get_cookies()}

        # ann signs in, labels her first item and skips her second, with the keys
        _press_and_load(driver, seeded.tokens["ann"], Keys.ENTER)
        assert driver.title.startswith("Your queues")
        _press_and_load(driver, "1")
        first = _item(driver)
        _press(driver, "1")
        _press_and_load(driver, "3", Keys.ENTER)
        second = _item(driver)
        assert first is not None and second is not None and second != first
        _press(driver, "s")
        _press_and_load(driver, REASON, Keys.ENTER)
        assert _item(driver) not in (None, first, second)
        done = _labels(url)
        assert done == sorted(
            [
                ("ann", first, "clarity", 3, None),
                ("ann", first, "correct", True, None),
                ("ann", second, "clarity", None, REASON),
                ("ann", second, "correct", None, REASON),
            ]
        )

        # signed in, with her cookie going to the page next door: a label, eve, a sign-out
        for origin, said in ((other_site, "cross-site"), (next_door, "same-site")):
            for forged in (label, login, logout):
                text = _lands(driver, f"{origin}{forged}", base)
                assert driver.title.startswith("Refused"), (origin, forged, driver.page_source)
                assert f"Sec-Fetch-Site: {said}" in text and "Nothing was changed." in text
                assert _signed_in_as(driver, base) == "ann", (origin, forged)
                assert _labels(url) == done, (origin, forged)

        # she signs out with the page's own button
        driver.execute_script("window.leaving = true")
        driver.find_element(By.CSS_SELECTOR, "header form button").click()
        WebDriverWait(driver, 30, ignored_exceptions=(WebDriverException,)).until(
            lambda d: d.execute_script(
                "return !window.leaving && document.readyState === 'complete'"
            )
        )
        assert driver.title.startswith("Sign in")
        assert COOKIE not in {c["name"] for c in driver.get_cookies()}
        assert _signed_in_as(driver, base) is None
    finally:
        driver.quit()
        server.stop()
    assert _labels(url) == done
