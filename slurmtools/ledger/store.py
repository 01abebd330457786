"""Store events into the database: one handler per event type, each row built from the event's data through the
kind's definition (ledger/events.py). Idempotent: each event is inserted with ON CONFLICT (idempotency_key) DO
NOTHING (or merged, for attempts and passing gate runs), so the same event twice is one row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Float, Integer, String, and_, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from slurmtools.ledger import derived, models
from slurmtools.ledger import fields as kinds
from slurmtools.ledger.spool import Event, finite_only
from slurmtools.textsafe import clean, clean_any
from slurmtools.timeutil import aware

ATTEMPT_MATCH_DAYS = 30


def _insert(conn: Connection, model: type[models.Base]) -> Any:
    return postgresql.insert(model) if conn.dialect.name == "postgresql" else sqlite.insert(model)


def _ts(value: object) -> datetime | None:
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
WRITTEN = "slurmtools.attempts_written"


def _written(conn: Connection) -> list[int]:
    """The ids of the attempts this batch inserted or merged (kept on the connection while store() runs)."""
    ids: list[int] = conn.info.setdefault(WRITTEN, [])
    return ids


def _greatest(conn: Connection, a: object, b: object) -> Any:
    """SQL max of two values: SQLite's two-argument max(), PostgreSQL's greatest()."""
    return func.max(a, b) if conn.dialect.name == "sqlite" else func.greatest(a, b)


def _row(model: type[models.Base], event: Event) -> dict[str, Any]:
    """Event data -> a row for MODEL: its kind's fields (ledger/fields.py) typed as their columns, the extras
    (`nonfinite`) into `details`. A field the kind does not define is an error (ValueError): the event goes to
    the spool's bad/ with the reason, never silently into `details`."""
    table = model.__table__
    cols = {c.name: c for c in table.columns}
    unknown = kinds.unknown_fields(event.type, event.data)
    if unknown:
        raise ValueError(f"a {event.type} event has no field {', '.join(map(repr, unknown))}")
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
    attempts: dict[tuple[str, int, int], tuple[int, str | None]] = {}
    by_sluid: dict[tuple[str, str], int] = {}
    if wanted:
        job_ids = sorted({w[1] for w in wanted})
        for att_id, cluster, job_id, restart, sluid in conn.execute(
                select(T.c.id, T.c.cluster, T.c.job_id, T.c.restart_count, T.c.sluid)
                .where(T.c.job_id.in_(job_ids)).order_by(T.c.id)):
            attempts[(cluster, job_id, restart)] = (att_id, sluid)  # the newest wins
            if sluid is not None:
                by_sluid[(cluster, sluid)] = att_id
    for e, row in zip(events, rows, strict=True):
        if row.get("job_id") is not None and not row.get("attempt_id"):
            # By the run's SLUID where the finding has one (25.11+): the newest row of a reused job id may be
            # another run's.
            att_id, att_sluid = attempts.get((e.cluster, row["job_id"], row.get("restart_count") or 0), (None, None))
            if row.get("sluid"):
                att_id = by_sluid.get((e.cluster, row["sluid"]), att_id if att_sluid is None else None)
            row["attempt_id"] = att_id
    conn.execute(_insert(conn, models.Finding).on_conflict_do_nothing(index_elements=["idempotency_key"]),
                 _full_rows(models.Finding, rows))
    # the attempts these findings mark as interrupted (derived.py; the report's projected MTTF reads it)
    derived.note_interrupted(conn, [(r["cluster"], r["job_id"], r["restart_count"]) for r in rows
                                    if r.get("job_id") is not None and r.get("restart_count") is not None
                                    and derived.finding_interrupts(r.get("category"), r.get("severity"),
                                                                   r.get("trust"))])


def _decisions(conn: Connection, events: list[Event], seen: Seen) -> None:
    """Controller decisions; a `node_fault` one marks its attempt as interrupted."""
    rows = _rows(models.ControllerDecision, events, seen)
    conn.execute(_insert(conn, models.ControllerDecision).on_conflict_do_nothing(index_elements=["idempotency_key"]),
                 _full_rows(models.ControllerDecision, rows))
    derived.note_interrupted(conn, [(r["cluster"], r["job_id"], r["restart_count"]) for r in rows
                                    if r.get("classification") == "node_fault" and r.get("restart_count") is not None])


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
    """Merge an attempt: hooks see no submit time, sacct does; both describe one row. The row's id goes to
    batch's list (_written): its derived flags are set once per batch (derived.flag_attempts)."""
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
    sluid = row.get("sluid")
    if sluid is not None:
        # The run's own id (Slurm 25.11+): exact where it is known; a row of the same job id and restart count
        # with another SLUID is another run (the job id reused), never merged into this one.
        same_job = and_(same_job, or_(T.c.sluid.is_(None), T.c.sluid == sluid))
    submit = row.get("submit_time")
    existing = None
    if sluid is not None:
        existing = conn.execute(select(T).where(T.c.cluster == event.cluster, T.c.sluid == sluid)
                                .order_by(T.c.id.desc())).mappings().first()
    if existing is None and submit is not None:
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
        new_id = conn.execute(_insert(conn, A).values(**row).on_conflict_do_nothing(index_elements=["idempotency_key"])
                              .returning(T.c.id)).scalar()
        if new_id is not None:
            _written(conn).append(int(new_id))
    else:
        fixed = {"idempotency_key", "cluster", "job_id", "restart_count", "details", "source",
                 "interrupted", "name_failed"}
        merged = {k: v for k, v in row.items() if v is not None and k not in fixed}
        if row.get("details"):
            merged["details"] = _merge_details(existing["details"] or {}, row["details"])
        if row.get("source"):
            merged["source"] = "+".join(sorted({*str(existing["source"]).split("+"), row["source"]}))
        conn.execute(update(A).where(T.c.id == existing["id"]).values(**merged))
        _written(conn).append(int(existing["id"]))     # its flags follow its (user, name) and state
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
    "decision": _decisions,
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
    derived.lock_batch(conn, [e for evs in by_type.values() for e in evs])
    conn.info[WRITTEN] = []
    for kind, handler in SINGLE.items():
        for event in by_type.get(kind, []):
            handler(conn, event, seen)
    derived.flag_attempts(conn, conn.info.pop(WRITTEN))
    for kind, bulk in BULK.items():
        if by_type.get(kind):
            bulk(conn, by_type[kind], seen)
    for kind, handler in AFTER.items():
        for event in by_type.get(kind, []):
            handler(conn, event, seen)
    _touch_nodes(conn, seen)
