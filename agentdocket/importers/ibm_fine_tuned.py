"""The IBM study's fine-tuned models: ``api_data_0_11.json`` plus ``expected_final_responses.json``.

``api_data_0_11.json`` is ToolAlpaca's evaluation set with each API's ``Instances``: per
instruction the model's ``output`` and its ``intermediate_steps``, each ``[[Action,
Action_Input, log], observation]``; an instance with an ``"error"`` key is an errored test (the
model's output could not be parsed). The cases are ToolAlpaca's (expected plan and calls from the
golden answers) with the stub responses of ``expected_final_responses.json`` (by API name and
index) and the study's argument rules. A fine-tuned model has no separate planner: its plan is
the sequence of actions it took.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from agentdocket.events import (
    Case,
    Dataset,
    Event,
    Plan,
    PlanStep,
    Response,
    RunFinished,
    RunStarted,
)
from agentdocket.importers.common import RunBuilder, read_json_list
from agentdocket.importers.ibm_coalitions import (
    EPOCH,
    NAMESPACE,
    PAIRING,
    IbmFormatError,
    rules_for_service,
)
from agentdocket.importers.toolalpaca import (
    InputProblem,
    ToolAlpacaFormatError,
    api_cases,
    parse_input,
    read_apis,
)


def read_expected(path: Path) -> dict[str, list[str]]:
    """``expected_final_responses.json``: stub responses by API name."""
    data = read_json_list(path, "{Name, Expected_Final_Responses}", IbmFormatError)
    out: dict[str, list[str]] = {}
    for i, item in enumerate(data):
        if not (
            isinstance(item, dict)
            and isinstance(item.get("Name"), str)
            and isinstance(item.get("Expected_Final_Responses"), list)
        ):
            raise IbmFormatError(f"{path}: item [{i}] lacks Name or Expected_Final_Responses")
        out[item["Name"]] = [str(x) for x in item["Expected_Final_Responses"]]
    return out


def load(
    path: Path, expected_path: Path, dataset: str, agent: str | None = None
) -> tuple[Dataset, list[Event], list[InputProblem]]:
    """Cases, run events and unparseable golden inputs of a fine-tuned model's results."""
    try:
        apis = read_apis(path)
    except ToolAlpacaFormatError as exc:
        raise IbmFormatError(str(exc)) from None
    expected = read_expected(expected_path)
    agent = agent or path.parent.name
    cases: list[Case] = []
    events: list[Event] = []
    problems: list[InputProblem] = []
    n = 0
    for api in apis:
        name = api["Name"]
        instances = api.get("Instances")
        if not isinstance(instances, list) or len(instances) != len(api["Instructions"]):
            raise IbmFormatError(
                f"{path.name}: API {name!r} needs one instance per instruction "
                f"({len(api['Instructions'])})"
            )
        stubs = expected.get(name)
        if stubs is None or len(stubs) != len(instances):
            raise IbmFormatError(
                f"{expected_path.name}: no {len(instances)} expected final responses for API "
                f"{name!r}"
            )
        found, bad = api_cases(
            api,
            path.name,
            rules=[rules_for_service(name)],
            stub=stubs.__getitem__,
            attributes={"service": name, **PAIRING},
        )
        cases += found
        problems += bad
        for i, (case, instance) in enumerate(zip(found, instances, strict=True)):
            where = f"{path.name}: {name} instance [{i}]"
            events += _run(instance, case, name, dataset, agent, where, n)
            n += 1
    description = f"IBM coalitions study, fine-tuned: {agent}"
    return Dataset(dataset, "1", tuple(cases), description), events, problems


def _run(
    instance: Any, case: Case, api: str, dataset: str, agent: str, where: str, n: int
) -> list[Event]:
    if not isinstance(instance, dict):
        raise IbmFormatError(f"{where}: expected an object")
    tid = uuid.uuid5(NAMESPACE, f"{agent}/{case.case_id}").hex
    run = RunBuilder(tid, EPOCH + timedelta(seconds=n))
    run.add(
        RunStarted(
            agent=agent,
            question=case.question,
            dataset=dataset,
            dataset_version="1",
            case_id=case.case_id,
            attributes={"service": api, "instruction": case.attributes["instruction"]},
        )
    )
    if "error" in instance:
        run.add(RunFinished(status="error", error=str(instance["error"])))
        return run.events
    steps = instance.get("intermediate_steps") or []
    if not isinstance(steps, list):
        raise IbmFormatError(f"{where}: intermediate_steps is not a list")
    taken: list[tuple[str, Any, Any]] = []
    for k, step in enumerate(steps):
        try:
            (action, action_input, *_), observation = step[0], step[1]
        except (TypeError, ValueError, IndexError):
            raise IbmFormatError(
                f"{where}.intermediate_steps[{k}]: expected [[Action, Action_Input, log], "
                "observation]"
            ) from None
        taken.append((str(action), parse_input(action_input)[0], observation))
    run.add(Plan(steps=[PlanStep(tool=action) for action, _, _ in taken]))
    for action, arguments, observation in taken:
        run.call(action, arguments, observation)
    run.add(Response(text=str(instance.get("output") or "")))
    run.add(RunFinished(status="ok"))
    return run.events
