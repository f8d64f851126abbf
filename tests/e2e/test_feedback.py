"""POST /v1/feedback on a real ``agentdocket serve``: labels from concurrent clients stored
exactly once (retries included), bad requests turned away whole with a 4xx naming the member,
a label on a run not (yet) stored kept and reported."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentdocket.events.rubrics import Rubric
from agentdocket.store import open_store
from agentdocket.store.labels import latest
from tests.helpers.factory import run_events
from tests.helpers.otlp_server import Server

QUALITY = Rubric(name="quality", question="How good, 1 to 5?", kind="scale")


def _post(client: httpx.Client, url: str, body: Any, **kw: Any) -> httpx.Response:
    """Send until the answer is not 503 (busy: too many requests in flight), as clients do."""
    while True:
        response = client.post(url, json=body, **kw)
        if response.status_code != 503:
            return response
        time.sleep(float(response.headers.get("retry-after", "1")) / 10)


@pytest.fixture
def served(url: str, tmp_path: Path) -> Any:
    with open_store(url) as store:
        rng = random.Random(11)
        ids = []
        for _ in range(40):
            events = run_events(rng)
            store.append(events)
            ids.append(events[0].trace_id)
        store.labels.register_rubric(QUALITY)
    server = Server(url, tmp_path / "spool").start()
    yield server, ids
    server.stop()


def test_a_thousand_labels_from_concurrent_clients_are_stored_exactly_once(
    url: str, served: Any
) -> None:
    server, ids = served
    endpoint = f"http://127.0.0.1:{server.port}/v1/feedback"
    labels = [
        {
            "id": f"fb-{i}",
            "trace_id": ids[i % len(ids)],
            "rubric": "thumbs" if i % 2 else "quality",
            "value": ("up" if i % 3 else "down") if i % 2 else 1 + i % 5,
            "author": f"user:{i % 97}",
            "comment": f"comment {i}",
        }
        for i in range(1000)
    ]
    failures: list[str] = []

    def client(part: list[dict[str, Any]], seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(timeout=30) as http:
            i = 0
            while i < len(part):
                n = rng.randint(1, 7)
                body = {"labels": part[i : i + n]}
                for _ in range(1 + (rng.random() < 0.3)):  # some requests sent twice
                    response = _post(http, endpoint, body)
                    if response.status_code != 200:
                        failures.append(response.text)
                i += n

    threads = [threading.Thread(target=client, args=(labels[k::6], k)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    server.settled()
    with open_store(url) as store:
        given = store.labels.of_runs(ids)
    assert sorted(g.label_id for g in given) == sorted(x["id"] for x in labels)
    by_id = {g.label_id: g for g in given}
    assert by_id["fb-3"].value is False and by_id["fb-5"].value is True
    assert by_id["fb-9"].value is False and by_id["fb-4"].value == 5
    assert by_id["fb-4"].rubric == "quality" and by_id["fb-4"].source == "api"
    assert len(latest(given)) <= len(given)


# Each bad request, the status it gets and what its error names.
BAD = [
    ({"labels": [{"trace_id": "a" * 32, "value": "up"}]}, 422, "labels[1].author: missing"),
    ({"trace_id": "a" * 32, "value": "sideways", "author": "u"}, 422, "label.value: rubric"),
    ({"trace_id": "xyz", "value": "up", "author": "u"}, 422, "label.trace_id"),
    ({"trace_id": "a" * 32, "value": 9, "author": "u", "rubric": "quality"}, 422, "1 to 5"),
    ({"trace_id": "a" * 32, "value": 1, "author": "u", "rubric": "nope"}, 422, "no rubric"),
    ({"trace_id": "a" * 32, "value": 1, "author": "u", "colour": 1}, 422, "label.colour"),
    ({"trace_id": "a" * 32, "value": "up", "author": "u", "ts": "never"}, 422, "label.ts"),
    ({"labels": []}, 422, "labels: empty"),
]


def test_a_bad_request_gets_a_4xx_naming_the_member_and_stores_nothing(
    url: str, served: Any
) -> None:
    """Each bad request in turn on one server, with a good label beside the bad one where the
    request holds a list: the good one is not stored either."""
    server, ids = served
    for body, status, names in BAD:
        good = {"trace_id": ids[0], "value": "up", "author": "u", "id": "good-one"}
        with_good = {"labels": [good, *body["labels"]]} if body.get("labels") else body
        response = httpx.post(f"http://127.0.0.1:{server.port}/v1/feedback", json=with_good)
        assert response.status_code == status, body
        assert names in response.json()["error"], body
        with open_store(url) as store:
            assert store.labels.of_runs([ids[0]]) == [], body  # nor the good label beside it


def test_not_json_and_wrong_type_and_unknown_runs(url: str, served: Any) -> None:
    server, ids = served
    endpoint = f"http://127.0.0.1:{server.port}/v1/feedback"
    response = httpx.post(endpoint, content=b"{nope", headers={"content-type": "application/json"})
    assert response.status_code == 400 and "not JSON" in response.json()["error"]
    response = httpx.post(endpoint, content=b"up", headers={"content-type": "text/plain"})
    assert response.status_code == 415
    stranger = "f" * 32
    response = httpx.post(
        endpoint,
        json={
            "labels": [{"trace_id": t, "value": "down", "author": "u"} for t in (ids[1], stranger)]
        },
    )
    assert response.status_code == 200
    assert response.json() == {"accepted": 2, "outcome": "stored", "unknown_runs": [stranger]}
    with open_store(url) as store:
        assert [g.value for g in store.labels.of_runs([stranger])] == [False]


def test_the_bearer_token_guards_feedback(url: str, tmp_path: Path) -> None:
    server = Server(url, tmp_path / "spool", "--token", "s3cret").start()
    try:
        endpoint = f"http://127.0.0.1:{server.port}/v1/feedback"
        body = {"trace_id": "a" * 32, "value": "up", "author": "u"}
        assert httpx.post(endpoint, json=body).status_code == 401
        ok = httpx.post(endpoint, json=body, headers={"authorization": "Bearer s3cret"})
        assert ok.status_code == 200
    finally:
        server.stop()
