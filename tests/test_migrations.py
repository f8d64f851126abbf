"""Schema changes go through Alembic, up and down, on both databases."""

from __future__ import annotations

import sqlalchemy as sa

from agentdocket.store import open_store
from agentdocket.store.config import parse_url
from agentdocket.store.migrate import current_revision, downgrade, head_revision, upgrade

TABLES = {"events", "runs", "verdicts", "judge_calls", "datasets", "cases"}
VIEWS = {"steps", "verdicts_latest"}
DASHBOARD_VIEWS = {  # PostgreSQL only (migration 0004)
    "dashboard_runs",
    "dashboard_verdicts",
    "dashboard_scorer_versions",
    "dashboard_run_tools",
    "dashboard_tool_use",
    "dashboard_similarity",
    "dashboard_reference",
    "dashboard_peer_review",
    "dashboard_peer_decisions",
    "dashboard_grammar",
}


def _objects(url: str) -> tuple[set[str], set[str]]:
    engine = sa.create_engine(parse_url(url))
    try:
        insp = sa.inspect(engine)
        return set(insp.get_table_names()) - {"alembic_version"}, set(insp.get_view_names())
    finally:
        engine.dispose()


def test_up_to_head_down_to_base_and_up_again(bare_url: str) -> None:
    assert current_revision(bare_url) is None
    upgrade(bare_url)
    assert current_revision(bare_url) == head_revision()
    postgres = parse_url(bare_url).get_backend_name() == "postgresql"
    assert _objects(bare_url) == (TABLES, VIEWS | (DASHBOARD_VIEWS if postgres else set()))
    downgrade(bare_url, "0003")
    assert _objects(bare_url) == (TABLES, VIEWS)
    downgrade(bare_url, "base")
    assert current_revision(bare_url) is None
    assert _objects(bare_url) == (set(), set())
    upgrade(bare_url)
    with open_store(bare_url) as store:
        assert store.counts() == dict.fromkeys(
            ("events", "runs", "steps", "verdicts", "judge_calls", "datasets", "cases"), 0
        )
