"""The dashboards read scorer names and detail keys from the scorers' declarations."""

from __future__ import annotations

import dataclasses
import re

import pytest

from agentdocket import dashboards, scorers
from agentdocket.dashboards import panels
from agentdocket.dashboards.declared import detail, family, scorer
from agentdocket.dashboards.measures import MEASURES
from agentdocket.dashboards.panels.common import measures


def test_a_name_or_key_no_scorer_declares_fails_naming_it() -> None:
    assert scorer("response.similarity") == "'response.similarity'"
    assert detail("response.similarity", "cosine") == "'cosine'"
    assert family("review.peer") == "'review.peer.%'"
    with pytest.raises(KeyError, match=r"no scorer named 'response\.likeness'"):
        scorer("response.likeness")
    with pytest.raises(KeyError, match=r"detail 'cosines' of scorer response\.similarity.*rougeL"):
        detail("response.similarity", "cosines")
    with pytest.raises(KeyError, match=r"scorer review\.peer\.information_synthesis"):
        detail("review.peer.*", "cosine")  # checked on every scorer of the family
    with pytest.raises(KeyError, match="no scorer is named nothing"):
        family("nothing")
    with pytest.raises(KeyError, match="no measure named cosine_mean"):
        measures("true", "cosine cosine_mean")


def test_a_plugin_version_without_declared_details_changes_nothing() -> None:
    before = dashboards.objects()
    plugin = dataclasses.replace(
        scorers.get("planner.suffix_match"), version="99", details={}, metrics={}
    )
    scorers.register(plugin)
    try:
        assert dashboards.objects() == before
    finally:
        scorers.unregister("planner.suffix_match", "99")


def test_the_panels_read_only_declared_measures() -> None:
    read = {
        m
        for spec in panels.PANELS
        for found in re.findall(r"measure IN \(([^)]*)\)", spec.sql)
        for m in re.findall(r"'(\w+)'", found)
    }
    assert read and read <= set(MEASURES)
