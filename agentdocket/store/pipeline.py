"""Pipeline samples: receivers' and followers' state, inserted now and then (migration 0009)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime

from agentdocket.store.recorder import Recorder


@dataclass(frozen=True)
class PipelineSample:
    """One process's spool and counts at one time (counts since the process started)."""

    at: datetime
    process: str
    spool_bytes: int
    spool_files: int
    spool_oldest_s: float | None
    spans_received: int
    events_stored: int
    events_spooled: int
    events_dead_lettered: int
    spans_dropped: int


@dataclass(frozen=True)
class ScoringSample:
    """One follower's progress at one time (counts since the process started; the lag over
    the interval since its previous sample)."""

    at: datetime
    follower: str
    process: str
    runs_judged: int
    verdicts: int
    errors: int
    lag_p50_s: float | None
    lag_p95_s: float | None
    lag_max_s: float | None
    behind_runs: int
    behind_events: int
    deferred: int


class PipelineSamples:
    """Inserts and reads pipeline samples."""

    def __init__(self, db: Recorder) -> None:
        self.db = db

    def record(self, sample: PipelineSample | ScoringSample) -> None:
        values = asdict(sample)
        values["at"] = self.db.to_db("at", sample.at)
        table = "pipeline_samples" if isinstance(sample, PipelineSample) else "scoring_samples"
        with self.db.write() as conn:
            self.db.execute(
                conn,
                f"INSERT INTO {table} ({', '.join(values)}) "
                f"VALUES ({', '.join('?' * len(values))})",
                list(values.values()),
            )

    def latest(self, table: str = "pipeline_samples") -> list[dict[str, object]]:
        """Each process's latest sample (of ``pipeline_samples`` or ``scoring_samples``)."""
        if table not in ("pipeline_samples", "scoring_samples"):
            raise ValueError(f"no samples table {table!r}")
        return list(
            self.db.dicts(
                f"SELECT s.* FROM {table} s WHERE NOT EXISTS (SELECT 1 FROM "
                f"{table} n WHERE n.process = s.process AND n.at > s.at) ORDER BY process"
            )
        )
