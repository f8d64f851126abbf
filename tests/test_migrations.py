"""Schema changes go through Alembic, up and down, on both databases."""

from __future__ import annotations

import sqlalchemy as sa

from agentdocket.store import open_store
from agentdocket.store.config import parse_url
from agentdocket.store.migrate import current_revision, downgrade, head_revision, upgrade

TABLES = {"events", "runs", "verdicts", "judge_calls", "datasets", "cases"}
VIEWS = {"steps", "verdicts_latest"}


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
    assert _objects(bare_url) == (TABLES, VIEWS)
    downgrade(bare_url, "base")
    assert current_revision(bare_url) is None
    assert _objects(bare_url) == (set(), set())
    upgrade(bare_url)
    with open_store(bare_url) as store:
        assert store.counts() == dict.fromkeys(
            ("events", "runs", "steps", "verdicts", "judge_calls", "datasets", "cases"), 0
        )
