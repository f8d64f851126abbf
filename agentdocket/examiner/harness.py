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
no network (a fresh network namespace via ``unshare -rn`` where the system allows it) and of
the caller's environment only :data:`EVAL_ENV` and the names the case (``eval_env``) or the
caller adds. It is a hit when the code exits without an exception. Each check is recorded in
the run as a call of the tool ``examiner.eval_code``, with whether it ran without network; the
``examiner.points`` scorer reads them from there.

A case's data file is written only inside the working directory: a name that is absolute or
leads out (through ``..``) refuses the case before anything is written or recorded.
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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agentdocket.errors import AgentdocketError
from agentdocket.events import Case
from agentdocket.importers.common import ENV_NAME, inside
from agentdocket.scorers.judges.points import EVAL_TOOL  # the tool its checks are recorded as
from agentdocket.tracer.api import Run, Tracer

# What an eval_code process gets of the caller's environment, unless the case (``eval_env``) or
# the caller (``agentdocket examine --pass-env``) adds names: what Python, langchain-core and the
# programs a check may start need, never a credential (API keys, AGENTDOCKET_DATABASE_URL, cloud
# settings) nor a proxy (a check has no network). PATH, to find the programs a check starts;
# LANG, LC_ALL, LC_CTYPE, the locale: the encoding of files and pipes; TZ, local time; TMPDIR,
# where temporary files go; SYSTEMROOT, without which Python does not start on Windows. Not
# HOME: Python and langchain-core start without it (``~`` then comes from the password
# database), and a case that needs it can add it.
EVAL_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT")

_RUNNER = r"""
import json, sys
from langchain_core.messages import AIMessage, HumanMessage
data = json.load(sys.stdin)
kinds = {"examiner": AIMessage, "agent": HumanMessage}
chat_history = [kinds[role](content=content) for role, content in data["history"]]
code = compile(data["code"], "<eval_code>", "exec")
exec(code, {"chat_history": chat_history, "AIMessage": AIMessage, "HumanMessage": HumanMessage})
"""


class CaseRefused(AgentdocketError, ValueError):
    """A case the harness will not examine: a data file named outside the working directory,
    or an ``eval_env`` that is not a list of variable names. The message names the case and
    the entry."""


class IsolationUnavailable(AgentdocketError, RuntimeError):
    """Network isolation was required and this system cannot give it; the message says why."""


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


def network_isolation() -> tuple[list[str], str | None]:
    """The command prefix that runs a program without network (``unshare -rn``: a new user and
    network namespace), or an empty prefix and why there is none here."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return [], "`unshare` is not on the PATH"
    probe = subprocess.run([unshare, "-rn", "true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        said = probe.stderr.strip().splitlines()
        return [], f"`unshare -rn` fails here ({said[-1] if said else f'exit {probe.returncode}'})"
    return [unshare, "-rn"], None


def require_network_isolation() -> None:
    """:class:`IsolationUnavailable`, saying why, unless eval_code can run without network."""
    prefix, why = network_isolation()
    if not prefix:
        raise IsolationUnavailable(
            f"network isolation for eval_code is required, and unavailable: {why}; "
            "nothing was examined"
        )


def eval_environment(names: Iterable[str] = ()) -> dict[str, str]:
    """The environment of an eval_code process: the caller's values of :data:`EVAL_ENV` and of
    ``names``, those it has."""
    return {k: os.environ[k] for k in (*EVAL_ENV, *names) if k in os.environ}


def run_eval_code(
    code: str,
    history: list[tuple[str, str]],
    workdir: Path,
    timeout_s: float = 30.0,
    env_names: Iterable[str] = (),
) -> EvalResult:
    """Run one ``eval_code`` on the chat history in ``workdir``, with the environment
    :func:`eval_environment` gives for ``env_names``: passed when it exits 0."""
    prefix, _ = network_isolation()
    env = eval_environment(env_names)
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
    network_isolated: bool | None  # every check ran without network (None: no check ran)


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
    pass_env: Sequence[str] = (),
    require_isolation: bool = False,
) -> Examination:
    """Converse, record, check the eval_code points (seeing the environment variables
    :data:`EVAL_ENV`, the case's ``eval_env`` and ``pass_env``). Returns what happened. A case
    whose data files or ``eval_env`` are refused (:class:`CaseRefused`), or a required network
    isolation that is unavailable (:class:`IsolationUnavailable`), stops before anything is
    written or recorded."""
    if require_isolation:
        require_network_isolation()
    attributes = case.attributes
    env_names = [*case_env(case), *pass_env]
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
        files = [
            (inside(workdir, name, f"case {case.case_id}: data_files", CaseRefused), data)
            for name, data in (attributes.get("data_files") or {}).items()
        ]  # every name checked before anything is written
        for target, data in files:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(base64.b64decode(data))
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
            passed, total, isolated = _check_points(
                run, case, history, workdir, eval_timeout_s, env_names
            )
            trace_id = run.trace_id
    return Examination(case.case_id, trace_id, rounds, stopped, passed, total, isolated)


def case_env(case: Case) -> list[str]:
    """The environment variable names a case's ``eval_env`` adds for its checks, or
    :class:`CaseRefused` naming the case and the entry."""
    names = case.attributes.get("eval_env") or []
    if not isinstance(names, list):
        raise CaseRefused(f"case {case.case_id}: eval_env must be a list of variable names")
    for i, name in enumerate(names):
        if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
            raise CaseRefused(
                f"case {case.case_id}: eval_env[{i}]: {name!r} is not a variable name"
            )
    return names


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
    env_names: Sequence[str],
) -> tuple[int, int, bool | None]:
    """Run each eval_code point's check in the agent's working directory, recorded as a call of
    ``examiner.eval_code``: how many passed, of how many, and whether all ran without network
    (None: none ran)."""
    passed = total = 0
    isolated: bool | None = None
    for i, point in enumerate(case.scoring_points):
        if point.eval_code is None:
            continue
        total += 1
        with run.tool_call(EVAL_TOOL, {"point": i, "code": point.eval_code}) as call:
            result = run_eval_code(point.eval_code, history, workdir, timeout_s, env_names)
            call.result(
                {
                    "point": i,
                    "passed": result.passed,
                    "error": result.error,
                    "network_isolated": result.network_isolated,
                }
            )
        passed += result.passed
        isolated = result.network_isolated and (isolated is None or isolated)
    return passed, total, isolated
