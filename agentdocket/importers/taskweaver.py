"""TaskWeaver auto_eval cases ("How to evaluate a LLM agent?") as a dataset of examiner / judge
cases.

A folder holds ``evaluator_prompt.yaml``, ``virtual_user_prompt.yaml`` and ``cases/*/*.yaml``.
Each case YAML has ``task_description``, ``scoring_points`` (``score_point``, ``weight``,
``eval_code``), and environment fields (``version``, ``config_var``, ``app_dir``,
``dependencies``, ``data_files``, ``max_rounds``). A case becomes self-contained: its data files
(a few KiB each) travel base64-encoded in its attributes, with the examiner's and the judge's
instructions, so that examining and scoring need nothing but the store. A data file is named
relative to its case file's folder and must stay inside it (:func:`~.common.inside`): a name
that is absolute, or leads out through ``..`` or a symlink, fails the whole import. A case may
also list ``eval_env``: names of environment variables its ``eval_code`` checks may see, beyond
the examiner harness's own few.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from agentdocket.events import Case, Dataset, ScoringPoint
from agentdocket.importers.common import ENV_NAME, SourceFormatError, inside, read_yaml_mapping

DEFAULT_MAX_ROUNDS = 5  # the harness's default (evaluator_config_template.json may say more)


class TaskWeaverFormatError(SourceFormatError):
    """A case or prompt file is not in the auto_eval format; the message names the file."""


def _yaml(path: Path) -> dict[str, Any]:
    return read_yaml_mapping(path, "a mapping", TaskWeaverFormatError)


def _text(data: dict[str, Any], key: str, path: Path) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise TaskWeaverFormatError(f"{path}: {key} is missing or not text")
    return value.strip()


def prompts(folder: Path) -> dict[str, str]:
    """The examiner's instruction template, its kick-off message and stop keyword, and the
    judge's instruction (with its response schema filled in)."""
    user = _yaml(folder / "virtual_user_prompt.yaml")
    judge = _yaml(folder / "evaluator_prompt.yaml")
    schema = _text(judge, "response_schema", folder / "evaluator_prompt.yaml")
    instruction = _text(judge, "instruction_template", folder / "evaluator_prompt.yaml")
    return {
        "examiner_instruction": _text(
            user, "instruction_template", folder / "virtual_user_prompt.yaml"
        ),
        "kick_off_message": _text(user, "kick_off_message", folder / "virtual_user_prompt.yaml"),
        "stop_keyword": _text(user, "stop_keyword", folder / "virtual_user_prompt.yaml"),
        "judge_instruction": instruction.replace("{response_schema}", schema),
    }


def _case(path: Path, root: Path, shared: dict[str, str], problems: list[str]) -> Case:
    data = _yaml(path)
    task = _text(data, "task_description", path)
    points_raw = data.get("scoring_points")
    if not isinstance(points_raw, list) or not points_raw:
        raise TaskWeaverFormatError(f"{path}: scoring_points must be a non-empty list")
    points = []
    for i, p in enumerate(points_raw):
        where = f"{path}: scoring_points[{i}]"
        if not isinstance(p, dict) or not isinstance(p.get("score_point"), str):
            raise TaskWeaverFormatError(f"{where} has no score_point text")
        weight = p.get("weight", 1)
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
            raise TaskWeaverFormatError(f"{where}: weight {weight!r} is not a number >= 0")
        code = p.get("eval_code")
        if code is not None and not isinstance(code, str):
            raise TaskWeaverFormatError(f"{where}: eval_code must be text or null")
        points.append(ScoringPoint(point=p["score_point"], weight=float(weight), eval_code=code))
    files: dict[str, str] = {}
    missing: list[str] = []
    names = data.get("data_files") or []
    if not isinstance(names, list):
        raise TaskWeaverFormatError(f"{path}: data_files must be a list of file names")
    for i, name in enumerate(names):
        where = f"{path}: data_files[{i}]"
        if isinstance(name, bool) or not isinstance(name, str | int | float):
            raise TaskWeaverFormatError(f"{where}: {name!r} is not a file name")
        source = inside(path.parent, str(name), where, TaskWeaverFormatError)
        try:
            files[str(name)] = base64.b64encode(source.read_bytes()).decode()
        except OSError as exc:  # the published cases lack some; the case still imports
            missing.append(str(name))
            problems.append(f"{path}: data file {name}: {exc.strerror}; imported without it")
    rounds = data.get("max_rounds", DEFAULT_MAX_ROUNDS)
    attributes = {
        **shared,
        "data_files": files,
        "missing_data_files": missing,
        "max_rounds": int(rounds),
        "config_var": data.get("config_var") or {},
        "dependencies": data.get("dependencies") or [],
        "version": str(data.get("version", "")),
    }
    if "eval_env" in data:  # only then: the cases of the published folder stay as they were
        attributes["eval_env"] = _env_names(data["eval_env"], f"{path}: eval_env")
    return Case(
        case_id=str(path.relative_to(root).with_suffix("")),
        question=task,
        scoring_points=points,
        attributes=attributes,
    )


def _env_names(value: Any, where: str) -> list[str]:
    """A case's ``eval_env``: a list of environment variable names."""
    if not isinstance(value, list):
        raise TaskWeaverFormatError(f"{where} must be a list of environment variable names")
    for i, name in enumerate(value):
        if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
            raise TaskWeaverFormatError(f"{where}[{i}]: {name!r} is not a variable name")
    return list(value)


def load(folder: Path, dataset: str) -> tuple[Dataset, list[str]]:
    """The cases under ``folder`` (which holds the two prompt files and ``cases/``), and the
    problems met that did not stop the import (data files that are missing)."""
    if not folder.is_dir():
        raise TaskWeaverFormatError(f"{folder}: not a folder")
    shared = prompts(folder)
    root = folder / "cases"
    paths = sorted(root.glob("*/*.yaml")) + sorted(root.glob("*/*.yml"))
    if not paths:
        raise TaskWeaverFormatError(f"{root}: no case files (cases/*/*.yaml)")
    problems: list[str] = []
    cases = tuple(_case(p, root, shared, problems) for p in paths)
    for case in cases:
        if sum(p.weight for p in case.scoring_points) <= 0:
            raise TaskWeaverFormatError(
                f"{root / case.case_id}.yaml: the scoring points' total weight is 0"
            )
    description = f"TaskWeaver auto_eval cases from {folder.name}"
    return Dataset(dataset, "1", cases, description), problems
