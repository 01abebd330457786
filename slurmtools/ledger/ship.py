"""Ship spooled events into the database: idempotent, batched, never losing an event.

* Each event is inserted with ON CONFLICT (idempotency_key) DO NOTHING: the same event twice is one row.
* A connection error is retried with backoff; then the events stay in the spool for the next flush.
* An event the database rejects for its content is quarantined (spool/bad/) and never blocks others.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, Float, Integer, String, and_, func, select, update
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import postgresql, sqlite

from slurmtools.ledger import models
from slurmtools.ledger.spool import Event, Spool, finite_only
from slurmtools.textsafe import clean, clean_any
from slurmtools.timeutil import aware

log = logging.getLogger(__name__)

BATCH = 200
BACKOFF = (0.2, 0.5, 1.0, 2.0)
ATTEMPT_MATCH_DAYS = 30


@dataclass
class FlushResult:
    shipped: int = 0         # events stored (or found already stored)
    quarantined: int = 0     # unreadable or rejected, moved to spool/bad
    left: int = 0            # still pending (database unreachable)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"shipped": self.shipped, "quarantined": self.quarantined, "left": self.left,
                "error": self.error}


def _insert(conn: Connection, model: type[models.Base]) -> Any:
    return postgresql.insert(model) if conn.dialect.name == "postgresql" else sqlite.insert(model)


def _ts(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, (int, float)):
        try:
            return datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"not a time: {value!r}") from None
    return aware(str(value))


Seen = dict[tuple[str, str], datetime]  # (cluster, node) -> latest time a batch mentioned it


def _greatest(conn: Connection, a: Any, b: Any) -> Any:
    """SQL max of two values: SQLite's two-argument max(), PostgreSQL's greatest()."""
    return func.max(a, b) if conn.dialect.name == "sqlite" else func.greatest(a, b)


def _row(model: type[models.Base], event: Event) -> dict[str, Any]:
    """Event data -> a row for MODEL: known columns typed, everything else into `details`."""
    table = model.__table__
    cols = {c.name: c for c in table.columns}
    row: dict[str, Any] = {}
    nulled: list[str] = []
    data = finite_only(event.data, "", nulled)      # a spool file of an older writer, or store_now's direct path
    details = dict(data.get("details") or {})
    for key, value in data.items():
        if key == "details":
            continue
        if key in cols and key != "id":
            col = cols[key]
            if isinstance(col.type, Float) and isinstance(value, int) and not isinstance(value, bool) \
                    and abs(value) > 1e300:
                nulled.append(key)
                value = None
            if isinstance(col.type, models.UTCDateTime):
                value = _ts(value)
            elif value is not None and isinstance(col.type, Integer) and (
                    isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"{model.__tablename__}.{key} must be an integer, got {value!r}")
            elif value is not None and isinstance(col.type, String) and not isinstance(value, str):
                raise ValueError(f"{model.__tablename__}.{key} must be text, got {type(value).__name__}")
            elif isinstance(value, str):     # Text is a String: job output, labels, reasons (docs/security.md)
                value = clean(value)
            row[key] = value
        else:
            details[key] = value
    if nulled:
        details["nonfinite"] = sorted(set(nulled) | set(details.get("nonfinite") or []))
    if "details" in cols:     # a chain's details are the submission replayed as it was (argv, script), never shown
        row["details"] = details if model is models.RetryChain else clean_any(details)
    if "idempotency_key" in cols:
        row["idempotency_key"] = event.key
    if "cluster" in cols:
        row["cluster"] = event.cluster
    if "time" in cols and row.get("time") is None:
        row["time"] = event.time
    return row


def _rows(model: type[models.Base], events: list[Event], seen: Seen) -> list[dict[str, Any]]:
    """Rows for a batch of one type, noting the nodes they name."""
    rows = [_row(model, e) for e in events]
    for e, row in zip(events, rows, strict=True):
        if row.get("node"):
            _see(seen, e.cluster, row["node"], e.time)
    return rows


def _touch_nodes(conn: Connection, seen: Seen) -> None:
    """Upsert the nodes a batch mentioned, once each, with the latest time seen."""
    if not seen:
        return
    stmt = _insert(conn, models.Node)
    stmt = stmt.on_conflict_do_update(index_elements=["cluster", "name"], set_={
        "last_seen": _greatest(conn, models.Node.last_seen, stmt.excluded.last_seen)})
    conn.execute(stmt, [{"cluster": c, "name": n, "first_seen": t, "last_seen": t}
                        for (c, n), t in sorted(seen.items())])


def _full_rows(model: type[models.Base], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """executemany needs the same keys in every row: fill absent columns with their defaults."""
    cols = [c for c in model.__table__.columns if c.name != "id"]
    keys = set().union(*rows)
    out = []
    for row in rows:
        full = dict(row)
        for col in cols:
            if col.name in keys and col.name not in full:
                default = col.default.arg if col.default is not None and not callable(col.default.arg) else None
                full[col.name] = {} if col.name == "details" else default
        out.append(full)
    return out


def _bulk(model: type[models.Base]) -> Callable[[Connection, list[Event], Seen], None]:
    """Insert many events of one type in one statement; duplicates (same key) are skipped."""

    def handler(conn: Connection, events: list[Event], seen: Seen) -> None:
        rows = _rows(model, events, seen)
        conn.execute(_insert(conn, model).on_conflict_do_nothing(index_elements=["idempotency_key"]),
                     _full_rows(model, rows))

    return handler


def _see(seen: Seen, cluster: str, node: str, when: datetime) -> None:
    key = (cluster, node)
    if key not in seen or seen[key] < when:
        seen[key] = when


def _findings(conn: Connection, events: list[Event], seen: Seen) -> None:
    """Findings, linked to their job attempt when the ledger knows it."""
    T = models.JobAttempt.__table__
    rows = _rows(models.Finding, events, seen)
    wanted = {(e.cluster, r["job_id"], r.get("restart_count") or 0)
              for e, r in zip(events, rows, strict=True) if r.get("job_id") is not None and not r.get("attempt_id")}
    attempts: dict[tuple[str, int, int], int] = {}
    if wanted:
        job_ids = sorted({w[1] for w in wanted})
        for att_id, cluster, job_id, restart in conn.execute(
                select(T.c.id, T.c.cluster, T.c.job_id, T.c.restart_count)
                .where(T.c.job_id.in_(job_ids)).order_by(T.c.id)):
            attempts[(cluster, job_id, restart)] = att_id  # the newest wins
    for e, row in zip(events, rows, strict=True):
        if row.get("job_id") is not None and not row.get("attempt_id"):
            row["attempt_id"] = attempts.get((e.cluster, row["job_id"], row.get("restart_count") or 0))
    conn.execute(_insert(conn, models.Finding).on_conflict_do_nothing(index_elements=["idempotency_key"]),
                 _full_rows(models.Finding, rows))


def _merge_details(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """One level deep: each node's epilog adds its own entry under details["epilog"]."""
    out = dict(old)
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def _attempt(conn: Connection, event: Event, seen: Seen) -> None:
    """Merge an attempt: hooks see no submit time, sacct does; both describe one row."""
    A = models.JobAttempt
    T = A.__table__
    row = _row(A, event)
    row.setdefault("restart_count", 0)
    if row.get("node_count") is None and row.get("nodes"):
        row["node_count"] = _node_count(row["nodes"])
    if conn.execute(select(T.c.id).where(T.c.idempotency_key == event.key)).first():
        return
    same_job = and_(T.c.cluster == event.cluster, T.c.job_id == row["job_id"],
                    T.c.restart_count == row["restart_count"])
    submit = row.get("submit_time")
    existing = None
    if submit is not None:
        existing = conn.execute(select(T).where(same_job, T.c.submit_time == submit)).mappings().first()
    if existing is None:
        horizon = (submit or event.time).timestamp() - ATTEMPT_MATCH_DAYS * 86400
        match = same_job if submit is None else and_(same_job, T.c.submit_time.is_(None))
        for cand in conn.execute(select(T).where(match).order_by(T.c.id.desc())).mappings():
            last = cand["end_time"] or cand["start_time"] or cand["submit_time"]
            if last is None or last.timestamp() >= horizon:
                existing = cand
                break
    if existing is None:
        conn.execute(_insert(conn, A).values(**row).on_conflict_do_nothing(index_elements=["idempotency_key"]))
    else:
        fixed = {"idempotency_key", "cluster", "job_id", "restart_count", "details", "source"}
        merged = {k: v for k, v in row.items() if v is not None and k not in fixed}
        if row.get("details"):
            merged["details"] = _merge_details(existing["details"] or {}, row["details"])
        if row.get("source"):
            merged["source"] = "+".join(sorted({*str(existing["source"]).split("+"), row["source"]}))
        conn.execute(update(A).where(T.c.id == existing["id"]).values(**merged))
    for name in (row.get("details") or {}).get("node_list", []) or []:
        _see(seen, event.cluster, name, event.time)


def _node_count(nodes: str) -> int | None:
    """How many nodes a hostlist names (None for one that does not parse: the row is still stored)."""
    from slurmtools.slurm import SlurmParseError, expand

    try:
        return len(expand(nodes)) or None
    except SlurmParseError:
        return None


def _gate_run(conn: Connection, event: Event, seen: Seen) -> None:
    if event.data.get("verdict") != "ok":
        _bulk(models.GateRun)(conn, [event], seen)
        return
    # A pass only bumps a per-day counter; the key table keeps the bump idempotent.
    inserted = conn.execute(_insert(conn, models.ShippedKey).values(idempotency_key=event.key, time=event.time)
                            .on_conflict_do_nothing(index_elements=["idempotency_key"])).rowcount
    if not inserted:
        return
    G = models.GatePassCount
    day = event.time.astimezone(UTC).strftime("%Y-%m-%d")
    ms = int(event.data.get("duration_ms") or 0)
    stmt = _insert(conn, G).values(cluster=event.cluster, node=event.data["node"], profile=event.data.get(
        "profile", "prolog"), day=day, passes=1, total_ms=ms, last_pass=event.time)
    conn.execute(stmt.on_conflict_do_update(
        index_elements=["cluster", "node", "profile", "day"],
        set_={"passes": G.passes + 1, "total_ms": G.total_ms + ms,
              "last_pass": _greatest(conn, G.last_pass, event.time)}))
    _see(seen, event.cluster, event.data["node"], event.time)


def _node_events(conn: Connection, events: list[Event], seen: Seen) -> None:
    """Node events are re-imported while they last: a later import fills in the end."""
    N = models.NodeEvent
    rows = _rows(N, events, seen)
    stmt = _insert(conn, N)
    conn.execute(stmt.on_conflict_do_update(index_elements=["idempotency_key"],
                                            set_={"end": func.coalesce(stmt.excluded.end, N.end)}),
                 _full_rows(N, rows))


def _exclusion_end(conn: Connection, event: Event, seen: Seen) -> None:
    X = models.Exclusion
    conn.execute(update(X).where(X.idempotency_key == event.data["exclusion_key"], X.end.is_(None))
                 .values(end=_ts(event.data.get("end")) or event.time, outcome=event.data.get("outcome")))


#: Types shipped one event at a time (they merge or update), in this order, before the bulk types.
SINGLE: dict[str, Callable[[Connection, Event, Seen], None]] = {
    "attempt": _attempt,
    "gate_run": _gate_run,
}
#: Types inserted in bulk, one statement per type and batch.
BULK: dict[str, Callable[[Connection, list[Event], Seen], None]] = {
    "chain": _bulk(models.RetryChain),
    "finding": _findings,
    "node_state": _bulk(models.NodeStateChange),
    "node_event": _node_events,
    "exclusion": _bulk(models.Exclusion),
    "decision": _bulk(models.ControllerDecision),
    "io": _bulk(models.IoSummary),
    "checkpoint": _bulk(models.CheckpointEvent),
    "perf": _bulk(models.PerfResult),
}
#: Types that update rows the bulk types inserted.
AFTER: dict[str, Callable[[Connection, Event, Seen], None]] = {"exclusion_end": _exclusion_end}


def store(conn: Connection, events: Iterable[Event]) -> None:
    """Store a batch: attempts first (findings link to them), then the bulk types, then updates."""
    by_type: dict[str, list[Event]] = {}
    for event in events:
        by_type.setdefault(event.type, []).append(event)
    seen: Seen = {}
    for kind, handler in SINGLE.items():
        for event in by_type.get(kind, []):
            handler(conn, event, seen)
    for kind, bulk in BULK.items():
        if by_type.get(kind):
            bulk(conn, by_type[kind], seen)
    for kind, handler in AFTER.items():
        for event in by_type.get(kind, []):
            handler(conn, event, seen)
    _touch_nodes(conn, seen)


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
