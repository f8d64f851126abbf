"""A durable local spool for events the database could not take yet.

One append-only file per process (``<time>-<host>-<pid>-<random>.spool``), held under an
exclusive ``flock`` while the process lives. Each record is one batch: a header (magic, length,
CRC-32) and the batch's events as JSON; every append is ``fsync``'d before it counts as spooled.
A torn last record (the process died mid-write) fails its length or CRC check and is skipped.

Replay delivers records in order: first the files of processes that are gone (their lock is
free), oldest first, then this process's own file. Delivery is idempotent (event ids are
deterministic), so a crash between delivering and removing a file duplicates nothing. A record
that cannot be decoded (written by a newer agentdocket, say) never blocks the rest: it is
handed to ``quarantine`` as a dead letter, and replay goes on. Records the database refuses
are the store's to isolate (:meth:`agentdocket.store.Store.append`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import struct
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from agentdocket.events import Event, PayloadError, event_from_json, event_to_json
from agentdocket.store.dead_letters import DeadLetter
from agentdocket.store.redaction import Redactor

log = logging.getLogger("agentdocket.tracer")

MAGIC = b"ADS1"
HEADER = struct.Struct(">4sII")  # magic, payload length, crc32
SUFFIX = ".spool"
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
REPLAY_CHUNK = 5_000  # events handed to the store per append when replaying

Deliver = Callable[[list[Event], str], object]  # (events, source)
Quarantine = Callable[[list[DeadLetter]], object]


def _encode(events: list[Event]) -> bytes:
    """A batch as JSON. orjson takes all but a lone surrogate or an integer past 64 bits;
    the standard library writes those too (as escapes and digits) and reads them back."""
    objects = [event_to_json(e) for e in events]
    try:
        return orjson.dumps(objects)
    except TypeError:
        return json.dumps(objects, ensure_ascii=True).encode()


def _decode(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return json.loads(body)


class Spool:
    """The spool directory, and this process's file in it."""

    def __init__(
        self,
        directory: Path,
        max_bytes: int = DEFAULT_MAX_BYTES,
        redactor: Redactor | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        # Secrets never reach the disk either (AGENTDOCKET_REDACT's rules by default).
        self.redactor = redactor if redactor is not None else Redactor.from_env()
        self._lock = threading.Lock()
        self._new_file()

    def _new_file(self) -> None:
        """This process's own file (not created until the first write)."""
        name = f"{time.time_ns():020d}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.path = self.directory / (name + SUFFIX)
        self._fd: int | None = None
        self._own_bytes = 0
        self._first_write: float | None = None  # when this file got its first record
        self._pid = os.getpid()

    # --- writing ------------------------------------------------------------------------------

    def append(self, events: list[Event]) -> bool:
        """Write a batch durably. False (nothing written) when the spool would pass its maximum
        size; raises ``OSError`` when the file cannot be written."""
        events = self.redactor.events(events)
        body = _encode(events)
        record = HEADER.pack(MAGIC, len(body), zlib.crc32(body)) + body
        with self._lock:
            if self._pid != os.getpid():  # forked: the child gets a file of its own
                self._new_file()
            if self.size() + len(record) > self.max_bytes:
                return False
            fd = self._open_own()
            start = self._own_bytes
            try:
                view = memoryview(record)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            except OSError:
                os.ftruncate(fd, start)  # never leave half a record behind
                raise
            self._own_bytes = start + len(record)
            if self._first_write is None:
                self._first_write = time.time()
            return True

    def _open_own(self) -> int:
        if self._fd is None:
            self.directory.mkdir(parents=True, exist_ok=True)  # created when first needed
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            _fsync_dir(self.directory)
            self._fd = fd
        return self._fd

    # --- state --------------------------------------------------------------------------------

    def files(self) -> list[Path]:
        """Spool files in the directory, oldest first (this process's included)."""
        try:
            return sorted(p for p in self.directory.iterdir() if p.name.endswith(SUFFIX))
        except OSError:  # not created yet, or not readable: nothing to replay from it
            return []

    def size(self) -> int:
        """Bytes spooled in the directory, by every process."""
        total = 0
        for path in self.files():
            if path == self.path:
                total += self._own_bytes
            else:
                with contextlib.suppress(FileNotFoundError):
                    total += path.stat().st_size
        return total

    def oldest_age(self) -> float | None:
        """Seconds since the oldest record waiting was spooled (None: nothing waits). Another
        process's file counts from when it was named, this process's from its first record."""
        now = time.time()
        ages = []
        for path in self.files():
            if path == self.path:
                if self._own_bytes and self._first_write is not None:
                    ages.append(now - self._first_write)
            else:
                try:
                    ages.append(now - int(path.name.split("-", 1)[0]) / 1e9)
                except ValueError:
                    continue
        return max(ages) if ages else None

    def pending(self) -> bool:
        """Whether anything waits: this process's records, or another process's file."""
        return self._own_bytes > 0 or any(p != self.path for p in self.files())

    # --- replay -------------------------------------------------------------------------------

    def replay(self, deliver: Deliver, quarantine: Quarantine) -> int:
        """Deliver what is spooled, in order, as ``deliver(events, source)`` (the source names
        the spool file); return the number of events delivered. A record that cannot be decoded
        goes to ``quarantine``. Raises what either raises, leaving the undelivered records (and
        possibly some delivered ones, which a later replay delivers again, harmlessly) in
        place."""
        with self._lock:
            delivered = 0
            for path in self.files():
                if path != self.path:
                    delivered += self._replay_orphan(path, deliver, quarantine)
            if self._own_bytes and self._fd is not None:
                delivered += _deliver_records(self._fd, self.path, deliver, quarantine)
                os.ftruncate(self._fd, 0)
                os.fsync(self._fd)
                self._own_bytes = 0
                self._first_write = None
            return delivered

    def _replay_orphan(self, path: Path, deliver: Deliver, quarantine: Quarantine) -> int:
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return 0
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return 0  # a live process owns it
            if not path.exists():
                return 0  # another process replayed and removed it while we waited
            n = _deliver_records(fd, path, deliver, quarantine)
            path.unlink(missing_ok=True)
            _fsync_dir(self.directory)
            return n
        finally:
            os.close(fd)

    def close(self) -> None:
        """Release this process's file; an empty one is removed."""
        with self._lock:
            if self._fd is None:
                return
            if self._own_bytes == 0:
                self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None


def read_records(fd: int, path: Path) -> Iterator[list[Event] | DeadLetter]:
    """The batches stored in a spool file, in order; a torn or corrupt tail ends the file.
    A whole record that does not decode into events comes as a dead letter instead."""
    data = os.pread(fd, os.fstat(fd).st_size, 0)
    pos = 0
    while pos < len(data):
        header = data[pos : pos + HEADER.size]
        if len(header) < HEADER.size:
            _torn(path, len(data) - pos)
            return
        magic, length, crc = HEADER.unpack(header)
        body = data[pos + HEADER.size : pos + HEADER.size + length]
        if magic != MAGIC or len(body) < length or zlib.crc32(body) != crc:
            _torn(path, len(data) - pos)
            return
        where = f"spool {path.name} at byte {pos}"
        try:
            objects = _decode(body)
            if not isinstance(objects, list):
                raise PayloadError(where, "not a list of events")
            yield [event_from_json(e, f"{where}, event {i}") for i, e in enumerate(objects)]
        except (ValueError, PayloadError) as exc:
            raw = body.decode("utf-8", "backslashreplace")
            log.warning("agentdocket: %s does not decode (%s); kept as a dead letter", where, exc)
            yield DeadLetter.of_raw(raw, f"undecodable spool record: {exc}", where)
        pos += HEADER.size + length


def _deliver_records(fd: int, path: Path, deliver: Deliver, quarantine: Quarantine) -> int:
    chunk: list[Event] = []
    total = 0
    source = f"spool {path.name}"
    for batch in read_records(fd, path):
        if isinstance(batch, DeadLetter):
            quarantine([batch])
            continue
        chunk.extend(batch)
        if len(chunk) >= REPLAY_CHUNK:
            deliver(chunk, source)
            total += len(chunk)
            chunk = []
    if chunk:
        deliver(chunk, source)
        total += len(chunk)
    return total


def _torn(path: Path, size: int) -> None:
    log.warning(
        "agentdocket: spool %s ends with %d bytes of an incomplete record (a write cut short); "
        "they are skipped",
        path,
        size,
    )


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
