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
importing a file twice adds nothing. A file that gives one test run uuid to several results
would make them one run; ``duplicates`` decides instead: ``refuse`` (the default) names how
many and the first of them and imports nothing, ``first`` keeps the first result of each uuid
and reports the others skipped, ``each`` makes every result a run of its own (the repeats'
trace ids derive from the uuid and the occurrence) and reports that it did.

Every model of the study answers the same 114 tests: a case is keyed by its service and test
description and carries nothing of the model that ran it (the test run's uuid is on the run),
so the results of every model go into one dataset and compare case by case. (Version 1 of these
datasets kept the uuid on the case; version 2 does not.)
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


DUPLICATES = ("refuse", "first", "each")


def load(
    path: Path, dataset: str, agent: str | None = None, duplicates: str = "refuse"
) -> tuple[Dataset, list[Event], list[str]]:
    """The dataset of cases and the events of the runs in a ``corrected_result.json``, and
    what was done with results repeating a test run uuid (see the module's documentation)."""
    if duplicates not in DUPLICATES:
        raise ValueError(f"duplicates: {duplicates!r} is not one of {', '.join(DUPLICATES)}")
    services = read_json_list(path, "services", IbmFormatError)
    agent = agent or path.parent.name
    cases: dict[str, Case] = {}
    events: list[Event] = []
    seen: dict[str, int] = {}  # test run uuid: results with it so far
    repeated: list[str] = []  # where each repeat is
    n = 0
    for s, service in enumerate(services):
        name = service.get("service") if isinstance(service, dict) else None
        if not isinstance(name, str) or not isinstance(service.get("results"), list):
            raise IbmFormatError(f"{path}: service [{s}] has no 'service' name or 'results' list")
        rules = rules_for_service(name)
        for r, result in enumerate(service["results"]):
            where = f"{path.name}: {name} result [{r}]"
            run_id = _run_id(result, where)
            occurrence = seen[run_id] = seen.get(run_id, 0) + 1
            if occurrence > 1:
                repeated.append(f"{run_id} ({name} result [{r}])")
                if duplicates != "each":
                    continue
            key = run_id if occurrence == 1 else f"{run_id}#{occurrence}"
            case, run = _one(
                result, name, rules, dataset, agent, key, where, EPOCH + timedelta(seconds=n)
            )
            if case.case_id in cases and cases[case.case_id] != case:
                raise IbmFormatError(f"{where}: case {case.case_id!r} differs from an earlier one")
            cases.setdefault(case.case_id, case)
            events.extend(run)
            n += 1
    ids = sum(1 for n in seen.values() if n > 1)
    notes = _duplicates(path, repeated, ids, duplicates)
    # in case order, not the file's service order (which differs between models' files)
    ordered = tuple(sorted(cases.values(), key=lambda c: c.case_id))
    return Dataset(dataset, VERSION, ordered, DESCRIPTION), events, notes


def _run_id(result: Any, where: str) -> str:
    if not isinstance(result, dict) or not isinstance(result.get("test_run_uuid"), str):
        raise IbmFormatError(f"{where}: expected a result with a test_run_uuid")
    return str(result["test_run_uuid"])


def _duplicates(path: Path, repeated: list[str], ids: int, duplicates: str) -> list[str]:
    """What became of results repeating a test run uuid; refused unless a policy was given."""
    if not repeated:
        return []
    first = ", ".join(repeated[:3]) + (", ..." if len(repeated) > 3 else "")
    what = (
        f"{len(repeated):,} results repeat the test_run_uuid of an earlier one "
        f"({ids:,} ids; first: {first})"
    )
    if duplicates == "refuse":
        raise IbmFormatError(
            f"{path.name}: {what}; nothing was imported. --duplicates first keeps the first "
            "result of each id, --duplicates each makes every result a run of its own"
        )
    if duplicates == "first":
        return [f"{path.name}: {what}: skipped, the first result of each id kept"]
    return [f"{path.name}: {what}: each made a run of its own"]


def _one(
    result: dict[str, Any],
    service: str,
    rules: ArgumentRules,
    dataset: str,
    agent: str,
    key: str,
    where: str,
    t0: datetime,
) -> tuple[Case, list[Event]]:
    """A result's case and run; ``key`` is the run's (its test run uuid, with ``#2``... for
    the repeats of one)."""
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
    run = RunBuilder(uuid.uuid5(NAMESPACE, f"{agent}/{key}").hex, t0)
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
