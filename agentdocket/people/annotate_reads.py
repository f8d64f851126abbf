"""What the annotators' pages read from the store: a queue its annotator is a member of, the
queue's rubrics, and everything an item's page shows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agentdocket.events.rubrics import Rubric
from agentdocket.people.annotate_html import ItemView, form_value
from agentdocket.people.annotate_run import latest_verdicts
from agentdocket.store import Store
from agentdocket.store.labels import latest
from agentdocket.store.queues import Queue


def member_queue(store: Store, name: str, who: str) -> Queue | None:
    """The queue, if ``who`` is a member of it."""
    queue = store.queues.get(name)
    return queue if queue is not None and who in queue.members else None


def queue_rubrics(store: Store, queue: Queue) -> list[Rubric] | str:
    """The queue's rubrics, or what is missing."""
    found = []
    for name, version in queue.rubrics:
        rubric = store.labels.rubric(name, version)
        if rubric is None:
            return f"Its rubric {name!r} version {version!r} is not registered."
        found.append(rubric)
    return found


def item_view(
    store: Store,
    queue: Queue,
    who: str,
    trace_id: str,
    rubrics: Sequence[Rubric],
    *,
    nonce: str,
    form_token: str,
    form: Mapping[str, str] | None = None,
    errors: Sequence[str] = (),
) -> ItemView:
    """The item page of ``trace_id`` for ``who``: the run, their current labels (or what they
    just sent, ``form``), and the item they labelled before it; its forms carry ``nonce`` and
    ``form_token``."""
    mine = store.labels.given(queue=queue.name, author=who)  # oldest first
    order = list(dict.fromkeys(x.trace_id for x in mine))  # items in the order first labelled
    if trace_id in order:
        at = order.index(trace_id)
        back = order[at - 1] if at else None
    else:
        back = order[-1] if order else None
    here = [x for x in mine if x.trace_id == trace_id]
    current = {x.rubric: x for x in latest(here)}
    answers = {
        i: form_value(current[r.name].value) for i, r in enumerate(rubrics) if r.name in current
    }
    comment = next((x.comment for x in current.values() if x.comment), None) or ""
    skips = [x.skipped for x in here if x.skipped is not None]
    reason = skips[-1] if skips and not current else ""
    if form is not None and form.get("action") == "skip":  # what they sent, back to them
        reason = form.get("reason", "")
    elif form is not None:
        answers = {i: form.get(f"answer-{i}", "") for i in range(len(rubrics))}
        comment = form.get("comment", "")
    trace = store.reader.read_trace(trace_id)
    events = list(trace.events) if trace is not None else []
    mine_now = store.queues.progress(queue).by_annotator.get(who, {})
    return ItemView(
        queue=queue.name,
        trace_id=trace_id,
        annotator=who,
        run=store.reader.run(trace_id),
        events=events,
        case=trace.case if trace is not None else None,
        rubrics=rubrics,
        nonce=nonce,
        form_token=form_token,
        answers=answers,
        comment=comment,
        reason=reason,
        back=back,
        verdicts=latest_verdicts(events) if queue.show_verdicts and current else None,
        verdicts_later=queue.show_verdicts,
        errors=errors,
        labelled=mine_now.get("labelled", 0),
        remaining=mine_now.get("remaining", 0),
    )
