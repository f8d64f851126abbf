"""Following live traffic: `score --follow`'s loop, and what it shares with `serve --score`."""

from __future__ import annotations

import signal
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from agentdocket.commands.common import err, open_from

if TYPE_CHECKING:
    from agentdocket.follow.config import FollowConfig

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def follow_config(
    config_file: Path | None,
    names: Sequence[str],
    *,
    agents: Sequence[str] = (),
    datasets: Sequence[str] = (),
    judge: str | None = None,
    options: Mapping[str, str] | None = None,
) -> FollowConfig:
    """The config file, or one made of the options (default: the newest version of every
    scorer that judges runs one by one, LLM judges only with --judge)."""
    from agentdocket import scorers
    from agentdocket.follow.config import from_options, load

    if config_file is not None:
        if names or agents or datasets or judge or options:
            raise click.UsageError(
                "--config FILE gives the scorers, their options and filters: drop --scorer, "
                "--config KEY=VALUE, --agent, --dataset and --judge, or put them in the file"
            )
        return load(config_file)  # a ConfigFileError: the command line says it
    if not names:
        names = [s.name for s in scorers.latest(judges=judge is not None) if s.scope != "group"]
    return from_options(names, agents=agents, datasets=datasets, judge=judge, options=options)


def follow_until_stopped(
    ctx: click.Context, config: FollowConfig, metrics_host: str, metrics_port: int | None
) -> None:
    """`score --follow`: follow in this process until SIGTERM or SIGINT
    (:func:`agentdocket.runtime.follower.follow`)."""
    from agentdocket.runtime.follower import follow

    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in STOP_SIGNALS}
    metrics = (metrics_host, metrics_port) if metrics_port else None
    try:
        with open_from(ctx, create=True) as store:
            follower = follow(store, config, stop, err.print, metrics=metrics)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    added = sum(follower.stats.added.values())
    err.print(
        f"agentdocket: stopped; {follower.stats.runs_seen} finished runs followed, "
        f"{added} new verdicts, cursor {follower.stats.position}"
    )
