"""The annotation page's pure parts: reading its forms into labels, and rendering runs, rubrics
and people's text as text (a hostile answer shows, it does not run), each state-changing form
with its token."""

from __future__ import annotations

import base64
import hashlib
import random
import re
from dataclasses import replace

import pytest

from agentdocket.events import Case, Event
from agentdocket.events.labels import MAX_ID, label_event
from agentdocket.events.rubrics import Rubric
from agentdocket.people.annotate_assets import CSP
from agentdocket.people.annotate_form import label_id, labels_from, parse_form, read_answers
from agentdocket.people.annotate_guard import FIELD
from agentdocket.people.annotate_html import (
    ItemView,
    Paths,
    QueueRow,
    SignedIn,
    done_page,
    item_page,
    message_page,
    queues_page,
    signin_page,
)
from agentdocket.people.annotate_run import latest_verdicts, run_html, shown
from tests.helpers.factory import run_events, verdict_event

HOSTILE = "<script>alert(1)</script>"
NONCE = "0123456789abcdef0123456789abcdef"
FORM_TOKEN = "f" * 64
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
OK = Rubric(name="ok", question="Is it right?", kind="pass_fail")
CLEAR = Rubric(name="clear", question="How clear?", kind="scale", low=1, high=5)
TONE = Rubric(name="tone", question="Tone?", kind="categorical", labels=("dry", "warm"))
NOTE = Rubric(name="note", question="What is missing?", kind="text")
RUBRICS = [OK, CLEAR, TONE, NOTE]


def _form(**fields: str) -> dict[str, str]:
    return {"nonce": NONCE, "action": "label", **fields}


# --- reading forms ------------------------------------------------------------------------------


def test_a_form_body_is_read_as_a_browser_sends_it() -> None:
    body = b"answer-0=true&comment=two+words%21&note=a%0D%0Ab&answer-0=false&empty=&bad=%FF"
    assert parse_form(body) == {
        "answer-0": "true",  # the first of a name sent twice
        "comment": "two words!",
        "note": "a\nb",  # a text box's line ends, as one
        "empty": "",
        "bad": "\ufffd",
    }
    with pytest.raises(ValueError):
        parse_form(b"&".join(b"f%d=1" % i for i in range(500)))


def test_each_rubric_s_answer_is_checked_and_a_wrong_one_is_named() -> None:
    answers, problems = read_answers(
        RUBRICS, {"answer-0": "false", "answer-1": "3", "answer-2": "warm", "answer-3": "dates"}
    )
    assert (answers, problems) == ([False, 3, "warm", "dates"], [])
    _, problems = read_answers(RUBRICS, {"answer-0": "maybe", "answer-1": "6", "answer-2": "x"})
    assert len(problems) == 4
    assert [re.findall(r"rubric '(\w+)'", p) for p in problems] == [
        ["ok"],
        ["clear"],
        ["tone"],
        ["note"],
    ]
    assert problems[3] == "rubric 'note': write an answer"


def test_a_form_gives_one_label_per_rubric_with_ids_a_second_send_repeats() -> None:
    form = _form(**{"answer-0": "true", "answer-1": "5", "comment": " fine "})
    labels, problems = labels_from(
        form, queue="q", annotator="ann", trace_id=TRACE, rubrics=[OK, CLEAR]
    )
    assert problems == []
    assert [(x.rubric, x.value, x.rubric_version) for x in labels] == [
        ("ok", True, "1"),
        ("clear", 5, "1"),
    ]
    assert {(x.source, x.queue, x.author, x.comment, x.skipped) for x in labels} == {
        ("queue", "q", "ann", "fine", None)
    }
    assert [x.label_id for x in labels] == [f"{NONCE}/ok", f"{NONCE}/clear"]
    again, _ = labels_from(form, queue="q", annotator="ann", trace_id=TRACE, rubrics=[OK, CLEAR])
    assert [label_event(x).event_id for x in again] == [label_event(x).event_id for x in labels]


def test_a_skip_is_a_label_per_rubric_with_its_reason_and_no_value() -> None:
    form = {"nonce": NONCE, "action": "skip", "reason": " unreadable ", "answer-0": "true"}
    labels, problems = labels_from(
        form, queue="q", annotator="ann", trace_id=TRACE, rubrics=[OK, CLEAR]
    )
    assert problems == []
    assert [(x.rubric, x.value, x.skipped) for x in labels] == [
        ("ok", None, "unreadable"),
        ("clear", None, "unreadable"),
    ]
    _, problems = labels_from(
        {**form, "reason": "  "}, queue="q", annotator="ann", trace_id=TRACE, rubrics=[OK]
    )
    assert problems and "why you skip" in problems[0]


@pytest.mark.parametrize(
    "form",
    [
        {"action": "label", "answer-0": "true"},  # no nonce
        {"nonce": "../../x", "action": "label", "answer-0": "true"},
        {"nonce": NONCE, "action": "delete", "answer-0": "true"},
    ],
)
def test_a_form_the_page_did_not_give_gives_no_label(form: dict[str, str]) -> None:
    labels, problems = labels_from(form, queue="q", annotator="a", trace_id=TRACE, rubrics=[OK])
    assert labels == [] and problems


def test_a_label_id_stays_within_the_limit_for_any_rubric_name() -> None:
    assert label_id(NONCE, "ok") == f"{NONCE}/ok"
    long = label_id(NONCE, "r" * 500)
    assert len(long) <= MAX_ID and long.startswith(NONCE)
    assert long != label_id(NONCE, "r" * 499)


# --- rendering ----------------------------------------------------------------------------------


def _hostile_run() -> list[Event]:
    """A run whose question, tool arguments, result, SQL, document and answer hold markup."""
    out = []
    for e in run_events(random.Random(5)):
        p = dict(e.payload)
        if e.kind == "run.started":
            p["question"] = f"why {HOSTILE}?"
        elif e.kind == "tool.called":
            p["arguments"] = {"q": HOSTILE}
        elif e.kind == "tool.returned":
            p["result"] = None
            p["error"] = f"failed: {HOSTILE}"
        elif e.kind == "sql.executed":
            p["query"] = f"SELECT '{HOSTILE}'"
        elif e.kind == "retrieval":
            p["documents"] = [{"id": HOSTILE, "score": 0.5, "text": HOSTILE, "metadata": {}}]
        elif e.kind == "response":
            p["text"] = HOSTILE
        out.append(replace(e, payload=p))
    return out


def test_a_run_s_hostile_text_is_rendered_as_text() -> None:
    events = _hostile_run()
    case = Case(case_id="c1", reference_answer=HOSTILE)
    html = run_html(None, events, case)
    assert "<script" not in html
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 8
    assert '<div class="answer">&lt;script&gt;alert(1)&lt;/script&gt;</div>' in html
    assert "SQL query" in html and "Retrieval" in html and "Tool call" in html
    assert 'class="error"' in html  # the failed calls read as errors


def test_the_item_page_escapes_what_people_and_rubrics_say() -> None:
    rubric = Rubric(name="r", question=f"Q {HOSTILE}", kind="categorical", labels=(HOSTILE, "b"))
    view = ItemView(
        queue=f"q {HOSTILE}",
        trace_id=TRACE,
        annotator=HOSTILE,
        run=None,
        events=_hostile_run(),
        case=None,
        rubrics=[rubric, NOTE],
        nonce=NONCE,
        form_token=f'"><{HOSTILE}',
        answers={0: HOSTILE, 1: f"</textarea>{HOSTILE}"},
        comment=f'"><{HOSTILE}',
        reason=HOSTILE,
        back=TRACE,
        errors=[HOSTILE],
    )
    html = item_page(view, Paths("/annotate"))
    assert "<script>alert" not in html
    assert html.count("<script>") == 1  # the page's own
    assert f'value="{HOSTILE.replace("<", "&lt;").replace(">", "&gt;")}" checked' in html
    assert "/annotate/q/q%20%3Cscript%3Ealert%281%29%3C%2Fscript%3E/item/" + TRACE in html
    assert '<meta name="viewport"' in html and "@media (max-width:600px)" in html


def test_the_item_page_puts_the_answers_and_the_form_before_the_trace() -> None:
    """What the annotator judges and acts on first (the question, the answer, the reference
    answer, the form), then the judges' verdicts, then the trace; all of it escaped."""
    events = _hostile_run()
    case = Case(case_id="c1", reference_answer=HOSTILE)
    view = ItemView("q", TRACE, "ann", None, events, case, [OK], NONCE, FORM_TOKEN, verdicts=[])
    html = item_page(view, Paths("/annotate"))
    marks = [
        '<div class="question">',
        '<div class="answer">&lt;script&gt;alert(1)&lt;/script&gt;</div>',
        '<div class="reference">&lt;script&gt;alert(1)&lt;/script&gt;</div>',
        '<form id="labels"',
        "<h2>Judges' verdicts</h2>",
        '<ol class="steps">',
        "SQL query",
    ]
    at = [html.find(mark) for mark in marks]
    assert -1 not in at and at == sorted(at), list(zip(marks, at, strict=True))
    assert html.count("<script") == 1  # the page's own
    assert "Retrieval" in html and "Tool call" in html and 'class="error"' in html
    # no verdicts to show (yet): nothing between the form and the trace
    later = item_page(replace(view, verdicts=None), Paths("/annotate"))
    assert 'class="verdicts"' not in later and "Judges'" not in later


def test_the_form_shows_the_keys_and_each_rubric_s_answers_in_order() -> None:
    view = ItemView(
        queue="q",
        trace_id=TRACE,
        annotator="ann",
        run=None,
        events=[],
        case=None,
        rubrics=[OK, CLEAR],
        nonce=NONCE,
        form_token=FORM_TOKEN,
        answers={0: "false"},
    )
    html = item_page(view, Paths("/annotate"))
    values = re.findall(r'name="answer-(\d)" value="(\w+)"', html)
    assert values == [("0", "true"), ("0", "false"), *(("1", str(n)) for n in range(1, 6))]
    assert 'value="false" checked' in html and html.count(" checked") == 1
    assert "no earlier item" in html and 'id="back"' not in html
    for key in ("<kbd>1</kbd>", "<kbd>Enter</kbd>", "<kbd>s</kbd>", "<kbd>b</kbd>"):
        assert key in html


def test_verdicts_show_only_where_the_page_says_and_the_latest_of_each() -> None:
    events = run_events(random.Random(2))
    older = verdict_event(events, passed=False)
    newer = verdict_event(events, passed=True, when=older.ts.replace(year=2027))
    assert latest_verdicts([*events, older, newer]) == [newer]
    base = ItemView(
        "q", TRACE, "ann", None, events, None, [OK], NONCE, FORM_TOKEN, verdicts_later=True
    )
    assert "Shown once you have labelled" in item_page(base, Paths())
    shown_page = item_page(replace(base, verdicts=[newer]), Paths())
    assert "planner.suffix_match" in shown_page and "Shown once" not in shown_page


def test_the_queues_page_numbers_only_the_queues_with_work_left() -> None:
    rows = [QueueRow("done-q", 3, 3, 0, 0), QueueRow("open-q", 4, 1, 0, 3)]
    html = queues_page(Paths("/annotate"), SignedIn("ann", FORM_TOKEN), rows)
    assert re.findall(r'class="start" href="([^"]+)"', html) == ["/annotate/q/open-q/next"]
    assert "Continue <kbd>1</kbd>" in html


def test_long_values_are_cut_with_a_note() -> None:
    assert shown({"a": 1}) == '{"a": 1}'
    assert shown({"a": "x" * 100}).startswith('{\n  "a"')
    cut = shown("y" * 5000)
    assert cut.startswith("y" * 4000) and cut.endswith("(1,000 more characters)")


def test_the_policy_allows_exactly_the_page_s_own_style_and_script() -> None:
    html = item_page(ItemView("q", TRACE, "a", None, [], None, [OK], NONCE, FORM_TOKEN), Paths())
    for tag in ("style", "script"):
        (body,) = re.findall(rf"<{tag}>(.*?)</{tag}>", html, re.S)
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"{tag}-src 'sha256-{digest}'" in CSP


def _forms(html: str) -> dict[str, str]:
    """Each form's action (and its id, where it has one) to the form token it carries."""
    found = {}
    for attributes, body in re.findall(r"<form([^>]*)>(.*?)</form>", html, re.S):
        action = re.search(r'action="([^"]*)"', attributes)
        assert action is not None and 'method="post"' in attributes
        key = action.group(1)
        if ident := re.search(r'id="([^"]*)"', attributes):
            key += f"#{ident.group(1)}"
        tokens = re.findall(rf'<input type="hidden" name="{FIELD}" value="([^"]*)">', body)
        assert len(tokens) == 1, (key, body)
        found[key] = tokens[0]
    return found


def test_every_form_that_changes_something_carries_its_token() -> None:
    paths = Paths("/annotate")
    who = SignedIn("ann", FORM_TOKEN)
    item = f"/annotate/q/q/item/{TRACE}"
    view = ItemView("q", TRACE, "ann", None, [], None, [OK], NONCE, FORM_TOKEN)
    assert _forms(item_page(view, paths)) == {
        f"{item}#labels": FORM_TOKEN,
        f"{item}#skip": FORM_TOKEN,
        "/annotate/logout": FORM_TOKEN,
    }
    for html in (
        queues_page(paths, who, []),
        done_page(paths, who, "q", 3, 1),
        message_page(paths, "Not found", "nothing", who),
    ):
        assert _forms(html) == {"/annotate/logout": FORM_TOKEN}
    signin = signin_page(paths, "a" * 64, HOSTILE)
    assert _forms(signin) == {"/annotate/login": "a" * 64}
    assert HOSTILE not in signin
    assert _forms(message_page(paths, "Refused", "from elsewhere")) == {}  # nobody signed in
    # the page's own forms send their Origin (under no-referrer a browser sends null)
    assert '<meta name="referrer" content="same-origin">' in signin
