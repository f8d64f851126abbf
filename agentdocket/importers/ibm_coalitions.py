"""Importer for the raw outputs of the IBM coalitions-for-tool-use study.

Two formats (see ../shared/datasets/README.md):

- single models: ``corrected_result.json``, a list of services, each with its test results;
- fine-tuned models: ``api_data_0_11.json`` (ToolAlpaca-style instances) with the stub
  responses of ``expected_final_responses.json``.

Every test becomes a run (its plan, its tool calls with their inputs, its final response; an
errored test an errored run, which reports leave out of averages) and a case (expected plan,
expected calls, stub response) carrying the study's argument rules, which belong to the data and
not to any scorer:

- ``appid``, ``api_key`` and ``access_key`` are ignored on both sides, everywhere;
- currencybeacon: an expected ``symbols`` list is compared as a comma-joined string, ``amount``
  as a string;
- wolframalpha: ``timeout`` is ignored; the query ``i`` is compared by all-MiniLM-L6-v2 cosine
  above 0.87, after ``%20`` and ``+`` become spaces;
- expected and executed calls are paired in order (``slot_fill_pairing = "in_order"``), as the
  study did: with the default optimal matching one published verdict (mistral_all,
  wolframalpha "toolalpaca 12") would flip from fail to pass.

A fine-tuned model has no separate planner: its plan is the sequence of actions it took.

Ids are derived from the test run uuids (fine-tuned: the API and instruction index), so
importing a file twice adds nothing. Every model of the study answers the same 114 tests: a
case is keyed by its service and test description and carries nothing of the model that ran
it (the test run's uuid is on the run), so the results of every model go into one dataset and
compare case by case. (Version 1 of these datasets kept the uuid on the case; version 2 does
not.)
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentdocket.events import (
    ArgumentRules,
    Case,
    Dataset,
    Event,
    ExpectedCall,
    Plan,
    PlanStep,
    Response,
    RunFinished,
    RunStarted,
)
from agentdocket.importers.common import RunBuilder, SourceFormatError, read_json_list

NAMESPACE = uuid.UUID("3b0e3f4e-1c55-5f0a-8d1e-6a2f4c9b7d21")
VERSION = "2"
DESCRIPTION = "IBM coalitions study: the 114 ToolAlpaca tests every model answered"
IGNORED = ["appid", "api_key", "access_key"]
SERVICE_RULES = {
    "currencybeacon": ArgumentRules(
        ignore=IGNORED, coerce={"symbols": "join_comma", "amount": "string"}
    ),
    "wolframalpha": ArgumentRules(
        ignore=[*IGNORED, "timeout"], normalize={"i": ["url_spaces"]}, semantic={"i": 0.87}
    ),
}
DEFAULT_RULES = ArgumentRules(ignore=IGNORED)
# the study paired expected and executed calls in order; its numbers depend on it
PAIRING = {"slot_fill_pairing": "in_order"}


def rules_for_service(name: str) -> ArgumentRules:
    """The study's rules for a service, by name in either format ("WolframAlpha",
    "wolframalpha")."""
    return SERVICE_RULES.get("".join(c for c in name.lower() if c.isalnum()), DEFAULT_RULES)


EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


class IbmFormatError(SourceFormatError):
    """The file is not in the study's format; the message names the place."""


def _steps(value: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise IbmFormatError(f"{where}: expected a list of steps")
    for i, step in enumerate(value):
        if not isinstance(step, dict) or not isinstance(step.get("step_name"), str):
            raise IbmFormatError(f"{where}[{i}]: expected {{step_name, step_inputs}}")
    return value


def load(path: Path, dataset: str, agent: str | None = None) -> tuple[Dataset, list[Event]]:
    """The dataset of cases and the events of the runs in a ``corrected_result.json``."""
    services = read_json_list(path, "services", IbmFormatError)
    agent = agent or path.parent.name
    cases: list[Case] = []
    events: list[Event] = []
    n = 0
    for s, service in enumerate(services):
        name = service.get("service") if isinstance(service, dict) else None
        if not isinstance(name, str) or not isinstance(service.get("results"), list):
            raise IbmFormatError(f"{path}: service [{s}] has no 'service' name or 'results' list")
        rules = rules_for_service(name)
        for r, result in enumerate(service["results"]):
            where = f"{path.name}: {name} result [{r}]"
            case, run = _one(
                result, name, rules, dataset, agent, where, EPOCH + timedelta(seconds=n)
            )
            cases.append(case)
            events.extend(run)
            n += 1
    # in case order, not the file's service order (which differs between models' files)
    ordered = tuple(sorted(cases, key=lambda c: c.case_id))
    return Dataset(dataset, VERSION, ordered, DESCRIPTION), events


def _one(
    result: Any,
    service: str,
    rules: ArgumentRules,
    dataset: str,
    agent: str,
    where: str,
    t0: datetime,
) -> tuple[Case, list[Event]]:
    if not isinstance(result, dict) or "test_run_uuid" not in result:
        raise IbmFormatError(f"{where}: expected a result with a test_run_uuid")
    description = str(result.get("test_description", "")).removeprefix("Test: ")
    case_id = f"{service}:{description or result['test_run_uuid']}"
    expected = _steps(result.get("expected_executor_step_and_parameters", []), f"{where}.expected")
    received = _steps(result.get("recieved_executor_step_and_parameters", []), f"{where}.received")
    case = Case(
        case_id=case_id,
        question=result.get("input_prompt"),
        expected_plan=[str(s) for s in result.get("expected_planner_output") or []],
        expected_calls=[ExpectedCall(s["step_name"], s.get("step_inputs") or {}) for s in expected],
        argument_rules=[rules],
        stub_response=result.get("expected_magpie_output"),
        attributes={"service": service, **PAIRING},
    )
    run = RunBuilder(uuid.uuid5(NAMESPACE, f"{agent}/{result['test_run_uuid']}").hex, t0)
    run.add(
        RunStarted(
            agent=agent,
            question=result.get("input_prompt"),
            dataset=dataset,
            dataset_version=VERSION,
            case_id=case_id,
            attributes={"service": service, "test_run_uuid": result["test_run_uuid"]},
        )
    )
    run.add(
        Plan(steps=[PlanStep(tool=str(s)) for s in result.get("recieved_planner_output") or []])
    )
    for step in received:
        run.call(step["step_name"], step.get("step_inputs"))
    run.add(Response(text=str(result.get("recieved_magpie_output") or "")))
    errors = result.get("execution_errors") or []
    if errors:
        run.add(RunFinished(status="error", error="; ".join(map(str, errors))))
    else:
        run.add(RunFinished(status="ok"))
    return case, run.events
