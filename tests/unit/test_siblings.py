"""The figures of ``serve --processes``: what one process answers for all of them, parsed back
by Prometheus's own parser."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from agentdocket.runtime.siblings import Figures, Siblings, merge


def _text(requests: float, rejected: dict[str, float], in_flight: float, spool: float) -> str:
    lines = [
        "# HELP agentdocket_requests_total Accepted export requests (HTTP and gRPC).",
        "# TYPE agentdocket_requests_total counter",
        f"agentdocket_requests_total {requests}",
        "# HELP agentdocket_requests_rejected_total Refused requests, by HTTP status.",
        "# TYPE agentdocket_requests_rejected_total counter",
        *(f'agentdocket_requests_rejected_total{{status="{s}"}} {n}' for s, n in rejected.items()),
        "# HELP agentdocket_requests_in_flight Requests being handled.",
        "# TYPE agentdocket_requests_in_flight gauge",
        f"agentdocket_requests_in_flight {in_flight}",
        "# HELP agentdocket_spool_bytes Bytes waiting in the spool.",
        "# TYPE agentdocket_spool_bytes gauge",
        f"agentdocket_spool_bytes {spool}",
    ]
    return "\n".join(lines) + "\n"


def _samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def _dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def test_counters_add_up_over_every_process_gauges_over_the_living_spool_is_read_once() -> None:
    own = _text(10, {"400": 1}, 2, 500)
    alive = Figures(os.getppid(), _text(7, {"400": 2, "503": 4}, 1, 500), alive=True)
    gone = Figures(123, _text(5, {}, 3, 999), alive=False)
    samples = _samples(merge(own, [alive, gone]))
    assert samples[("agentdocket_requests_total", ())] == 22  # a stopped one's count stays
    assert samples[("agentdocket_requests_rejected_total", (("status", "400"),))] == 3
    assert samples[("agentdocket_requests_rejected_total", (("status", "503"),))] == 4
    assert samples[("agentdocket_requests_in_flight", ())] == 3  # not the stopped one's 3
    assert samples[("agentdocket_spool_bytes", ())] == 500  # one directory, read once


def test_a_family_only_a_sibling_has_is_answered_too() -> None:
    """A follower runs in the first receiver alone: a scrape of another still shows it."""
    follower = (
        "# HELP agentdocket_follower_runs_judged_total Runs judged.\n"
        "# TYPE agentdocket_follower_runs_judged_total counter\n"
        "agentdocket_follower_runs_judged_total 12.0\n"
    )
    samples = _samples(merge(_text(1, {}, 0, 0), [Figures(os.getppid(), follower, True)]))
    assert samples[("agentdocket_follower_runs_judged_total", ())] == 12
    assert samples[("agentdocket_requests_total", ())] == 1


def test_each_process_reads_the_others_figures_not_its_own(tmp_path: Path) -> None:
    first, second = Siblings(tmp_path, pid=os.getpid()), Siblings(tmp_path, pid=os.getppid())
    gone = Siblings(tmp_path, pid=_dead_pid())
    first.publish(_text(3, {}, 0, 0).encode())
    second.publish(_text(4, {}, 1, 0).encode())
    gone.publish(_text(2, {}, 0, 0).encode())
    (tmp_path / "notes.prom.partial").write_text("half a file")  # never read
    assert {(f.pid, f.alive) for f in first.others()} == {(os.getppid(), True), (gone.pid, False)}
    assert {f.pid for f in second.others()} == {os.getpid(), gone.pid}
    # its own figures now (5), not as it last wrote them (3), and the others' (4 and 2)
    merged = _samples(first.merged(_text(5, {}, 0, 0).encode()))
    assert merged[("agentdocket_requests_total", ())] == 11
