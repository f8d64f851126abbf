"""``agentdocket demo``: a scripted database-QA agent answering questions over its own concerts
database in three strategies, every step recorded through the tracer and exporter.

The demo is repeatable: its trace and span ids come from a seeded generator, so a second demo
into the same store records the same runs again, which the store keeps once (event ids derive
from them), and its report is the same. ``PRICES`` is its price file: the scripted model priced
as a small hosted model, so that the report shows what the runs cost."""

from __future__ import annotations

import random
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.id_generator import IdGenerator

from agentdocket.demo.agent import STRATEGIES, ConcertsAgent
from agentdocket.demo.database import build
from agentdocket.demo.questions import DATASET, DATASET_VERSION, QUESTIONS, dataset
from agentdocket.store import open_store
from agentdocket.tracer import DeliveryStats, configure, shutdown

__all__ = [
    "DATASET",
    "DATASET_VERSION",
    "PRICES",
    "QUESTIONS",
    "STRATEGIES",
    "DemoResult",
    "run_demo",
]

PRICES = Path(__file__).with_name("prices.toml")
SEED = 20261128


class _SeededIds(IdGenerator):
    """Trace and span ids from a seeded generator: the demo's runs get the same ids each time
    (its spans are made in the same order)."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)

    def generate_span_id(self) -> int:
        return self.random.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self.random.getrandbits(128) or 1


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
        provider = TracerProvider(id_generator=_SeededIds(SEED))
        configured = configure(url, spool_dir=spool_dir, set_global=False, provider=provider)
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
