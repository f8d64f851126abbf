"""Durable delivery: the database goes away and comes back, a process dies with its spool, the
spool fills up, the span queue overflows. Every span arrives exactly once, or is counted."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from agentdocket.events import Event
from agentdocket.ingest.mapping import spans_to_events
from agentdocket.ingest.spool import HEADER, Spool
from agentdocket.store import open_store
from agentdocket.store.backends import backend_of
from agentdocket.tracer import StoreSpanExporter
from tests.helpers.netproxy import TcpProxy
from tests.helpers.recorder import Recorder, record_runs


def _stored(url: str) -> list[dict[str, Any]]:
    """Every row of the event log."""
    with open_store(url) as store:
        return store.reader.rows("events", "trace_id, seq, event_id")


def _expected(recorder: Recorder) -> set[str]:
    return {str(e.event_id) for e in spans_to_events(recorder.memory.get_finished_spans())}


EV, SPANS = 6, 4  # events and spans of one run recorded by _record


def _closed_port_url(url: str) -> str:
    proxy = TcpProxy("127.0.0.1", 1)  # only to find a free port; nothing listens there
    return make_url(url).set(port=proxy.port).render_as_string(hide_password=False)


def test_outage_and_recovery_deliver_every_event_exactly_once(pg_url: str, tmp_path: Path) -> None:
    target = make_url(pg_url)
    proxy = TcpProxy(target.host or "127.0.0.1", target.port or 5432).start()
    via_proxy = target.set(port=proxy.port).render_as_string(hide_password=False)
    r = Recorder(via_proxy, tmp_path / "spool", retry_initial_s=0.01, retry_max_s=0.01)
    try:
        record_runs(r, 5, "before")
        r.flush()
        assert r.exporter.stats.delivered == 5 * EV and r.exporter.stats.spooled == 0

        proxy.stop()  # connections cut, new ones refused
        record_runs(r, 7, "during")  # the agent carries on; nothing raises
        r.flush()
        spooled = r.exporter.stats.spooled
        assert spooled == 7 * EV and r.exporter.stats.failures >= 1
        assert len(_stored(pg_url)) == 5 * EV  # not there yet, but on disk
        assert r.exporter.spool.pending()

        proxy.start()
        record_runs(r, 3, "after")
        r.flush()  # replays the spool first, then the new batch
        stored = _stored(pg_url)
        ids = [str(e["event_id"]) for e in stored]
        assert len(ids) == len(set(ids)) == 15 * EV
        assert set(ids) == _expected(r)
        assert r.exporter.stats.replayed == spooled
        assert not r.exporter.spool.pending()
        with open_store(pg_url) as store:
            runs = store.reader.list_runs(limit=None)
        assert len(runs) == 15 and all(run["n_events"] == EV for run in runs)
    finally:
        r.close()
        proxy.stop()


CHILD = textwrap.dedent(
    """
    import json, sys, time
    from agentdocket.ingest.mapping import spans_to_events
    from tests.helpers.recorder import Recorder, record_runs

    r = Recorder(sys.argv[1], sys.argv[2], retry_initial_s=60, replay_on_start=False)
    record_runs(r, 6, "child")
    r.flush()
    ids = sorted(str(e.event_id) for e in spans_to_events(r.memory.get_finished_spans()))
    print(json.dumps({"spooled": r.exporter.stats.spooled, "ids": ids}), flush=True)
    time.sleep(600)
    """
)


def test_the_spool_of_a_killed_process_is_delivered_at_the_next_start(
    pg_url: str, tmp_path: Path
) -> None:
    spool = tmp_path / "spool"
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, _closed_port_url(pg_url), str(spool)],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert child.stdout is not None
    report = json.loads(child.stdout.readline())
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert report["spooled"] == len(report["ids"]) == 6 * EV
    assert _stored(pg_url) == []

    exporter = StoreSpanExporter(pg_url, spool_dir=spool, replay_on_start=False)
    assert exporter.spool.pending()
    assert exporter.flush_spool()  # what start-up does, on a background thread
    assert sorted(str(e["event_id"]) for e in _stored(pg_url)) == report["ids"]
    assert not any(spool.iterdir())  # the dead process's file is gone
    exporter.shutdown()
    # and a start-up replay in the background finds nothing more to do
    again = StoreSpanExporter(pg_url, spool_dir=spool)
    again.shutdown()
    assert len(_stored(pg_url)) == 6 * EV


def test_a_crash_between_delivery_and_cleanup_duplicates_nothing(url: str, tmp_path: Path) -> None:
    r = Recorder(_unreachable(url, tmp_path), tmp_path / "spool", retry_initial_s=60)
    record_runs(r, 4, "x")
    r.flush()
    r.close()
    (spooled,) = list((tmp_path / "spool").iterdir())
    kept = tmp_path / "copy.spool"
    shutil.copy(spooled, kept)

    first = Spool(tmp_path / "spool")
    with open_store(url) as store:
        assert first.replay(lambda b, source: store.append(b), _no_dead_letters) == 4 * EV
        # the file comes back, as if the process died before removing it
        shutil.copy(kept, spooled)
        results: list[Any] = []
        again = Spool(tmp_path / "spool")
        assert (
            again.replay(lambda b, _: results.append(store.append(b)), _no_dead_letters) == 4 * EV
        )
        assert (
            sum(x.inserted for x in results) == 0 and sum(x.duplicates for x in results) == 4 * EV
        )
        assert store.reader.counts()["events"] == 4 * EV


def _unreachable(url: str, tmp_path: Path) -> str:
    if backend_of(url).embedded:
        return _blocked_sqlite(tmp_path)
    return _closed_port_url(url)


def _blocked_sqlite(tmp_path: Path) -> str:
    """An SQLite URL that cannot be opened until ``tmp_path / "blocked"`` (a file standing where
    its directory should be) is replaced by a directory."""
    (tmp_path / "blocked").write_text("not a directory")
    return f"sqlite:///{tmp_path / 'blocked' / 'agentdocket.db'}"


def _unblock(tmp_path: Path) -> None:
    (tmp_path / "blocked").unlink()
    (tmp_path / "blocked").mkdir()


def test_a_full_spool_drops_spans_and_reports_how_many(tmp_path: Path) -> None:
    down = _blocked_sqlite(tmp_path)
    r = Recorder(down, tmp_path / "spool", spool_max_bytes=6_000, retry_initial_s=60)
    for i in range(10):
        record_runs(r, 1, f"r{i}")
        r.flush()  # one batch per run
    stats = r.exporter.stats
    dropped = stats.dropped["spool_full"]
    assert dropped > 0 and stats.spooled > 0
    assert stats.spooled // EV + dropped // SPANS == 10  # SPANS spans (EV events) per run
    assert r.exporter.spool.size() <= 6_000
    r.close()

    # delivery resumes (same spool directory, database now there): spooled runs arrive and
    # the drop count is recorded as an event of its own, outside any run
    _unblock(tmp_path)
    back = StoreSpanExporter(down, spool_dir=tmp_path / "spool", replay_on_start=False)
    back.sink.dropped("spool_full", dropped)  # what the previous process knew (in memory)
    assert back.flush_spool()
    back.shutdown()
    (report,) = [e for e in _stored(down) if e["kind"] == "telemetry.dropped"]
    assert report["payload"]["count"] == dropped
    assert report["payload"]["reason"] == "spool_full"
    with open_store(down) as store:
        assert store.reader.counts()["runs"] == stats.spooled // EV


def test_span_queue_overflow_is_counted_and_reported(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agentdocket.db'}"
    exporter = StoreSpanExporter(url, spool_dir=tmp_path / "spool")
    from opentelemetry.sdk.trace import TracerProvider

    from agentdocket.tracer import CountingBatchSpanProcessor, Tracer

    provider = TracerProvider()
    processor = CountingBatchSpanProcessor(
        exporter, max_queue_size=16, max_export_batch_size=16, schedule_delay_millis=60_000
    )
    provider.add_span_processor(processor)
    tracer = Tracer(provider)
    with tracer.run("burst") as run:
        for i in range(200):
            run.message("user", str(i))
    processor.force_flush()
    provider.shutdown()
    dropped = exporter.queue_dropped
    assert dropped > 0
    events = _stored(url)
    stored_spans = {e["span_id"] for e in events if e["kind"] != "telemetry.dropped"}
    reports = [e["payload"] for e in events if e["kind"] == "telemetry.dropped"]
    assert {r["reason"] for r in reports} == {"queue_full"}
    assert sum(r["count"] for r in reports) == dropped
    assert len(stored_spans) + dropped == 201


def test_a_torn_last_record_is_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    r = Recorder(_blocked_sqlite(tmp_path), tmp_path / "spool", retry_initial_s=60)
    for i in range(3):
        record_runs(r, 1, f"t{i}")
        r.flush()
    r.close()
    (path,) = list((tmp_path / "spool").iterdir())
    data = path.read_bytes()
    _, length, _ = HEADER.unpack(data[: HEADER.size])
    first = HEADER.size + length
    path.write_bytes(data[: len(data) - 10])  # the third record loses its tail
    batches: list[list[Event]] = []
    Spool(tmp_path / "spool").replay(lambda b, _: batches.append(b), _no_dead_letters)
    assert first < len(data) and sum(len(b) for b in batches) == 2 * EV
    assert "incomplete record" in caplog.text


def test_an_unwritable_spool_counts_drops_and_never_raises(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("a file where the spool directory should be")
    r = Recorder(_blocked_sqlite(tmp_path), tmp_path / "file" / "spool", retry_initial_s=60)
    record_runs(r, 2, "lost")
    r.flush()
    r.close()
    assert r.exporter.stats.dropped == {"spool_error": 2 * SPANS}
    assert r.exporter.stats.spooled == 0


def _no_dead_letters(letters: list[Any]) -> None:
    raise AssertionError(f"a spool record did not decode: {letters}")


def test_a_spool_record_that_does_not_decode_is_quarantined_and_replay_goes_on(
    tmp_path: Path,
) -> None:
    """A record whose checksum holds but whose content is not events (written by a newer
    version, say) becomes a dead letter; the records after it are still delivered."""
    import zlib

    from agentdocket.ingest.spool import MAGIC
    from tests.helpers.factory import many_runs

    spool = Spool(tmp_path / "spool")
    batch = many_runs(1)
    assert spool.append(batch)
    body = b'[{"not": "an event"}]'
    record = HEADER.pack(MAGIC, len(body), zlib.crc32(body)) + body
    with spool.path.open("ab") as fh:
        fh.write(record)
    spool._own_bytes += len(record)
    assert spool.append(batch)
    delivered: list[Any] = []
    quarantined: list[Any] = []
    assert spool.replay(lambda b, _: delivered.append(b), quarantined.extend) == 2 * len(batch)
    [letter] = quarantined
    assert letter.raw == body.decode() and "undecodable spool record" in letter.error
