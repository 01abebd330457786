"""One controller acts at a time: leader election through the ledger's database.

Slurm sites run slurmctld on a primary and a backup host, and the controller service on both. Two controllers
acting on one queue would each requeue, signal and exclude; the decision rows' keys stop most doubles, but not
all (a `scontrol requeue` is not a row). So only the leader acts; the other waits and takes over within one
poll interval (plus, on PostgreSQL, the server's noticing that the dead leader's connection is gone):

* PostgreSQL: a session-level advisory lock (`pg_try_advisory_lock`) on a connection of its own, held while
  the process lives; the server frees it when the process or its host dies (TCP keepalives bound the time a
  dead host's connection lingers). Before each pass the leader checks that its connection still holds the lock
  (a restarted database, a cut network): if not, it steps down and competes again.
* SQLite: an exclusive `flock` on `<database>.leader` next to the database file. SQLite is one host's database,
  so this is one host's lock (two hosts sharing an SQLite file over NFS is not supported: use PostgreSQL).

The lock's key is derived from the cluster name: controllers of two clusters sharing one database do not
exclude each other."""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import socket
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

#: The leader writes `leader:<role>:<cluster>` in the ledger's meta table at most this often: the exporter's
#: `slurmtools_leader_heartbeat_timestamp_seconds{role}`, whose age alerts when no host leads (docs/stalls.md).
HEARTBEAT_S = 30.0


def lock_key(cluster: str, role: str = "controller") -> int:
    """A signed 64-bit advisory-lock key for CLUSTER (stable across processes and hosts); ROLE: which service
    (the controller, the stall detector: each has its own leader)."""
    digest = hashlib.sha256(f"slurmtools-{role}:{cluster}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def heartbeat_key(role: str, cluster: str) -> str:
    return f"leader:{role}:{cluster}"


class Leader:
    """`hold()` before each pass: True while this process is the leader (acquiring the lock when free)."""

    def __init__(self, engine: Engine, cluster: str, role: str = "controller") -> None:
        self.engine = engine
        self.cluster = cluster
        self.role = role
        self.key = lock_key(cluster, role)
        self._conn: Any = None
        self._fd: int | None = None
        self.leading = False
        self._beat = 0.0

    @property
    def backend(self) -> str:
        return str(self.engine.dialect.name)

    def hold(self) -> bool:
        try:
            held = self._hold_pg() if self.backend == "postgresql" else self._hold_file()
        except Exception as exc:  # noqa: BLE001 - a database that cannot be reached: not the leader, said once
            if self.leading:
                log.error("%s: leadership lost (%s: %s): stepping down", self.role, type(exc).__name__, exc)
            self._drop()
            held = False
        if held != self.leading:
            log.warning("%s: %s", self.role, "now the leader: acting" if held else "not the leader: waiting")
        self.leading = held
        if held and time.monotonic() - self._beat >= HEARTBEAT_S:
            self._beat = time.monotonic()
            self.heartbeat()
        return held

    def heartbeat(self) -> None:
        """Say in the ledger that this host leads now (a failure is logged: it never costs the leadership)."""
        from sqlalchemy.orm import Session

        from slurmtools.ledger.models import Meta

        value = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "time": time.time()})
        try:
            with Session(self.engine) as s:
                s.merge(Meta(key=heartbeat_key(self.role, self.cluster), value=value))
                s.commit()
        except Exception as exc:  # noqa: BLE001 - a missing schema, a busy SQLite: the next beat tries again
            log.debug("%s: heartbeat not written: %s", self.role, exc)

    def release(self) -> None:
        self._drop()
        self.leading = False

    # -- PostgreSQL
    def _hold_pg(self) -> bool:
        from sqlalchemy import text

        if self._conn is not None:
            # a session-level lock lasts as long as the session: a live connection still holds it; a dead one
            # (a restarted database, a cut network) raises here and the caller steps down
            self._conn.execute(text("SELECT 1")).scalar()
            self._conn.commit()
            return True
        conn = self.engine.connect()
        try:
            got = bool(conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": self.key}).scalar())
            conn.commit()          # the lock is the session's; no transaction left open on the leader's connection
        except Exception:
            conn.close()
            raise
        if not got:
            conn.close()
            return False
        self._conn = conn
        return True

    # -- SQLite
    def _hold_file(self) -> bool:
        if self._fd is not None:
            return True
        db = self.engine.url.database or ""
        if not db or db == ":memory:":
            return True            # an in-memory ledger is this process's alone: nobody to compete with
        suffix = ".leader" if self.role == "controller" else f".{self.role}.leader"
        fd = os.open(f"{db}{suffix}", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                # closed for real, not returned to the pool: ending the session is what frees its advisory lock
                self._conn.invalidate()
                self._conn.close()
            except Exception:  # noqa: BLE001 - a dead connection: nothing left to free
                pass
            self._conn = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
