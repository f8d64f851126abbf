"""``agentdocket demo``: a scripted database-QA agent answering questions over its own concerts
database in three strategies, every step recorded through the tracer and exporter."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agentdocket.demo.agent import STRATEGIES, ConcertsAgent
from agentdocket.demo.database import build
from agentdocket.demo.questions import DATASET, DATASET_VERSION, QUESTIONS, dataset
from agentdocket.store import open_store
from agentdocket.tracer import DeliveryStats, configure, shutdown

__all__ = ["DATASET", "DATASET_VERSION", "QUESTIONS", "STRATEGIES", "DemoResult", "run_demo"]


@dataclass
class DemoResult:
    trace_ids: list[str] = field(default_factory=list)
    stats: DeliveryStats = field(default_factory=DeliveryStats)
    database: Path | None = None
    spool_dir: Path | None = None


def run_demo(
    url: str,
    *,
    concerts_db: Path | None = None,
    spool_dir: Path | None = None,
    progress: Callable[[str, str, str], None] | None = None,
) -> DemoResult:
    """Record one run per question and strategy into the store at ``url``.

    The concerts database is built at ``concerts_db`` (default: a temporary file, removed
    afterwards). ``progress(case_id, strategy, answer)`` is called after each run.
    """
    with tempfile.TemporaryDirectory(prefix="agentdocket-demo-") as tmp:
        db = build(concerts_db or Path(tmp) / "concerts.db")
        with sqlite3.connect(db) as conn:
            cases = dataset(conn)
        with open_store(url) as store:
            store.datasets.register(cases)
        configured = configure(url, spool_dir=spool_dir, set_global=False)
        result = DemoResult(database=concerts_db, spool_dir=configured.exporter.spool.directory)
        agent = ConcertsAgent(db, configured.tracer)
        try:
            for strategy in STRATEGIES:
                for question in QUESTIONS:
                    trace_id, answer = agent.answer(question, strategy)
                    if trace_id is not None:
                        result.trace_ids.append(trace_id)
                    if progress is not None:
                        progress(question.case_id, strategy, answer)
        finally:
            agent.close()
            configured.flush()
            result.stats = configured.stats
            shutdown()
        return result
