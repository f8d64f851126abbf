"""ToolAlpaca evaluation sets (``eval_real.json``, ``eval_simulated.json``) as datasets of cases.

Each API holds ``Instructions`` and, per instruction, ``Golden_Answers``: the actions a correct
agent takes, each ``{Action, Action_Input}`` with the input as a JSON string. A case's expected
plan is the golden actions; its expected calls are those actions with their parsed inputs. An
input that is not valid JSON (four CurrencyBeacon inputs of eval_real.json) is reported with its
API and instruction index and kept as the raw string, which the slot-filling scorer then
compares as a whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentdocket.events import ArgumentRules, Case, Dataset, ExpectedCall
from agentdocket.importers.common import SourceFormatError, read_json_list


class ToolAlpacaFormatError(SourceFormatError):
    """The file is not in ToolAlpaca's format; the message names the place."""


@dataclass(frozen=True)
class InputProblem:
    """A golden Action_Input that is not JSON: kept as its raw string."""

    api: str
    instruction: int
    step: int
    raw: str
    error: str

    def __str__(self) -> str:
        return (
            f"{self.api} instruction {self.instruction} step {self.step}: Action_Input is not "
            f"JSON ({self.error}); kept as the raw string {self.raw!r}"
        )


def parse_input(raw: Any) -> tuple[dict[str, Any] | str, str | None]:
    """An Action_Input as an object, or the raw string and why it could not be parsed."""
    if isinstance(raw, dict):
        return raw, None
    if not isinstance(raw, str):
        return json.dumps(raw), "not a string"
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return raw, exc.msg
    if not isinstance(value, dict):
        return raw, "not a JSON object"
    return value, None


def read_apis(path: Path) -> list[dict[str, Any]]:
    apis = read_json_list(path, "APIs", ToolAlpacaFormatError)
    for a, api in enumerate(apis):
        if not isinstance(api, dict) or not isinstance(api.get("Name"), str):
            raise ToolAlpacaFormatError(f"{path}: API [{a}] has no Name")
        for key in ("Instructions", "Golden_Answers"):
            if not isinstance(api.get(key), list):
                raise ToolAlpacaFormatError(f"{path}: API {api['Name']!r} has no {key} list")
        if len(api["Instructions"]) != len(api["Golden_Answers"]):
            raise ToolAlpacaFormatError(
                f"{path}: API {api['Name']!r} has {len(api['Instructions'])} instructions but "
                f"{len(api['Golden_Answers'])} golden answers"
            )
    return apis


def api_cases(
    api: dict[str, Any],
    where: str,
    rules: list[ArgumentRules] | None = None,
    stub: Callable[[int], str | None] | None = None,
    attributes: dict[str, Any] | None = None,
) -> tuple[list[Case], list[InputProblem]]:
    """The cases of one API (ids ``NAME:INDEX``) and the inputs that could not be parsed."""
    name = api["Name"]
    cases: list[Case] = []
    problems: list[InputProblem] = []
    for i, (instruction, golden) in enumerate(
        zip(api["Instructions"], api["Golden_Answers"], strict=True)
    ):
        if not isinstance(golden, list):
            raise ToolAlpacaFormatError(f"{where}: {name} golden answer [{i}] is not a list")
        plan: list[str] = []
        calls: list[ExpectedCall] = []
        for k, step in enumerate(golden):
            if not isinstance(step, dict) or not isinstance(step.get("Action"), str):
                raise ToolAlpacaFormatError(
                    f"{where}: {name} golden answer [{i}] step [{k}] has no Action"
                )
            arguments, error = parse_input(step.get("Action_Input", "{}"))
            if error is not None:
                problems.append(InputProblem(name, i, k, str(arguments), error))
            plan.append(step["Action"])
            calls.append(ExpectedCall(step["Action"], arguments))
        cases.append(
            Case(
                case_id=f"{name}:{i}",
                question=str(instruction),
                expected_plan=plan,
                expected_calls=calls,
                argument_rules=list(rules or []),
                stub_response=stub(i) if stub else None,
                attributes={"api": name, "category": api.get("Category"), "instruction": i}
                | (attributes or {}),
            )
        )
    return cases, problems


def load(path: Path, dataset: str) -> tuple[Dataset, list[InputProblem]]:
    """A ToolAlpaca evaluation file as a dataset (version 1) of cases."""
    cases: list[Case] = []
    problems: list[InputProblem] = []
    for api in read_apis(path):
        found, bad = api_cases(api, path.name)
        cases += found
        problems += bad
    return Dataset(dataset, "1", tuple(cases), f"ToolAlpaca {path.name}"), problems
