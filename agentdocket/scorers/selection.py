"""Which scorers to run, as people name them, resolved to scorer values: one path for
``agentdocket score``, ``score --follow``, ``serve --score`` and the worker processes.

A :class:`Selection` holds what was asked for: scorer names (``NAME``, ``NAME=VERSION``, or a
prefix naming every scorer under it; none: the newest version of every scorer but the LLM
judges, and the judges too once a judge model is given), options for them (text from a
command line, or typed values from a TOML file), and the judge model. :func:`resolve_scorers`
turns it into :class:`~agentdocket.scorers.base.Scorer` values carrying everything they need:
options are part of their configuration and version, the judge model part of a judge's
configuration. Those values are what travels: to worker processes and to followers, never a
name looked up again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentdocket.errors import AgentdocketError
from agentdocket.scorers.base import Scorer, get, latest, matching, with_options

Part = Literal["scorer", "config", "judge"]


class SelectionError(AgentdocketError, ValueError):
    """A selection that names no scorer, an unknown one, or an option it does not take;
    ``part`` says which part of the selection (``scorer``, ``config``, ``judge``)."""

    def __init__(self, message: str, part: Part) -> None:
        super().__init__(message)
        self.part = part


@dataclass(frozen=True)
class Selection:
    """Scorers as named: ``names`` (``NAME``, ``NAME=VERSION`` or a prefix), ``options`` for
    them (``typed``: values from TOML, else text to parse), and the ``judge`` model (a
    ``PROVIDER:MODEL`` string or a chat model object)."""

    names: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    judge: Any = None
    typed: bool = False


def resolve_scorers(selection: Selection) -> list[Scorer]:
    """The scorers ``selection`` names, configured (see the module's documentation)."""
    judge = selection.judge
    chosen = [] if selection.names else latest(judges=judge is not None)
    for given in selection.names:
        name, sep, version = given.partition("=")
        for full in matching(name) or [name]:  # a prefix names those under it
            try:
                chosen.append(get(full, version if sep else None))
            except KeyError as exc:
                raise SelectionError(str(exc.args[0]), "scorer") from None
    if selection.options:
        if not selection.names:
            raise SelectionError("options need the scorers they are for: name them", "config")
        try:
            chosen = [with_options(s, selection.options, typed=selection.typed) for s in chosen]
        except (KeyError, TypeError, ValueError) as exc:
            raise SelectionError(str(exc.args[0]), "config") from None
    if judge is not None:  # the judge model is part of the configuration, so of the input hash
        chosen = [
            dataclasses.replace(s, config={**s.config, "model": judge}) if s.judge else s
            for s in chosen
        ]
    return chosen
