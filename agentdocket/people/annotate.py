"""The annotators' web page: a Starlette application that ``agentdocket serve`` mounts at
``/annotate`` (:mod:`agentdocket.runtime.receiver`). Server-rendered HTML
(:mod:`agentdocket.people.annotate_html`), a little inline script for the keys, no build step.

- ``GET /annotate/``: the sign-in form; signed in, the annotator's queues with their progress.
- ``POST /annotate/login`` (a token) and ``POST /annotate/logout``, each with its form token
  (below).
- ``GET /annotate/q/{queue}/next``: the annotator's next item of the queue (claimed for them,
  :meth:`Queues.next_item <agentdocket.store.queues.Queues.next_item>`), or the queue's done
  page.
- ``GET /annotate/q/{queue}/item/{trace_id}``: the run as a person reads it and one form with
  each rubric of the queue (pre-filled with the annotator's current labels), a skip and a link
  back to their previous item; ``POST`` the same address to label (one ``label`` event per
  rubric) or skip, then on to the next item. A wrong answer gets the form again, 422.

An annotator sees only the queues they are a member of and only those queues' items: any
other queue or item is 404, also for a trace id that exists. Not signed in, a page sends them
to the sign-in form.

Signing in: the cookie holds the annotator's token itself (HttpOnly, SameSite=Strict, Secure
over HTTPS, for this path only), looked up by its digest on every request, rather than a
signed session: there is then no secret key to keep, share between serve processes or lose
at a restart, and a token rotated (``add_annotator(rotate=True)``) signs its holder out at
once, where a signed session would stay good until it expired. One indexed lookup a request
costs nothing at a person's pace.

Forged requests (:mod:`agentdocket.people.annotate_guard`): each request that changes something
(labelling or skipping, signing out, signing in) must show that it comes from the page itself,
else it gets 403 and a page saying why, before the store is asked anything: no label, no
sign-in, no sign-out, no cookie set. SameSite=Strict alone does not do: the cookie still goes
with a form from another origin of the same site (another port on the host, a sibling
subdomain), and signing in needs no cookie at all, so any page could sign a person in as an
annotator of its choosing and collect what they label. Three checks; the two tokens hold in
any browser on their own, and where the request comes from is a second wall wherever the
browser tells it:

- Where it comes from: a ``Sec-Fetch-Site`` other than ``same-origin`` (or ``none``, the
  person's own doing) is refused, as is an ``Origin`` other than the page's own (the request's
  scheme, host and port, from its Host header and, behind a proxy on loopback, its
  X-Forwarded-Proto); ``Origin: null`` too. Hence the page's referrer policy is
  ``same-origin``: under ``no-referrer`` browsers send ``Origin: null`` with the page's own
  forms. A browser too old for these headers, or a client that is no browser, sends neither;
  then the tokens decide.
- Signed in, each form carries the session's form token, HMAC-SHA256 of a fixed purpose under
  the session token (:func:`~agentdocket.people.annotate_guard.form_token`). It needs no secret
  of the server's, in keeping with the cookie above: any serve process derives it again from
  the cookie that comes with the form. A page elsewhere can derive it from nothing it can read
  (the cookie is HttpOnly, the page's HTML is another origin's and no CORS lets it out); it
  tells nothing of the session token, changes when the token is rotated, and differs from the
  token's digest the store keeps, so a copy of the database does not give it.
- The sign-in form, before any session, is a double submit: showing it sets a random
  pre-session cookie (HttpOnly, SameSite=Strict, this path only, gone when the browser closes;
  kept if the browser has one, so two tabs both work) and puts its value in a hidden field;
  a sign-in must carry both, equal. A page elsewhere can neither read the cookie nor have it
  sent. Whoever can write this host's cookies (a sibling subdomain, a network attacker on
  plain HTTP) could plant a matching pair, but could as well plant a session cookie outright:
  TLS and a host of the page's own guard against that, not this form. Signing in drops it.

Tokens are compared in constant time (:func:`hmac.compare_digest`). A ``GET`` changes nothing
a person decides (``next`` claims an item, as visiting the queue would) and is not checked.

A label's id is a nonce drawn when the form is rendered, plus the rubric's name: the same form
sent twice (a double Enter, a resent request) is one label per rubric, since a label's event
id derives from its id (:mod:`agentdocket.events.labels`). The nonce only de-duplicates; the
form token says the form is the page's own.

The page keeps one store of its own, opened when first needed and opened again after the
database was away (the page answers 503 meanwhile). Its calls run in a worker thread, one at a
time: a store is one database connection, and a few people's clicks need no more.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections.abc import Callable, Mapping
from typing import TypeVar

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from agentdocket.events.labels import label_event
from agentdocket.people.annotate_assets import CSP
from agentdocket.people.annotate_form import HEX32, labels_from, parse_form
from agentdocket.people.annotate_guard import (
    SIGNIN_TOKEN,
    elsewhere,
    form_token,
    session_refusal,
    signin_refusal,
    signin_token,
)
from agentdocket.people.annotate_html import (
    Paths,
    QueueRow,
    SignedIn,
    done_page,
    item_page,
    message_page,
    queues_page,
    signin_page,
)
from agentdocket.people.annotate_reads import item_view, member_queue, queue_rubrics
from agentdocket.store import Store, StoreUnavailable

PATH = "/annotate"  # where serve mounts the page
COOKIE = "agentdocket_annotator"  # the session: the annotator's token
SIGNIN_COOKIE = "agentdocket_signin"  # the sign-in form's pre-session token
MAX_FORM = 256 * 1024  # bytes of one posted form
FORM_TYPE = "application/x-www-form-urlencoded"
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # so the page's own forms send their Origin
    "Cache-Control": "no-store",  # a form's nonce is for one rendering
}

T = TypeVar("T")


# --- responses --------------------------------------------------------------------------------


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status, headers=HEADERS)


def _redirect(to: str) -> RedirectResponse:
    return RedirectResponse(to, 303, headers={"Cache-Control": "no-store"})


def _paths(request: Request) -> Paths:
    return Paths(str(request.scope.get("root_path", "")))


def _set_cookie(response: Response, request: Request, name: str, value: str) -> None:
    """A cookie for the page's path alone: HttpOnly, SameSite=Strict, Secure over HTTPS,
    gone when the browser closes."""
    response.set_cookie(
        name,
        value,
        path=_paths(request).cookie,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def _drop_cookie(response: Response, request: Request, name: str) -> None:
    """The cookie gone, as it was set."""
    response.delete_cookie(
        name,
        path=_paths(request).cookie,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def _signin(request: Request, message: str | None = None, status: int = 200) -> Response:
    """The sign-in form and its pre-session cookie (the browser's own, when it has one)."""
    token = request.cookies.get(SIGNIN_COOKIE, "")
    if not SIGNIN_TOKEN.fullmatch(token):
        token = signin_token()
    response = _html(signin_page(_paths(request), token, message), status)
    _set_cookie(response, request, SIGNIN_COOKIE, token)
    return response


def _refused(request: Request, why: str) -> Response:
    text = f"{why} Nothing was changed."
    return _html(message_page(_paths(request), "Refused", text), 403)


def _from_elsewhere(request: Request) -> Response | None:
    """403 for a state-changing request from elsewhere than the page
    (:func:`~agentdocket.people.annotate_guard.elsewhere`), else None."""
    why = elsewhere(request.headers, f"{request.url.scheme}://{request.url.netloc}")
    return None if why is None else _refused(request, why)


class Annotation:
    """The annotation page: ``app`` (to mount at :data:`PATH`) and its store, opened when
    first needed (from ``open``, ``serve``'s opener) and opened again after the database
    went away; :meth:`close` closes it."""

    def __init__(self, open: Callable[[], Store]) -> None:
        self.open = open
        self._store: Store | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.app = Starlette(
            routes=[
                Route("/", self.home, methods=["GET"]),
                Route("/login", self.login, methods=["POST"]),
                Route("/logout", self.logout, methods=["POST"]),
                Route("/q/{queue:path}/next", self.next, methods=["GET"]),
                Route("/q/{queue:path}/item/{trace_id}", self.item, methods=["GET", "POST"]),
            ],
            exception_handlers={404: self._not_found},
        )

    @property
    def routes(self) -> list[BaseRoute]:
        """The page mounted at :data:`PATH`, for the serve process's application."""
        return [Mount(PATH, app=self.app)]

    def close(self) -> None:
        """Close the store (requests after this get 503)."""
        with self._lock:
            self._closed = True
            if self._store is not None:
                self._store.close()
                self._store = None

    # --- the store, in a worker thread ----------------------------------------------------------

    def _call(self, work: Callable[[Store], T]) -> T:
        with self._lock:
            if self._closed:
                raise StoreUnavailable("the annotation page is closing")
            if self._store is None:
                self._store = self.open()
            try:
                return work(self._store)
            except StoreUnavailable:
                store, self._store = self._store, None
                with contextlib.suppress(Exception):  # the connection is gone already
                    store.close()
                raise

    async def _with_store(self, paths: Paths, work: Callable[[Store], Response]) -> Response:
        try:
            return await run_in_threadpool(self._call, work)
        except StoreUnavailable:
            return _away(paths)

    async def _signed_in(
        self, request: Request, work: Callable[[Store, SignedIn, Paths], Response]
    ) -> Response:
        """``work`` for the annotator the request's cookie signs in, else to the sign-in
        form."""
        paths = _paths(request)
        token = request.cookies.get(COOKIE)
        if not token:
            return _redirect(paths.home)

        def run(store: Store) -> Response:
            who = store.queues.annotator(token)
            if who is None:
                return _redirect(paths.home)
            return work(store, SignedIn(who, form_token(token)), paths)

        return await self._with_store(paths, run)

    # --- pages ----------------------------------------------------------------------------------

    async def _not_found(self, request: Request, exc: Exception) -> Response:
        paths = _paths(request)
        return _html(message_page(paths, "Not found", "There is nothing for you here."), 404)

    async def home(self, request: Request) -> Response:
        paths = _paths(request)
        token = request.cookies.get(COOKIE)
        if not token:
            return _signin(request)

        def work(store: Store) -> Response:
            who = store.queues.annotator(token)
            if who is None:
                response = _signin(request, "Your sign-in has ended: sign in again.")
                _drop_cookie(response, request, COOKIE)
                return response
            rows = []
            for name in store.queues.names(who):
                queue = store.queues.get(name)
                if queue is None:
                    continue
                mine = store.queues.progress(queue).by_annotator.get(who, {})
                rows.append(
                    QueueRow(
                        name,
                        len(queue.items),
                        mine.get("labelled", 0),
                        mine.get("skipped", 0),
                        mine.get("remaining", 0),
                    )
                )
            return _html(queues_page(paths, SignedIn(who, form_token(token)), rows))

        return await self._with_store(paths, work)

    async def login(self, request: Request) -> Response:
        paths = _paths(request)
        refused = _from_elsewhere(request)
        if refused is not None:
            return refused
        form = await _read_form(request)
        if isinstance(form, Response):
            return form
        why = signin_refusal(form, request.cookies.get(SIGNIN_COOKIE))
        if why is not None:
            return _refused(request, why)
        token = form.get("token", "").strip()
        who = None
        if token:
            try:
                who = await run_in_threadpool(self._call, lambda s: s.queues.annotator(token))
            except StoreUnavailable:
                return _away(paths)
        if who is None:
            message = "No annotator has that token. Check it, or ask for a new one."
            return _signin(request, message, 401)
        response = _redirect(paths.home)
        _set_cookie(response, request, COOKIE, token)
        _drop_cookie(response, request, SIGNIN_COOKIE)
        return response

    async def logout(self, request: Request) -> Response:
        paths = _paths(request)
        refused = _from_elsewhere(request)
        if refused is not None:
            return refused
        form = await _read_form(request)
        if isinstance(form, Response):
            return form
        token = request.cookies.get(COOKIE)
        if not token:  # nobody to sign out
            return _redirect(paths.home)
        why = session_refusal(form, token)
        if why is not None:
            return _refused(request, why)
        response = _redirect(paths.home)
        _drop_cookie(response, request, COOKIE)
        return response

    async def next(self, request: Request) -> Response:
        name = request.path_params["queue"]

        def work(store: Store, who: SignedIn, paths: Paths) -> Response:
            queue = member_queue(store, name, who.name)
            if queue is None:
                return _not_found_page(paths, who)
            item = store.queues.next_item(queue, who.name)
            if item is not None:
                return _redirect(paths.item(queue.name, item))
            mine = store.queues.progress(queue).by_annotator.get(who.name, {})
            page = done_page(
                paths, who, queue.name, mine.get("labelled", 0), mine.get("skipped", 0)
            )
            return _html(page)

        return await self._signed_in(request, work)

    async def item(self, request: Request) -> Response:
        name = request.path_params["queue"]
        trace_id = request.path_params["trace_id"]
        form: Mapping[str, str] | None = None
        if request.method == "POST":
            refused = _from_elsewhere(request)
            if refused is not None:
                return refused
            read = await _read_form(request)
            if isinstance(read, Response):
                return read
            token = request.cookies.get(COOKIE)  # none: to the sign-in form, below
            why = session_refusal(read, token) if token else None
            if why is not None:
                return _refused(request, why)
            form = read

        def work(store: Store, who: SignedIn, paths: Paths) -> Response:
            queue = member_queue(store, name, who.name)
            if queue is None or not HEX32.fullmatch(trace_id) or trace_id not in queue.items:
                return _not_found_page(paths, who)
            rubrics = queue_rubrics(store, queue)
            if isinstance(rubrics, str):
                return _html(
                    message_page(paths, "This queue cannot be labelled", rubrics, who), 500
                )
            if form is None:
                nonce = secrets.token_hex(16)
                view = item_view(
                    store,
                    queue,
                    who.name,
                    trace_id,
                    rubrics,
                    nonce=nonce,
                    form_token=who.form_token,
                )
                return _html(item_page(view, paths))
            labels, problems = labels_from(
                form, queue=queue.name, annotator=who.name, trace_id=trace_id, rubrics=rubrics
            )
            if problems:
                nonce = form.get("nonce", "")
                view = item_view(
                    store,
                    queue,
                    who.name,
                    trace_id,
                    rubrics,
                    nonce=nonce if HEX32.fullmatch(nonce) else secrets.token_hex(16),
                    form_token=who.form_token,
                    form=form,
                    errors=problems,
                )
                return _html(item_page(view, paths), 422)
            result = store.append([label_event(x) for x in labels], source="annotate")
            if result.refused:
                text = "The database refused the labels (they are kept as dead letters)."
                return _html(message_page(paths, "Not saved", text, who), 500)
            return _redirect(paths.next(queue.name))

        return await self._signed_in(request, work)


# --- refusals and the posted form ------------------------------------------------------------


def _away(paths: Paths) -> Response:
    text = "The page cannot reach its database now; try again in a moment."
    response = _html(message_page(paths, "The database is away", text), 503)
    response.headers["Retry-After"] = "5"
    return response


def _not_found_page(paths: Paths, who: SignedIn) -> Response:
    return _html(message_page(paths, "Not found", "There is nothing for you here.", who), 404)


async def _read_form(request: Request) -> dict[str, str] | Response:
    """The posted form's fields, or the response refusing it (415, 413, 400)."""
    paths = _paths(request)
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != FORM_TYPE:
        return _html(message_page(paths, "Not a form", f"Send {FORM_TYPE}."), 415)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_FORM:
            return _html(message_page(paths, "Too long", "The form is too long."), 413)
        chunks.append(chunk)
    try:
        return parse_form(b"".join(chunks))
    except ValueError:
        return _html(message_page(paths, "Not a form", "The form has too many fields."), 400)
