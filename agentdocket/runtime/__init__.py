"""Long-running services, with one lifecycle: ``serve``'s wiring
(:mod:`agentdocket.runtime.receiver`: one store opener per process, each service given the
stores it needs) and its transport, the OTLP receivers (:mod:`agentdocket.runtime.otlp_http`,
:mod:`agentdocket.runtime.otlp_grpc`, with :mod:`~agentdocket.runtime.feedback`,
:mod:`~agentdocket.runtime.metrics`, and the processes' :mod:`~agentdocket.runtime.handover`
and :mod:`~agentdocket.runtime.siblings`), the follower judging runs as they finish
(:mod:`agentdocket.runtime.follower`), the rollup refresher
(:mod:`agentdocket.runtime.refresher`), the pipeline sampler and partition keeper
(:mod:`agentdocket.runtime.sampler`).

Each service starts and stops; :class:`Services` starts a group in order and stops it in the
reverse order, also when one of them fails to start (those started are stopped again). The
commands parse options and hand the settings here: no service is wired by hand in the command
layer. A service reports through ``say`` (a line for the operator), never by printing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from agentdocket.errors import AgentdocketError

Say = Callable[[str], None]


class StartError(AgentdocketError):
    """A service could not start (a port held, a package missing, a store that cannot be
    opened); the message says which and why, for the operator."""


class Service(Protocol):
    def start(self) -> object: ...

    def stop(self) -> None: ...


class Services:
    """Services started in order and stopped in the reverse order."""

    def __init__(self) -> None:
        self.started: list[Service] = []

    def start(self, service: Service) -> None:
        """Start ``service``; if it fails, stop those started before it, then raise."""
        try:
            service.start()
        except BaseException:
            self.stop()
            raise
        self.started.append(service)

    def stop(self) -> None:
        """Stop every started service, the last started first; each is stopped even when one
        before it fails to stop (the first failure is raised afterwards)."""
        failure: BaseException | None = None
        while self.started:
            try:
                self.started.pop().stop()
            except BaseException as exc:
                failure = failure or exc
        if failure is not None:
            raise failure
