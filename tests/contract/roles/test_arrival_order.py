"""The arrival order role's contract, one abstract test case subclassed per backend."""

from __future__ import annotations

import random

from agentdocket.store import Store
from tests.helpers.factory import run_events
from tests.helpers.roles import OnADatabase, OnCitus, OnPostgres, OnSqlite


class ArrivalOrderContract(OnADatabase):
    """Events read in the order their transactions committed; runs claimed for one key."""

    # whether a run another session claimed is refused (where several processes write at
    # once); where one writes at a time, every claim holds
    exclusive_claims: bool

    def _arrived(self, store: Store) -> list[tuple[int, int, str]]:
        order = store.roles.arrivals
        tx, columns = order.arrival_order()
        return [
            (int(t), int(p), str(trace))
            for t, p, trace in store.recorder.read(
                f"SELECT {tx}, position, trace_id FROM events WHERE {order.readable()} "
                f"ORDER BY {', '.join(columns)}"
            )
        ]

    def test_events_are_read_after_a_position_in_commit_order(self, store: Store) -> None:
        rng = random.Random(40)
        first, second = run_events(rng), run_events(rng)
        store.append(first)
        store.append(second)
        arrived = self._arrived(store)
        assert [t for _, _, t in arrived] == [first[0].trace_id] * len(first) + [
            second[0].trace_id
        ] * len(second)
        order = store.roles.arrivals
        tx, position, _ = arrived[len(first) - 1]  # the first run's last event
        after, params = order.arrived_after(tx, position)
        by, more = order.arrived_by(tx, position, "e")
        count = "SELECT count(*) FROM events e WHERE "
        assert store.recorder.read(count + after, params) == [(len(second),)]
        assert store.recorder.read(count + by, more) == [(len(first),)]

    def test_a_claim_holds_until_released(self, store: Store, other: Store) -> None:
        mine, theirs = store.roles.arrivals, other.roles.arrivals
        assert mine.claim_runs("f", ["t1", "t2"]) == ["t1", "t2"]
        expected = ["t3"] if self.exclusive_claims else ["t1", "t3"]
        assert theirs.claim_runs("f", ["t1", "t3"]) == expected
        assert theirs.claim_runs("g", ["t1"]) == ["t1"]  # another key
        mine.release_runs("f", ["t1", "t2"])
        assert theirs.claim_runs("f", ["t2"]) == ["t2"]


class TestSqliteArrivalOrder(ArrivalOrderContract, OnSqlite):
    exclusive_claims = False


class TestPostgresArrivalOrder(ArrivalOrderContract, OnPostgres):
    exclusive_claims = True


class TestCitusArrivalOrder(ArrivalOrderContract, OnCitus):
    exclusive_claims = True
