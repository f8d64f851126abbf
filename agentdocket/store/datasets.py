"""Datasets and their cases in the store: immutable per (name, version)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from agentdocket.events import Case, Dataset
from agentdocket.store.errors import DatasetConflict, StoreError
from agentdocket.store.escaping import escape, escape_text
from agentdocket.store.recorder import Recorder
from agentdocket.store.redaction import Redactor
from agentdocket.store.rows import DatasetVersion, Run, typed


class Datasets:
    """Registering datasets and reading their cases."""

    def __init__(self, db: Recorder, redactor: Redactor) -> None:
        self.db = db
        self.redactor = redactor

    def register(self, dataset: Dataset) -> bool:
        """Store a dataset version. True if new; False if the identical version was there.

        Raises :class:`DatasetConflict` if that version exists with different content.
        """
        with self.db.write() as conn:
            return self.register_on(conn, dataset)

    def register_on(self, conn: Any, dataset: Dataset) -> bool:
        dataset = self.redactor.dataset(dataset)
        counts = Counter(c.case_id for c in dataset.cases)
        dupes = sorted(case_id for case_id, n in counts.items() if n > 1)
        if dupes:
            raise StoreError(f"dataset {dataset.name}: duplicate case ids {', '.join(dupes[:5])}")
        digest = dataset.content_hash()
        existing = self.db.read_on(
            conn,
            "SELECT content_hash FROM datasets WHERE name = ? AND version = ?",
            (escape_text(dataset.name), escape_text(dataset.version)),
        )
        if existing:
            if existing[0][0] == digest:
                return False
            stored = self._dataset_on(conn, dataset.name, dataset.version)
            raise DatasetConflict(
                f"dataset {dataset.name!r} version {dataset.version!r} already exists with "
                f"different cases ({first_difference(stored, dataset)}); datasets are "
                "immutable, register a new version"
            )
        self.db.execute(
            conn,
            "INSERT INTO datasets (name, version, description, content_hash, "
            "n_cases) VALUES (?, ?, ?, ?, ?)",
            (
                escape_text(dataset.name),
                escape_text(dataset.version),
                None if dataset.description is None else escape_text(dataset.description),
                digest,
                len(dataset.cases),
            ),
        )
        columns = (
            "dataset",
            "dataset_version",
            "case_id",
            "ordinal",
            "question_type",
            "group_id",
            "data",
        )
        rows = [
            (
                escape_text(dataset.name),
                escape_text(dataset.version),
                escape_text(c.case_id),
                i,
                None if c.question_type is None else escape_text(c.question_type),
                None if c.group is None else escape_text(c.group),
                self.db.to_db("data", escape(c.to_json())),
            )
            for i, c in enumerate(dataset.cases)
        ]
        self.db.merge(conn, "cases", columns, ("dataset", "dataset_version", "case_id"), rows, "")
        return True

    def versions(self) -> list[DatasetVersion]:
        """Every stored version of every dataset, by name, oldest version first."""
        sql = "SELECT * FROM datasets ORDER BY name, created_at, version"
        return [typed(DatasetVersion, r) for r in self.db.dicts(sql)]

    def latest_version(self, name: str) -> str | None:
        rows = self.db.read(
            "SELECT version FROM datasets WHERE name = ? "
            "ORDER BY created_at DESC, version DESC LIMIT 1",
            (name,),
        )
        return rows[0][0] if rows else None

    def get(self, name: str, version: str | None = None) -> Dataset:
        """A dataset version with its cases (default: the latest version)."""
        return self._read_dataset(self.db.read, name, version or self.latest_version(name))

    def _dataset_on(self, conn: Any, name: str, version: str | None) -> Dataset:
        """The stored version, read in ``conn``'s transaction (to say how a new one differs)."""
        return self._read_dataset(
            lambda sql, params: self.db.read_on(conn, sql, params), name, version
        )

    def _read_dataset(
        self,
        read: Callable[[str, Sequence[Any]], list[tuple[Any, ...]]],
        name: str,
        version: str | None,
    ) -> Dataset:
        meta = read(
            "SELECT description FROM datasets WHERE name = ? AND version = ?", (name, version)
        )
        if not meta:
            raise StoreError(f"no dataset {name!r}" + (f" version {version!r}" if version else ""))
        rows = read(
            "SELECT data FROM cases WHERE dataset = ? AND dataset_version = ? ORDER BY ordinal",
            (name, version),
        )
        cases = tuple(Case.from_json(self.db.from_db("data", r[0])) for r in rows)
        return Dataset(name, str(version), cases, self.db.from_db("description", meta[0][0]))

    def cases_for(self, runs: Iterable[Run]) -> dict[str, tuple[str, Case]]:
        """For each run naming a case: (dataset version, case), keyed by trace id.

        A run that names no dataset version gets the case from the latest version.
        """
        resolved: dict[tuple[str, str | None], str | None] = {}
        wanted: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
        for run in runs:
            if not (run["dataset"] and run["case_id"]):
                continue
            key = (run["dataset"], run["dataset_version"])
            if key not in resolved:
                resolved[key] = run["dataset_version"] or self.latest_version(run["dataset"])
            version = resolved[key]
            if version is not None:
                wanted[(run["dataset"], version)].append((run["case_id"], run["trace_id"]))
        out: dict[str, tuple[str, Case]] = {}
        for (dataset, version), pairs in wanted.items():
            found = self.cases(dataset, version, sorted({c for c, _ in pairs}))
            for case_id, trace_id in pairs:
                if case_id in found:
                    out[trace_id] = (version, found[case_id])
        return out

    def cases(self, dataset: str, version: str, case_ids: Sequence[str]) -> dict[str, Case]:
        """These cases of a dataset version, by id (those it has)."""
        sql = (
            "SELECT case_id, data FROM cases WHERE dataset = ? AND dataset_version = ? AND {among}"
        )
        rows = self.db.read_among(sql, "case_id", case_ids, [dataset, version])
        return {case_id: Case.from_json(self.db.from_db("data", data)) for case_id, data in rows}


def first_difference(stored: Dataset, given: Dataset) -> str:
    """Where two versions of a dataset first differ: a case one lacks, or a case's field."""
    if stored.description != given.description:
        return "the description differs"
    theirs = {c.case_id: c for c in stored.cases}
    for i, case in enumerate(given.cases):
        old = theirs.get(case.case_id)
        if old is None:
            return f"case {case.case_id!r} is new"
        new_json, old_json = case.to_json(), old.to_json()
        for key in new_json:
            if new_json[key] != old_json.get(key):
                return f"case {case.case_id!r}, field {key!r}, differs"
        if i < len(stored.cases) and stored.cases[i].case_id != case.case_id:
            return f"the cases are in another order from case {case.case_id!r}"
    missing = [c.case_id for c in stored.cases if c.case_id not in {x.case_id for x in given.cases}]
    if missing:
        return f"case {missing[0]!r} is missing"
    return "the cases differ"
