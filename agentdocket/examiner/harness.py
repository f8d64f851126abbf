"""The examiner harness ("How to evaluate a LLM agent?"): an examiner model converses with an agent
under test from a case's task description, recorded through the tracer; afterwards each
``eval_code`` scoring point is checked in the agent's working directory.

The agent is any object with ``reply(message) -> str`` and ``close()``, made by a factory
``factory(task_description, working_directory)`` (``agentdocket examine --agent
MODULE:FACTORY``). As in the original harness, the conversation opens with the kick-off message
to the examiner; the examiner's turns are AI messages and the agent's replies human messages;
it ends when the examiner says the stop keyword, after ``max_rounds`` examiner turns, or when
the agent fails. The working directory holds the case's data files.

An ``eval_code`` point runs in a separate Python process, in the working directory, with
``chat_history`` (langchain messages, without the examiner's final stop message), a timeout,
and no network (a fresh network namespace via ``unshare -n`` where the system allows it). It is
a hit when the code exits without an exception. Each check is recorded in the run as a call of
the tool ``examiner.eval_code``; the ``examiner.points`` scorer reads them from there.
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agentdocket.events import Case
from agentdocket.scorers.judges.points import EVAL_TOOL  # the tool its checks are recorded as
from agentdocket.tracer.api import Run, Tracer

_RUNNER = r"""
import json, sys
from langchain_core.messages import AIMessage, HumanMessage
data = json.load(sys.stdin)
kinds = {"examiner": AIMessage, "agent": HumanMessage}
chat_history = [kinds[role](content=content) for role, content in data["history"]]
code = compile(data["code"], "<eval_code>", "exec")
exec(code, {"chat_history": chat_history, "AIMessage": AIMessage, "HumanMessage": HumanMessage})
"""


class ConversationalAgent(Protocol):
    def reply(self, message: str) -> str: ...

    def close(self) -> None: ...


AgentFactory = Callable[[str, Path], ConversationalAgent]


def load_factory(spec: str) -> AgentFactory:
    """``MODULE:FACTORY`` -> the factory; a clear error when either is missing."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--agent {spec!r}: expected MODULE:FACTORY")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"--agent {spec!r}: cannot import {module_name!r} ({exc})") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ValueError(f"--agent {spec!r}: {module_name} has no callable {attr!r}")
    return factory  # type: ignore[no-any-return]


@dataclass(frozen=True)
class EvalResult:
    passed: bool
    error: str | None
    network_isolated: bool


def _isolation() -> list[str]:
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    probe = subprocess.run([unshare, "-rn", "true"], capture_output=True, check=False)
    return [unshare, "-rn"] if probe.returncode == 0 else []


def run_eval_code(
    code: str, history: list[tuple[str, str]], workdir: Path, timeout_s: float = 30.0
) -> EvalResult:
    """Run one ``eval_code`` on the chat history in ``workdir``: passed when it exits 0."""
    prefix = _isolation()
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", _RUNNER],
            input=json.dumps({"history": history, "code": code}),
            capture_output=True,
            text=True,
            cwd=workdir,
            env=env,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return EvalResult(False, f"timed out after {timeout_s:g}s", bool(prefix))
    if done.returncode == 0:
        return EvalResult(True, None, bool(prefix))
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return EvalResult(False, lines[-1] if lines else f"exit {done.returncode}", bool(prefix))


@dataclass(frozen=True)
class Examination:
    case_id: str
    trace_id: str | None
    rounds: int
    stopped_by: str  # keyword, max_rounds, agent_error
    eval_passed: int
    eval_total: int


def examine(
    tracer: Tracer,
    case: Case,
    factory: AgentFactory,
    examiner: Any,
    examiner_name: str,
    *,
    agent_name: str,
    dataset: str,
    dataset_version: str,
    max_rounds: int | None = None,
    temperature: float = 0.0,
    eval_timeout_s: float = 30.0,
) -> Examination:
    """Converse, record, check the eval_code points. Returns what happened."""

    attributes = case.attributes
    stop = str(attributes["stop_keyword"])
    kick_off = str(attributes["kick_off_message"])
    rounds_allowed = max_rounds or int(attributes.get("max_rounds") or 5)
    instruction = (
        str(attributes["examiner_instruction"])
        .replace("{task_description}", case.question or "")
        .replace("{kick_off_message}", kick_off)
        .replace("{stop_keyword}", stop)
    )
    with tempfile.TemporaryDirectory(prefix="agentdocket-examine-") as tmp:
        workdir = Path(tmp)
        for name, data in (attributes.get("data_files") or {}).items():
            (workdir / name).write_bytes(base64.b64decode(data))
        agent = factory(case.question or "", workdir)
        with tracer.run(
            agent_name,
            question=case.question,
            case=case.case_id,
            dataset=dataset,
            dataset_version=dataset_version,
            strategy="examined",
            models={"examiner": examiner_name},
        ) as run:
            try:
                talk = _Talk(examiner, examiner_name, temperature, stop)
                rounds, stopped, history = talk.converse(
                    run, agent, instruction, kick_off, rounds_allowed
                )
            finally:
                agent.close()
            last = next((c for r, c in reversed(history) if r == "agent"), None)
            if last is not None:
                run.respond(last)
            passed, total = _check_points(run, case, history, workdir, eval_timeout_s)
            trace_id = run.trace_id
    return Examination(case.case_id, trace_id, rounds, stopped, passed, total)


@dataclass(frozen=True)
class _Talk:
    """The examiner's side of a conversation: its model, how it is asked, its stop word."""

    examiner: Any
    name: str
    temperature: float
    stop: str

    def converse(
        self, run: Run, agent: Any, instruction: str, kick_off: str, rounds_allowed: int
    ) -> tuple[int, str, list[tuple[str, str]]]:
        """Rounds of examiner and agent, recorded in ``run``, until the examiner says the stop
        word, the agent fails or the rounds run out: the rounds, why it stopped, the history."""
        from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

        roles = {"system": "system", "human": "user", "ai": "assistant"}
        messages: list[BaseMessage] = [SystemMessage(instruction), HumanMessage(kick_off)]
        history: list[tuple[str, str]] = []
        rounds = 0
        while rounds < rounds_allowed:
            rounds += 1
            said = self.examiner.invoke(messages, temperature=self.temperature)
            text = said.content if isinstance(said.content, str) else str(said.content)
            run.llm_call(
                self.name,
                "examiner",
                [{"role": roles[m.type], "content": m.content} for m in messages],
                output=text,
                temperature=self.temperature,
            )
            run.message("examiner", text)
            if self.stop in text:
                return rounds, "keyword", history
            history.append(("examiner", text))
            try:
                reply = agent.reply(text)
            except Exception as exc:  # the agent's failure ends the examination
                run.fail(f"the agent failed: {type(exc).__name__}: {exc}")
                return rounds, "agent_error", history
            run.message("agent", reply)
            history.append(("agent", reply))
            messages += [AIMessage(text), HumanMessage(reply)]
        return rounds, "max_rounds", history


def _check_points(
    run: Run,
    case: Case,
    history: list[tuple[str, str]],
    workdir: Path,
    timeout_s: float,
) -> tuple[int, int]:
    """Run each eval_code point's check in the agent's working directory, recorded as a call of
    ``examiner.eval_code``: how many passed, of how many."""
    passed = total = 0
    for i, point in enumerate(case.scoring_points):
        if point.eval_code is None:
            continue
        total += 1
        with run.tool_call(EVAL_TOOL, {"point": i, "code": point.eval_code}) as call:
            result = run_eval_code(point.eval_code, history, workdir, timeout_s)
            call.result(
                {
                    "point": i,
                    "passed": result.passed,
                    "error": result.error,
                    "network_isolated": result.network_isolated,
                }
            )
        passed += result.passed
    return passed, total
