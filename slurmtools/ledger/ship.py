"""Ship spooled events into the database: idempotent, batched, never losing an event.

* Each event is stored by `ledger/store.py` (ON CONFLICT (idempotency_key) DO NOTHING: the same event twice is one
  row).
* A connection error is retried with backoff; then the events stay in the spool for the next flush.
* An event the database rejects for its content, or that holds a field its kind does not define
  (ledger/fields.py), is quarantined (spool/bad/, with the reason) and never blocks others.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlalchemy import exc as sa_exc

from slurmtools.ledger.spool import Event, Spool
from slurmtools.ledger.store import store

__all__ = ["BACKOFF", "BATCH", "FlushResult", "flush", "store"]

log = logging.getLogger(__name__)

BATCH = 200
BACKOFF = (0.2, 0.5, 1.0, 2.0)


@dataclass
class FlushResult:
    shipped: int = 0         # events stored (or found already stored)
    quarantined: int = 0     # unreadable or rejected, moved to spool/bad
    left: int = 0            # still pending (database unreachable)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"shipped": self.shipped, "quarantined": self.quarantined, "left": self.left,
                "error": self.error}


def _is_connection_error(exc: BaseException) -> bool:
    if isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError)):
        return True
    return isinstance(exc, sa_exc.DBAPIError) and bool(exc.connection_invalidated)


class _FlushLock:
    """One flusher at a time per spool; others return at once (the holder re-checks before leaving)."""

    def __init__(self, spool: Spool) -> None:
        self.path = os.path.join(spool.root, ".flush.lock")
        self.fd: int | None = None

    def acquire(self) -> bool:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o640)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            os.close(self.fd)
            self.fd = None
            return False

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def flush(spool: Spool, engine: Engine, *, batch: int = BATCH, backoff: Iterable[float] = BACKOFF,
          wait_lock: bool = False) -> FlushResult:
    """Ship everything pending. Safe to run concurrently with writers and with other flushers."""
    from slurmtools.ledger import schema

    result = FlushResult()
    spool.ensure()
    spool.clean_tmp()
    lock = _FlushLock(spool)
    while True:
        if not lock.acquire():
            if not wait_lock:
                result.left = spool.counts()["pending"]
                return result
            time.sleep(0.05)
            continue
        try:
            try:
                schema.ensure(engine)
            except Exception as exc:  # noqa: BLE001 - any failure here leaves events in the spool
                result.error = f"database unavailable: {exc.__class__.__name__}: {str(exc).splitlines()[0]}"
                result.left = spool.counts()["pending"]
                return result
            _flush_locked(spool, engine, batch, tuple(backoff), result)
        finally:
            lock.release()
        if result.error or not spool.pending_files():
            result.left = spool.counts()["pending"]
            return result


def _flush_locked(spool: Spool, engine: Engine, batch: int, backoff: tuple[float, ...],
                  result: FlushResult) -> None:
    while True:
        files = spool.pending_files()
        if not files:
            return
        chunk: list[tuple[Path, list[Event]]] = []
        size = 0
        for path in files:
            if size >= batch:
                break
            try:
                events = spool.read(path)
            except FileNotFoundError:
                continue  # shipped by a concurrent flusher
            except (ValueError, KeyError, TypeError, UnicodeDecodeError, OSError) as exc:
                log.error("ledger: spool file %s set aside in bad/: %s", path.name, exc)
                spool.quarantine(path, f"unreadable event: {exc}")
                result.quarantined += 1
                continue
            chunk.append((path, events))
            size += len(events)
        if not chunk:
            continue
        if not _ship(spool, engine, chunk, backoff, result):
            return


def _ship(spool: Spool, engine: Engine, chunk: list[tuple[Path, list[Event]]],
          backoff: tuple[float, ...], result: FlushResult, finish: bool = True) -> bool:
    """Store a chunk of spool files in one transaction. On a content error, split the chunk down to
    single events; an event the database rejects is quarantined alone. A file is removed from the
    spool only after all its events are stored (`finish`). False: database unreachable."""
    events = [e for _, evs in chunk for e in evs]
    for attempt, delay in enumerate((0.0, *backoff)):
        if delay:
            time.sleep(delay)
        try:
            with engine.begin() as conn:
                store(conn, events)
        except Exception as exc:  # noqa: BLE001 - classified below
            locked = "locked" in str(exc)
            if locked or _is_connection_error(exc):
                if attempt == len(backoff):
                    result.error = ("database stayed locked" if locked
                                    else f"database unreachable: {str(exc).splitlines()[0]}")
                    return False
                continue
            return _split(spool, engine, chunk, backoff, result, exc, finish)
        if finish:
            for path, _ in chunk:
                spool.done(path)
        result.shipped += len(events)
        return True
    return False


def _split(spool: Spool, engine: Engine, chunk: list[tuple[Path, list[Event]]], backoff: tuple[float, ...],
           result: FlushResult, exc: Exception, finish: bool) -> bool:
    if len(chunk) > 1:
        return all(_ship(spool, engine, [one], backoff, result, finish) for one in chunk)
    path, events = chunk[0]
    if len(events) > 1:
        for event in events:
            if not _ship(spool, engine, [(path, [event])], backoff, result, finish=False):
                return False  # unreachable now: the whole file stays for the next flush
    else:
        spool.quarantine_event(events[0], f"rejected by the database: {exc.__class__.__name__}: {exc}")
        log.error("ledger: event %s quarantined: %s", events[0].key, exc)
        result.quarantined += 1
    if finish:
        spool.done(path)
    return True
