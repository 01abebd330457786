"""Database engines for the ledger: SQLite (WAL, busy timeout, immediate transactions) or PostgreSQL."""

from __future__ import annotations

import logging
import os
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

if TYPE_CHECKING:
    import sqlite3

    from sqlalchemy.engine import Connection
    from sqlalchemy.pool import ConnectionPoolEntry

log = logging.getLogger(__name__)

NETWORK_FS = ("nfs", "nfs4", "lustre", "cifs", "smb3", "gpfs", "beegfs", "ceph", "glusterfs", "fuse")


#: Engines opened read-only (`is_readonly`).
_READONLY: weakref.WeakSet[Engine] = weakref.WeakSet()


def is_readonly(engine: Engine) -> bool:
    """Whether ENGINE is a reader's (a SQLite ledger this user cannot write)."""
    return engine in _READONLY


class LedgerError(RuntimeError):
    """The ledger database cannot be used as configured (bad URL, missing driver...)."""


def fs_type(path: str | os.PathLike[str]) -> str:
    """The filesystem type holding PATH, from /proc/mounts (longest matching mount point)."""
    target = os.path.realpath(path)
    best, best_type = "", "unknown"
    try:
        with open("/proc/mounts") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) < 3:
                    continue
                mnt = parts[1].replace("\\040", " ")
                if (target == mnt or target.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                    best, best_type = mnt, parts[2]
    except OSError:
        pass
    return best_type


def sqlite_path(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


def network_fs_warning(url: str) -> str | None:
    path = sqlite_path(url)
    if path is None:
        return None
    kind = fs_type(path.parent if path.parent.exists() else "/")
    if kind.split(".")[0] in NETWORK_FS:
        return (f"the SQLite ledger {path} is on a network filesystem ({kind}): SQLite locking is not "
                "reliable there and concurrent writers can corrupt it. Put it on a local disk, or use "
                "PostgreSQL (ledger.url = postgresql+psycopg://...)")
    return None


def make_engine(url: str, *, echo: bool = False, readonly: bool = False) -> Engine:
    """An engine for the ledger URL. SQLite gets WAL, a 30 s busy timeout and BEGIN IMMEDIATE; READONLY (reports)
    opens an existing SQLite file read-only, so a long read never holds the write lock."""
    from slurmtools.ledger import derived

    derived.listen()    # rows written through the ORM keep the ledger's derived data too
    try:
        parsed = make_url(url)
    except Exception as exc:  # noqa: BLE001 - sqlalchemy raises several types for bad URLs
        raise LedgerError(f"ledger.url {url!r} is not a database URL: {exc}") from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        path = sqlite_path(url)
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise LedgerError(f"cannot create {path.parent} for the SQLite ledger: {exc.strerror}") from None
            warning = network_fs_warning(url)
            if warning:
                log.warning(warning)
        if path is not None and path.exists() and (readonly or not (os.access(path, os.W_OK)
                                                                    and os.access(path.parent, os.W_OK))):
            return _sqlite_reader(path, echo)
        engine = create_engine(url, echo=echo, connect_args={"timeout": 30})
        _sqlite_pragmas(engine)
        return engine
    if backend == "postgresql":
        if parsed.get_driver_name() != "psycopg":
            raise LedgerError(f"ledger.url {url!r}: use postgresql+psycopg:// (psycopg 3, the 'postgres' extra)")
        try:
            return create_engine(url, echo=echo, pool_pre_ping=True, pool_size=2, max_overflow=2,
                                 connect_args={"connect_timeout": 5})
        except ModuleNotFoundError:
            raise LedgerError("PostgreSQL ledger needs psycopg: pip install 'slurmtools[postgres]'") from None
    raise LedgerError(f"ledger.url {url!r}: only sqlite:/// and postgresql+psycopg:// are supported")


def _sqlite_reader(path: Path, echo: bool) -> Engine:
    """A read-only engine for a SQLite ledger this user cannot write (anyone may list): opened with
    `mode=ro` (SQLite reads a WAL database read-only while its -wal and -shm files exist, as they do while
    the writers run), else as `immutable` when there is no -wal file (everything is in the main file then);
    deferred transactions, `query_only`, never a write lock. A write through it fails at once."""
    import sqlite3

    wal = Path(f"{path}-wal")

    def connect() -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30, check_same_thread=False)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:
            if wal.exists():
                raise
            conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        conn.isolation_level = None
        conn.execute("PRAGMA query_only=ON")
        return conn

    engine = create_engine("sqlite://", echo=echo, creator=connect)
    _READONLY.add(engine)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN")

    return engine


def _sqlite_pragmas(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: ConnectionPoolEntry) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # Take the write lock up front: a deferred transaction that upgrades later fails with
        # "database is locked" immediately instead of waiting for the busy timeout.
        conn.exec_driver_sql("BEGIN IMMEDIATE")
