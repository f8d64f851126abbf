"""Group commit (agentdocket.ingest.group_commit): requests queued together are delivered as
one group by whoever takes the lane first; a trace always goes to the same lane."""

from __future__ import annotations

from agentdocket.events import Event, Response
from agentdocket.ingest.group_commit import Delivered, Lane, Request, lane_of, split, worst


def _event(trace: str, seq: int = 0) -> Event:
    return Event.create(trace_id=trace, span_id="5" * 16, seq=seq, payload=Response(text="x"))


def test_requests_queued_together_are_delivered_as_one_group() -> None:
    lane = Lane(0)
    requests = [Request([_event(f"{i + 1:032x}")], "receiver") for i in range(3)]
    for r in requests:
        lane.submit(r)
    groups: list[list[Request]] = []

    def commit(on: Lane, group: list[Request]) -> Delivered:
        assert on is lane
        groups.append(group)
        return "stored"

    # the second caller takes the lane first: it delivers all three
    assert lane.settle(requests[1], commit) == "stored"
    assert groups == [requests]
    # the others find theirs settled, and nothing is delivered again
    assert lane.settle(requests[0], commit) == "stored"
    assert lane.settle(requests[2], commit) == "stored"
    assert len(groups) == 1
    # a request submitted later makes a group of its own
    later = Request([_event("f" * 32)], "receiver")
    lane.submit(later)
    assert lane.settle(later, commit) == "stored"
    assert groups[1] == [later]


def test_a_group_shares_its_outcome() -> None:
    lane = Lane(0)
    a, b = Request([], "x"), Request([], "y")
    lane.submit(a)
    lane.submit(b)
    assert lane.settle(a, lambda _lane, _group: "spooled") == "spooled"
    assert b.outcome == "spooled"


def test_a_trace_always_takes_the_same_lane_and_lanes_share_the_work() -> None:
    traces = [f"{i + 1:032x}" for i in range(1000)]
    events = [_event(t, seq) for t in traces for seq in range(3)]
    parts = split(events, 4)
    assert sorted(parts) == [0, 1, 2, 3]
    assert sum(len(p) for p in parts.values()) == len(events)
    for lane, part in parts.items():
        assert {lane_of(e.trace_id, 4) for e in part} == {lane}
        assert 150 < len({e.trace_id for e in part}) < 350  # roughly a quarter each
        assert part == [e for e in events if lane_of(e.trace_id, 4) == lane]  # in order
    assert split(events, 1) == {0: events}
    assert split([], 3) == {}
    # fixed across processes: CRC-32 of the id, not Python's salted hash
    crc = {"a": 0xE8B7BE43, "b": 0x71BEEFF9, "c": 0x06B9DF6F}  # zlib.crc32 of each
    assert [lane_of(t, 3) for t in crc] == [c % 3 for c in crc.values()]


def test_a_request_is_as_safe_as_its_least_safe_part() -> None:
    assert worst(["stored", "stored"]) == "stored"
    assert worst(["stored", "spooled"]) == "spooled"
    assert worst(["spooled", "dropped", "stored"]) == "dropped"
