"""Data the ledger keeps as it stores rows, so that a report over millions of rows reads it instead of recomputing it
(issue 36, docs/performance.md):

- `interrupted_attempts` (models.InterruptedAttempt) and `job_attempts.interrupted`: the attempts an
  infrastructure fault interrupted (a `node_fault` controller decision, or an infrastructure finding naming them);
  the report's projected MTTF sums one pass over the attempts instead of joining every finding and decision.
- `failed_job_names` (models.FailedJobName) and `job_attempts.name_failed`: the (user, job name)s of which some
  attempt failed; the report's manual retries order only those names' jobs.

Both tables are insert-only and keyed by what they describe, and each flag on `job_attempts` is set both when the
row it depends on arrives (for the attempts already there) and when the attempt arrives (from the table): events
stored twice, or in any order (a finding before its attempt, a failure before the job's earlier runs), give the
same rows. On PostgreSQL a transaction-scoped advisory lock per key orders a writer noting a key against one
storing an attempt of it, so that neither misses the other's uncommitted row; SQLite has one writer at a time.
The shipper (store.py) calls these functions; the ORM listeners at the end cover rows the controller writes
through a Session. Migration 0008 filled the tables and flags from an existing ledger's rows, by the same rules.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, and_, bindparam, exists, select, text, true, update
from sqlalchemy.orm import Mapper

from slurmtools.ledger import models

#: Slurm's end states of a failed attempt (the report's manual retries follow a job in one of these).
FAILED_STATES = ("FAILED", "NODE_FAIL", "TIMEOUT", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE")

A = models.JobAttempt.__table__
IA = models.InterruptedAttempt.__table__
FN = models.FailedJobName.__table__


def finding_interrupts(category: object, severity: object, trust: object) -> bool:
    """Whether a finding naming an attempt marks it as interrupted by the infrastructure."""
    return category in models.INFRA_CATEGORIES and severity in models.INFRA_SEVERITIES and trust != "job"


def _lock(conn: Connection, keys: list[str]) -> None:
    """PostgreSQL: hold an advisory lock per key until the transaction ends, taken in one order (no deadlock)."""
    if keys and conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) "
                          "FROM unnest(CAST(:keys AS text[])) AS k ORDER BY k"), {"keys": sorted(set(keys))})


def _attempt_key(cluster: str, job_id: int, restart: int) -> str:
    return f"slurmtools.interrupted\x1f{cluster}\x1f{job_id}\x1f{restart}"


def _name_key(cluster: str, user: str, name: str) -> str:
    return f"slurmtools.failed_name\x1f{cluster}\x1f{user}\x1f{name}"


def _insert(conn: Connection, model: type[models.Base]) -> Any:
    from sqlalchemy.dialects import postgresql, sqlite

    return (postgresql.insert(model) if conn.dialect.name == "postgresql" else sqlite.insert(model)) \
        .on_conflict_do_nothing()


def lock_batch(conn: Connection, events: list[Any]) -> None:
    """Take, at the start of a shipped batch, the locks its attempts, findings and decisions will need, at once and
    in one order: two batches then never hold some of them each while waiting for the other's (a deadlock, which
    PostgreSQL would break by failing one; the shipper would retry it). A merged row's name that the event does not
    carry is locked later, when it is known."""
    keys: list[str] = []
    for e in events:
        d, job, restart = e.data, e.data.get("job_id"), e.data.get("restart_count")
        if e.type == "attempt" and job is not None:
            keys.append(_attempt_key(e.cluster, job, restart or 0))
            if d.get("user") is not None and d.get("name") is not None:
                keys.append(_name_key(e.cluster, d["user"], d["name"]))
        elif job is not None and restart is not None and (
                (e.type == "decision" and d.get("classification") == "node_fault")
                or (e.type == "finding" and finding_interrupts(d.get("category"), d.get("severity"), d.get("trust")))):
            keys.append(_attempt_key(e.cluster, job, restart))
    _lock(conn, keys)


def note_interrupted(conn: Connection, keys: list[tuple[str, int, int]]) -> None:
    """Attempts (cluster, job id, restart count) an infrastructure fault interrupted: noted, and flagged on the
    attempts already stored."""
    keys = sorted(set(keys))
    if not keys:
        return
    _lock(conn, [_attempt_key(*k) for k in keys])
    rows = [{"c": c, "j": j, "r": r} for c, j, r in keys]
    conn.execute(_insert(conn, models.InterruptedAttempt), [{"cluster": c, "job_id": j, "restart_count": r}
                                                             for c, j, r in keys])
    conn.execute(update(models.JobAttempt).where(A.c.cluster == bindparam("c"), A.c.job_id == bindparam("j"),
                                 A.c.restart_count == bindparam("r"), A.c.interrupted.is_not(true()))
                 .values(interrupted=True), rows)


def note_failed_names(conn: Connection, keys: list[tuple[str, str, str]]) -> None:
    """(cluster, user, job name)s of which an attempt failed: noted, and flagged on their attempts already stored."""
    keys = sorted(set(keys))
    if not keys:
        return
    _lock(conn, [_name_key(*k) for k in keys])
    conn.execute(_insert(conn, models.FailedJobName), [{"cluster": c, "user": u, "name": n} for c, u, n in keys])
    conn.execute(update(models.JobAttempt).where(A.c.cluster == bindparam("c"), A.c.user == bindparam("u"),
                                 A.c.name == bindparam("n"), A.c.name_failed.is_not(true()))
                 .values(name_failed=True), [{"c": c, "u": u, "n": n} for c, u, n in keys])


def flag_attempts(conn: Connection, ids: list[int]) -> None:
    """Set the derived flags of the attempts IDS (a batch just inserted or merged) from their values and the tables;
    a failed one notes its name first (flagging the name's other attempts). A few statements per batch."""
    ids = sorted(set(ids))
    if not ids:
        return
    rows = conn.execute(select(A.c.cluster, A.c.job_id, A.c.restart_count, A.c.user, A.c.name, A.c.state)
                        .where(A.c.id.in_(ids))).all()
    names = {(r.cluster, r.user, r.name) for r in rows if r.user is not None and r.name is not None}
    # every key this batch touches, locked at once in one order, before the statements that read the tables
    _lock(conn, [_attempt_key(r.cluster, r.job_id, r.restart_count) for r in rows] + [_name_key(*k) for k in names])
    note_failed_names(conn, [(r.cluster, r.user, r.name) for r in rows
                             if r.user is not None and r.name is not None and r.state in FAILED_STATES])
    hit = exists().where(IA.c.cluster == A.c.cluster, IA.c.job_id == A.c.job_id,
                         IA.c.restart_count == A.c.restart_count)
    failed = and_(A.c.user.is_not(None), A.c.name.is_not(None),
                  exists().where(FN.c.cluster == A.c.cluster, FN.c.user == A.c.user, FN.c.name == A.c.name))
    conn.execute(update(models.JobAttempt).where(A.c.id.in_(ids)).values(interrupted=hit, name_failed=failed))


def _decision_inserted(_mapper: Mapper[Any], conn: Connection, d: models.ControllerDecision) -> None:
    if d.classification == "node_fault" and d.restart_count is not None:
        note_interrupted(conn, [(d.cluster, d.job_id, d.restart_count)])


def _finding_inserted(_mapper: Mapper[Any], conn: Connection, f: models.Finding) -> None:
    if f.job_id is not None and f.restart_count is not None and finding_interrupts(f.category, f.severity, f.trust):
        note_interrupted(conn, [(f.cluster, f.job_id, f.restart_count)])


def _attempt_inserted(_mapper: Mapper[Any], conn: Connection, a: models.JobAttempt) -> None:
    flag_attempts(conn, [a.id])


def listen() -> None:
    """Keep the derived data for rows written through the ORM (the controller's decisions); idempotent."""
    from sqlalchemy import event

    for model, fn in ((models.ControllerDecision, _decision_inserted), (models.Finding, _finding_inserted),
                      (models.JobAttempt, _attempt_inserted)):
        if not event.contains(model, "after_insert", fn):
            event.listen(model, "after_insert", fn)
