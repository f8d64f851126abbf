"""The annotators' page (``/annotate/`` on ``agentdocket serve``): two annotators label a whole
queue in headless Chromium, driven by Selenium through the keyboard alone (a skip, a step back
and a relabel among it), against the real serve process; and its HTTP contract in process
(sign-in, access, validation, a double submit, hostile text)."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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
from agentdocket.events import Case, Dataset, Event
from agentdocket.events.rubrics import Rubric
from agentdocket.people.agreement import fleiss_kappa, krippendorff_alpha
from agentdocket.people.annotate import COOKIE, Annotation
from agentdocket.store import open_store
from agentdocket.store.labels import StoredLabel, latest
from tests.helpers.agreement_reference import alpha_by_pairs, fleiss_by_formula
from tests.helpers.factory import T0, run_events, verdict_event
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
def page(sqlite_url: str) -> Iterator[tuple[TestClient, Seeded]]:
    seeded = _seed(sqlite_url, 3)
    annotation = Annotation(sqlite_url)
    yield TestClient(Starlette(routes=annotation.routes)), seeded
    annotation.close()


def _nonce(html: str) -> str:
    found = re.search(r'name="nonce" value="([0-9a-f]{32})"', html)
    assert found is not None
    return found.group(1)


def test_signing_in_sets_a_strict_cookie_and_a_wrong_token_is_401(
    page: tuple[TestClient, Seeded],
) -> None:
    client, seeded = page
    assert client.get("/annotate/").status_code == 200
    wrong = client.post("/annotate/login", data={"token": "not-a-token"})
    assert wrong.status_code == 401 and "No annotator has that token" in wrong.text
    item = f"/annotate/q/main/item/{seeded.ids[0]}"
    assert client.get(item, follow_redirects=False).headers["location"] == "/annotate/"
    right = client.post("/annotate/login", data={"token": seeded.tokens["ann"]})
    cookie = right.history[0].headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/annotate" in cookie
    assert "main" in right.text and "Start" in right.text
    assert "script-src 'sha256-" in right.headers["content-security-policy"]


def test_an_annotator_sees_only_their_queues_and_their_items(
    page: tuple[TestClient, Seeded],
) -> None:
    client, seeded = page
    client.cookies.set(COOKIE, seeded.tokens["ann"])
    assert client.get(f"/annotate/q/main/item/{seeded.ids[0]}").status_code == 200
    # a run that exists, in a queue she is not in; a queue she is not in; no such run
    assert client.get(f"/annotate/q/other/item/{seeded.ids[0]}").status_code == 404
    assert client.get("/annotate/q/other/next").status_code == 404
    assert client.get(f"/annotate/q/main/item/{'0' * 32}").status_code == 404
    assert client.get("/annotate/q/main/item/nope").status_code == 404
    assert client.get("/annotate/nowhere").status_code == 404


def test_a_wrong_answer_is_422_naming_the_rubric_and_a_double_submit_is_one_label(
    page: tuple[TestClient, Seeded], sqlite_url: str
) -> None:
    client, seeded = page
    client.cookies.set(COOKIE, seeded.tokens["bob"])
    item = f"/annotate/q/main/item/{seeded.ids[2]}"
    nonce = _nonce(client.get(item).text)
    bad = client.post(item, data={"nonce": nonce, "action": "label", "answer-0": "true"})
    assert bad.status_code == 422 and "rubric &#x27;clarity&#x27;: choose an answer" in bad.text
    assert 'value="true" checked' in bad.text  # what was sent stays chosen
    bad = client.post(
        item, data={"nonce": nonce, "action": "label", "answer-0": "true", "answer-1": "7"}
    )
    assert bad.status_code == 422 and "from 1 to 5" in bad.text
    form = {"nonce": nonce, "action": "label", "answer-0": "false", "answer-1": "2"}
    for _ in range(2):
        sent = client.post(item, data=form, follow_redirects=False)
        assert sent.status_code == 303 and sent.headers["location"] == "/annotate/q/main/next"
    with open_store(sqlite_url) as store:
        given = store.labels.given(queue="main")
    assert sorted((g.rubric, g.value) for g in given) == [("clarity", 2), ("correct", False)]
    again = client.get(item).text
    assert 'value="false" checked' in again and 'value="2" checked' in again
    assert "planner.suffix_match" in again  # the judges' verdicts, now that bob labelled it
    no_reason = client.post(item, data={"nonce": _nonce(again), "action": "skip", "reason": ""})
    assert no_reason.status_code == 422 and "why you skip" in no_reason.text
    assert 'value="false" checked' in no_reason.text  # his labels stay shown


def test_a_run_s_hostile_text_shows_as_text(page: tuple[TestClient, Seeded]) -> None:
    client, seeded = page
    client.cookies.set(COOKIE, seeded.tokens["ann"])
    text = client.get(f"/annotate/q/main/item/{seeded.ids[-1]}").text
    assert HOSTILE not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


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
def test_two_annotators_label_a_queue_with_the_keyboard(sqlite_url: str, tmp_path: Path) -> None:
    seeded = _seed(sqlite_url)
    server = Server(sqlite_url, tmp_path / "spool").start()
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
        login = httpx.post(f"{base}/annotate/login", data={"token": "wrong"})
        assert login.status_code == 401
    finally:
        driver.quit()
        server.stop()

    with open_store(sqlite_url) as store:
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
    _agreement_is_the_reference_computation(sqlite_url, current)


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
