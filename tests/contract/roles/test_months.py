"""The months role's contract, one abstract test case subclassed per backend."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime

from agentdocket.store import Store
from agentdocket.store.months import month_of
from tests.helpers.factory import run_events
from tests.helpers.roles import OnADatabase, OnCitus, OnPostgres, OnSqlite

MARCH = datetime(2025, 3, 5, 10, tzinfo=UTC)


class MonthsContract(OnADatabase):
    """Whole months of the log: which hold runs, what one holds, dropping one."""

    # the partitions a month's rows go to (events, runs, verdicts), where there are any
    partitions_per_month: int

    def test_a_month_holds_its_runs_until_it_is_dropped(self, store: Store) -> None:
        events = run_events(random.Random(50), start=MARCH)
        kept = run_events(random.Random(51))  # another month's
        store.append(events + kept)
        months, db = store.roles.months, store.recorder
        month = month_of(MARCH)
        with db.write() as conn:
            assert month in months.stored(conn) and month_of(kept[0].ts) in months.stored(conn)
            counted = months.count(conn, month, window_start=datetime.now(UTC))
            assert counted.rows["events"] == len(events) and counted.rows["runs"] == 1
            assert counted.newer_runs == 0 and not counted.stays
            assert months.datasets(conn, month) == {"ds": 1}  # the factory's runs' dataset
            newest = months.newest(conn, month)
            assert newest is not None
        assert len(months.partitions(month)) == self.partitions_per_month
        months.partition_ddl(lambda conn: months.drop(conn, month), *months.partitions(month))
        with db.write() as conn:
            assert month not in months.stored(conn)
        assert store.reader.events(events[0].trace_id) == []
        assert store.reader.events(kept[0].trace_id) != []

    def test_partitions_are_made_for_the_months_asked_once(self, store: Store) -> None:
        far = {date(2031, 1, 1), date(2031, 2, 1)}
        assert store.roles.months.ensure_partitions(far) == 2 * self.partitions_per_month
        assert store.roles.months.ensure_partitions(far) == 0
        assert store.roles.months.ensure_partitions(set()) == 0


class TestSqliteMonths(MonthsContract, OnSqlite):
    partitions_per_month = 0


class TestPostgresMonths(MonthsContract, OnPostgres):
    partitions_per_month = 3


class TestCitusMonths(MonthsContract, OnCitus):
    partitions_per_month = 3
