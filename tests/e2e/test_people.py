"""People in the loop through the command line, on every backend: rubrics, annotators, a
queue made from a selection, and a judge measured against a simulated annotator panel whose
error rates are known (``calibrate --against people:RUBRIC``)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from agentdocket.cli import main
from agentdocket.events import Label
from agentdocket.events.labels import label_event
from agentdocket.events.rubrics import Rubric
from agentdocket.store import open_store
from tests.helpers.factory import run_events, verdict_event
from tests.helpers.fresh import EVERY, fresh_url
from tests.helpers.panel import population

HELPFUL = Rubric(name="helpful", question="Does the answer help?", kind="pass_fail")
ERRORS = {"ana": 0.05, "ben": 0.1, "cy": 0.2}
PREVALENCE, SENS, SPEC = 0.6, 0.85, 0.7


@pytest.fixture(params=EVERY)
def url(request: pytest.FixtureRequest) -> str:
    return fresh_url(request)


def _cli(url: str, *args: str) -> str:
    out = CliRunner().invoke(main, ["--database", url, *args])
    assert out.exit_code == 0, out.output
    return out.output


def _panel(url: str, n: int, queue: str | None = None) -> list[str]:
    """``n`` runs with a latent truth; three annotators label each with their error rates, a
    judge (scorer ``judge.sim``) with its sensitivity and specificity."""
    rng = random.Random(5)
    draw = np.random.default_rng(5)
    ids = []
    with open_store(url) as store:
        store.labels.register_rubric(HELPFUL)
        events = []
        for i in range(n):
            run = run_events(rng)
            tid = run[0].trace_id
            ids.append(tid)
            truth = bool(draw.random() < PREVALENCE)
            judged = bool(draw.random() < SENS) if truth else bool(draw.random() >= SPEC)
            events += [*run, verdict_event(run, scorer="judge.sim", passed=judged)]
            for who, error in ERRORS.items():
                said = truth != bool(draw.random() < error)
                label = Label(
                    label_id=f"{who}-{i}",
                    subject_trace_id=tid,
                    rubric="helpful",
                    rubric_version="1",
                    author=who,
                    source="queue",
                    value=said,
                    queue=queue,
                )
                events.append(label_event(label))
        store.append(events)
    return ids


def test_a_judge_against_a_simulated_panel_recovers_its_precision_and_recall(url: str) -> None:
    _panel(url, 400)
    out = json.loads(
        _cli(
            url,
            "calibrate",
            "--judge",
            "judge.sim",
            "--against",
            "people:helpful",
            "--format",
            "json",
        )
    )
    precision, recall = population(PREVALENCE, list(ERRORS.values()), SENS, SPEC)
    assert out["n"] == 400 and out["tp"] + out["fp"] + out["fn"] + out["tn"] == 400
    for name, true in (("precision", precision), ("recall", recall)):
        low, high = out["intervals"][name]
        assert low <= true <= high, (name, true, low, high)
    assert len(out["disagreements"]) == out["fp"] + out["fn"]
    text = _cli(url, "calibrate", "--judge", "judge.sim", "--against", "people:helpful")
    assert "majority of 3 annotators, 1200 labels" in text and "TP" in text and "f1" in text


def test_queues_from_the_command_line(url: str, tmp_path: Path) -> None:
    ids = _panel(url, 12)
    rubrics = tmp_path / "rubrics.toml"
    rubrics.write_text(
        '[[rubric]]\nname = "tone"\nquestion = "Tone?"\nkind = "categorical"\n'
        'labels = ["curt", "fine", "warm"]\nordered = true\n'
    )
    assert "tone version 1 (categorical): registered" in _cli(url, "rubric", "add", str(rubrics))
    token = _cli(url, "annotator", "add", "ana").strip()
    assert len(token) > 20
    _cli(url, "annotator", "add", "ben")
    made = _cli(
        url,
        "queue",
        "create",
        "failing",
        "--rubric",
        "tone",
        "--annotator",
        "ana",
        "--annotator",
        "ben",
        "--per-item",
        "2",
        "--failing",
        "judge.sim",
    )
    with open_store(url) as store:
        queue = store.queues.get("failing")
        assert queue is not None
        failing = {
            v.trace_id for v in store.scoring.report_verdicts({"judge.sim": "1"}) if not v.passed
        }
        assert set(queue.items) == failing and f"{len(failing)} runs" in made
        item = store.queues.next_item(queue, "ana")
        assert item in failing
    listed = json.loads(_cli(url, "queue", "list", "--format", "json"))
    assert listed[0]["name"] == "failing" and listed[0]["rubrics"] == ["tone@1"]
    _cli(url, "feedback", "add", ids[0], "--rubric", "tone", "--value", "warm", "--author", "ana")
    bad = CliRunner().invoke(
        main,
        [
            "--database",
            url,
            "feedback",
            "add",
            ids[0],
            "--rubric",
            "tone",
            "--value",
            "hot",
            "--author",
            "a",
        ],
    )
    assert bad.exit_code != 0 and "takes one of curt, fine, warm" in bad.output
    given = json.loads(_cli(url, "feedback", "list", "--rubric", "tone", "--format", "json"))
    assert [(g["trace_id"], g["value"]) for g in given] == [(ids[0], "warm")]
    progress = json.loads(_cli(url, "queue", "progress", "failing", "--format", "json"))
    assert progress["items"] == len(failing) and progress["annotators"]["ana"]["labelled"] == 0


def test_agreement_of_a_queue_equals_the_reference_computation(url: str) -> None:
    from agentdocket.people.agreement import fleiss_kappa, krippendorff_alpha
    from tests.helpers.agreement_reference import alpha_by_pairs, fleiss_by_formula

    ids = _panel(url, 120, queue="panel")
    for who in ERRORS:
        _cli(url, "annotator", "add", who)
    with open_store(url) as store:
        store.queues.create(
            "panel",
            rubrics=[("helpful", "1")],
            per_item=3,
            items=ids,
            members=list(ERRORS),
            selection={"traces": len(ids)},
        )
        given = store.labels.given(queue="panel")
    by_item: dict[str, dict[str, object]] = {}
    for g in given:
        by_item.setdefault(g.trace_id, {})[g.author] = g.value
    ordered = [by_item[t] for t in sorted(by_item)]  # the runs in trace id order, as stored
    items = [list(v.values()) for v in ordered]
    units = [[v.get(w) for w in ERRORS] for v in ordered]
    out = json.loads(
        _cli(url, "agreement", "--queue", "panel", "--samples", "400", "--format", "json")
    )
    (helpful,) = out
    assert helpful["rubric"] == "helpful" and helpful["labels"] == 360
    assert helpful["fleiss"]["value"] == pytest.approx(fleiss_by_formula(items), abs=1e-12)
    assert helpful["alpha_nominal"]["value"] == pytest.approx(
        float(alpha_by_pairs(units, "nominal")), abs=1e-12
    )
    fleiss = fleiss_kappa(items, samples=400, seed=0)
    alpha = krippendorff_alpha(units, samples=400, seed=0)
    assert (helpful["fleiss"]["low"], helpful["fleiss"]["high"]) == (fleiss.low, fleiss.high)
    assert (helpful["alpha_nominal"]["low"], helpful["alpha_nominal"]["high"]) == (
        alpha.low,
        alpha.high,
    )
    assert [(p["first"], p["second"]) for p in helpful["pairwise"]] == [
        ("ana", "ben"),
        ("ana", "cy"),
        ("ben", "cy"),
    ]
    text = _cli(url, "agreement", "--queue", "panel", "--samples", "200")
    assert "Fleiss' kappa" in text and "Krippendorff's alpha (nominal)" in text


def test_the_agreement_panel_is_fleiss_kappa_of_each_weeks_runs(pg_url: str) -> None:
    from datetime import UTC, datetime, timedelta

    from agentdocket.dashboards.macros import expand
    from agentdocket.dashboards.panels import people
    from agentdocket.people.agreement import fleiss_kappa

    rng = random.Random(9)
    draw = np.random.default_rng(9)
    monday = datetime(2026, 11, 2, 9, tzinfo=UTC)
    weeks: dict[int, list[list[object]]] = {0: [], 1: []}
    events = []
    for i in range(60):
        run = run_events(rng)
        week = i % 2
        truth = bool(draw.random() < 0.5)
        said = []
        for j, (who, error) in enumerate(ERRORS.items()):
            if i % 5 == 0 and j == 2:
                continue  # some runs have two labels, not three
            value = truth != bool(draw.random() < error)
            said.append(value)
            when = monday + timedelta(days=7 * week + 1, minutes=i + j)
            label = Label(
                label_id=f"{who}-{i}",
                subject_trace_id=run[0].trace_id,
                rubric="helpful",
                author=who,
                source="queue",
                value=value,
                queue="w",
            )
            events.append(label_event(label, when))
        events += run
        weeks[week].append(said)
    with open_store(pg_url) as store:
        store.append(events)
        [spec] = [p for p in people.PANELS if p.title.startswith("Annotator agreement")]
        values = {"agent": ["agent-a"], "dataset": ["ds"]}
        rows = store.recorder.read(expand(spec.sql, values))
    got = {(r[0].date(), r[1]): r[2] for r in rows}
    assert set(got) == {
        (monday.date(), "helpful"),
        ((monday + timedelta(days=7)).date(), "helpful"),
    }
    for week, items in weeks.items():
        expected = fleiss_kappa(items, samples=0).value
        assert got[((monday + timedelta(days=7 * week)).date(), "helpful")] == pytest.approx(
            expected, abs=1e-12
        )
