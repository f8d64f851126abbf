"""The annotation page's HTML: pure functions from what a page shows to its text (the run's
parts: :mod:`agentdocket.people.annotate_run`).

An item's page puts first what the annotator judges and what they act on: the question, the
answer, the case's reference answer and, beside them (after them on a narrow screen), the form;
the judges' verdicts when shown, then the trace (what the run did, step by step) below.

Every text that comes from a run, a rubric, a queue or a person goes through
:func:`html.escape`; the only markup is written here. Each form that changes something (a
label, a skip, signing out, signing in) carries the form token the page checks
(:mod:`agentdocket.people.annotate_guard`) in a hidden field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote

from agentdocket.events import Case, Event
from agentdocket.events.rubrics import Rubric
from agentdocket.people.annotate_assets import SCRIPT, STYLE
from agentdocket.people.annotate_guard import FIELD
from agentdocket.people.annotate_run import answer_of, question_of, steps_html, verdicts_html
from agentdocket.people.annotate_run import esc as _e
from agentdocket.store.rows import Run


@dataclass(frozen=True)
class Paths:
    """The page's addresses under ``root`` (where it is mounted: ``/annotate``)."""

    root: str = ""

    @property
    def home(self) -> str:
        return f"{self.root}/"

    @property
    def login(self) -> str:
        return f"{self.root}/login"

    @property
    def logout(self) -> str:
        return f"{self.root}/logout"

    @property
    def cookie(self) -> str:
        return self.root or "/"

    def next(self, queue: str) -> str:
        return f"{self.root}/q/{quote(queue, safe='')}/next"

    def item(self, queue: str, trace_id: str) -> str:
        return f"{self.root}/q/{quote(queue, safe='')}/item/{trace_id}"


@dataclass(frozen=True)
class SignedIn:
    """The annotator signed in, and the form token their forms carry
    (:func:`agentdocket.people.annotate_guard.form_token`)."""

    name: str
    form_token: str


@dataclass(frozen=True)
class QueueRow:
    """A queue on the annotator's list, with their progress in it."""

    name: str
    items: int
    labelled: int
    skipped: int
    remaining: int


@dataclass(frozen=True)
class ItemView:
    """Everything the item page shows: the run, the form and where the person is."""

    queue: str
    trace_id: str
    annotator: str
    run: Run | None
    events: Sequence[Event]
    case: Case | None
    rubrics: Sequence[Rubric]
    nonce: str
    form_token: str  # the annotator's (:class:`SignedIn`)
    answers: Mapping[int, str] = field(default_factory=dict)  # rubric index -> form value
    comment: str = ""
    reason: str = ""
    back: str | None = None  # the trace id of the annotator's previous item
    verdicts: Sequence[Event] | None = None  # None: not shown (yet)
    verdicts_later: bool = False  # the queue shows verdicts once the item is labelled
    errors: Sequence[str] = ()
    labelled: int = 0
    remaining: int = 0


def form_value(answer: object) -> str:
    """An answer as its form control carries it: true/false, a number, a label, a text."""
    if isinstance(answer, bool):
        return "true" if answer else "false"
    return "" if answer is None else str(answer)


def token_field(token: str) -> str:
    """The hidden field carrying a form's token."""
    return f'<input type="hidden" name="{FIELD}" value="{_e(token)}">'


def page(title: str, body: str, *, who: SignedIn | None = None, paths: Paths | None = None) -> str:
    """A whole document: the head (viewport, style, script) and a header naming who is
    signed in, with a sign-out button."""
    signed = ""
    if who is not None and paths is not None:
        signed = (
            f'<span class="muted">signed in as <strong>{_e(who.name)}</strong></span> '
            f'<form method="post" action="{_e(paths.logout)}">{token_field(who.form_token)}'
            '<button class="quiet" type="submit">sign out</button></form>'
        )
    home = _e(paths.home) if paths is not None else "./"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="referrer" content="same-origin"><title>{_e(title)} · agentdocket</title>'
        f"<style>{STYLE}</style></head><body>"
        f'<header><a href="{home}"><strong>agentdocket</strong> annotation</a><div>{signed}</div>'
        f"</header><main>{body}</main><script>{SCRIPT}</script></body></html>\n"
    )


def signin_page(paths: Paths, token: str, message: str | None = None) -> str:
    """The sign-in form, carrying ``token`` (the browser's sign-in cookie's value)."""
    problem = f'<p class="errors" role="alert">{_e(message)}</p>' if message else ""
    body = (
        '<div class="signin"><h1>Sign in to annotate</h1>'
        f"{problem}"
        f'<form method="post" action="{_e(paths.login)}">{token_field(token)}'
        '<label for="token">Your annotator token</label>'
        '<input id="token" name="token" type="password" autocomplete="off" autofocus '
        'required spellcheck="false">'
        '<div class="row"><button type="submit">Sign in <kbd>Enter</kbd></button></div></form>'
        '<p class="muted">Your token was shown once, when you were made an annotator; ask '
        "whoever runs agentdocket for a new one if you lost it.</p></div>"
    )
    return page("Sign in", body, paths=paths)


def queues_page(paths: Paths, who: SignedIn, rows: Sequence[QueueRow]) -> str:
    if not rows:
        listing = "<p>You are in no annotation queue yet.</p>"
    else:
        lines = []
        started = 0  # the queues with work left, numbered for the keys
        for row in rows:
            if row.remaining:
                started += 1
                key = f" <kbd>{started}</kbd>" if started <= 9 else ""
                action = (
                    f'<a class="start" href="{_e(paths.next(row.name))}"'
                    f"{' autofocus' if started == 1 else ''}>"
                    f"{'Continue' if row.labelled or row.skipped else 'Start'}{key}</a>"
                )
            else:
                action = '<span class="muted">done</span>'
            lines.append(
                f"<tr><td><strong>{_e(row.name)}</strong></td><td>{row.items}</td>"
                f"<td>{row.labelled}</td><td>{row.skipped}</td><td>{row.remaining}</td>"
                f"<td>{action}</td></tr>"
            )
        listing = (
            "<table><thead><tr><th>queue</th><th>items</th><th>labelled</th><th>skipped</th>"
            f"<th>remaining</th><th></th></tr></thead><tbody>{''.join(lines)}</tbody></table>"
            '<p class="keys">Keys: <kbd>1</kbd>…<kbd>9</kbd> start the nth queue; '
            "<kbd>Tab</kbd> and <kbd>Enter</kbd> follow a link.</p>"
        )
    return page("Your queues", f"<h1>Your queues</h1>{listing}", who=who, paths=paths)


def done_page(paths: Paths, who: SignedIn, queue: str, labelled: int, skipped: int) -> str:
    body = (
        f"<h1>Queue {_e(queue)}: done</h1>"
        f"<p>Nothing is left for you in this queue: you labelled {labelled} item"
        f"{'s' if labelled != 1 else ''} and skipped {skipped}. Thank you.</p>"
        f'<p><a href="{_e(paths.home)}" autofocus>Back to your queues</a> '
        "<kbd>Enter</kbd></p>"
    )
    return page(f"{queue}: done", body, who=who, paths=paths)


def message_page(paths: Paths, title: str, text: str, who: SignedIn | None = None) -> str:
    body = f'<h1>{_e(title)}</h1><p>{_e(text)}</p><p><a href="{_e(paths.home)}">Your queues</a></p>'
    return page(title, body, who=who, paths=paths)


# --- the form ---------------------------------------------------------------------------------


def _rubric_field(i: int, rubric: Rubric, given: str) -> str:
    legend = (
        f"<legend>{_e(rubric.question)} <small>{_e(rubric.name)} v{_e(rubric.version)}"
        "</small></legend>"
    )
    name = f"answer-{i}"
    if rubric.kind == "text":
        return (
            f'<fieldset class="rubric text">{legend}<textarea name="{name}" rows="3" '
            f'aria-label="{_e(rubric.question)}">{_e(given)}</textarea></fieldset>'
        )
    choices = []
    for n, (caption, answer) in enumerate(rubric.choices()):
        value = form_value(answer)
        key = f"<kbd>{n + 1}</kbd> " if n < 9 else ""
        checked = " checked" if value == given else ""
        choices.append(
            f'<label><input type="radio" name="{name}" value="{_e(value)}"{checked}>'
            f"{key}{_e(caption)}</label>"
        )
    answers = "".join(choices)
    return (
        f'<fieldset class="rubric choices">{legend}<div class="answers">{answers}</div></fieldset>'
    )


def form_html(view: ItemView, paths: Paths) -> str:
    action = _e(paths.item(view.queue, view.trace_id))
    hidden = f'<input type="hidden" name="nonce" value="{_e(view.nonce)}">'
    hidden += token_field(view.form_token)
    errors = ""
    if view.errors:
        items = "".join(f"<li>{_e(x)}</li>" for x in view.errors)
        errors = f'<div class="errors" role="alert"><ul>{items}</ul></div>'
    fields = "".join(
        _rubric_field(i, r, view.answers.get(i, "")) for i, r in enumerate(view.rubrics)
    )
    back = (
        f'<a id="back" href="{_e(paths.item(view.queue, view.back))}">← back <kbd>b</kbd></a>'
        if view.back
        else '<span class="muted">no earlier item</span>'
    )
    return (
        f"{errors}"
        f'<form id="labels" method="post" action="{action}">{hidden}'
        '<input type="hidden" name="action" value="label">'
        f"{fields}"
        '<label for="comment">Comment <small>(optional) <kbd>c</kbd></small></label>'
        f'<input id="comment" name="comment" type="text" value="{_e(view.comment)}">'
        '<div class="row"><button id="save" type="submit">Save and next <kbd>Enter</kbd>'
        f"</button> {back}</div></form>"
        f'<form id="skip" class="skip" method="post" action="{action}">{hidden}'
        '<input type="hidden" name="action" value="skip">'
        '<label for="skip-reason">Skip this item: why? <kbd>s</kbd></label>'
        f'<input id="skip-reason" name="reason" type="text" value="{_e(view.reason)}">'
        '<div class="row"><button class="quiet" type="submit">Skip</button></div></form>'
        '<p class="keys">Keys: <kbd>1</kbd>…<kbd>9</kbd> choose the nth answer of the rubric in '
        "focus, else of the first one unanswered; <kbd>Enter</kbd> saves and goes to the next "
        "item (<kbd>Ctrl</kbd>+<kbd>Enter</kbd> from a text box); <kbd>s</kbd> skip reason; "
        "<kbd>c</kbd> comment; <kbd>b</kbd> back to your previous item; <kbd>Esc</kbd> leaves "
        "a text box; <kbd>Tab</kbd> and the arrows move as usual.</p>"
    )


# --- the item ---------------------------------------------------------------------------------


def judged_html(run: Run | None, events: Sequence[Event], case: Case | None) -> str:
    """What the annotator judges: the question, who ran it, the answer, and the case's reference
    answer when it names one."""
    parts = [f'<h2>Question</h2><div class="question">{_e(question_of(run, events) or "-")}</div>']
    if run is not None:
        who = " ".join(x for x in (run["agent"], run["agent_version"]) if x) or "an agent"
        case_name = (
            f" · case {_e(run['dataset'] or '-')}/{_e(run['case_id'])}" if run["case_id"] else ""
        )
        parts.append(
            f'<p class="muted">{_e(who)} · {_e(run["status"] or "running")}{case_name}</p>'
        )
    answer = answer_of(run, events)
    parts.append(
        f'<h2>Answer</h2><div class="answer">{_e(answer) if answer else "(no answer recorded)"}'
        "</div>"
    )
    if case is not None and (case.reference_answer or case.stub_response):
        parts.append(
            f"<h2>Reference answer <small>case {_e(case.case_id)}</small></h2>"
            f'<div class="reference">{_e(case.reference_answer or case.stub_response)}</div>'
        )
    return "".join(parts)


def trace_html(events: Sequence[Event]) -> str:
    """What the run did: its steps, in trace order."""
    steps = steps_html(events) or "<li>no step</li>"
    return f'<h2>What it did</h2><ol class="steps">{steps}</ol>'


def item_page(view: ItemView, paths: Paths) -> str:
    """The item: what is judged (question, answer, reference) and the form first, side by side
    (one after the other on a narrow screen), then the judges' verdicts, then the trace."""
    head = (
        f"<h1>Queue {_e(view.queue)} <small>run {_e(view.trace_id[:12])} · "
        f"{view.labelled} labelled, {view.remaining} to go</small></h1>"
    )
    verdicts = verdicts_html(view.verdicts, view.verdicts_later)
    if verdicts:
        verdicts = (
            f'<section class="verdicts" aria-label="the judges\' verdicts">{verdicts}</section>'
        )
    body = (
        f'{head}<div class="item">'
        '<section class="judged" aria-label="the question and the answers">'
        f"{judged_html(view.run, view.events, view.case)}</section>"
        f'<section class="judge" aria-label="your labels">{form_html(view, paths)}</section>'
        f'{verdicts}<section class="trace" aria-label="what the run did">'
        f"{trace_html(view.events)}</section></div>"
    )
    who = SignedIn(view.annotator, view.form_token)
    return page(f"{view.queue}: {view.trace_id[:12]}", body, who=who, paths=paths)
