"""The local spool: durable, crash-safe event files that the shipper moves into the database.

Layout under the spool directory::

    tmp/      files being written (never read by the shipper; stale ones are removed)
    pending/  complete batches: one file per write, one JSON event per line, <time_ns>-<key>.json
    bad/      files or events that could not be parsed or stored, kept for an admin, never blocking others

A file appears in pending/ only by rename(2) after its bytes were fsynced, so a writer killed at
any point leaves either nothing in pending/ or a complete batch. Each event keeps its own
idempotency key, so a batch shipped twice is still one row per event. Stdlib only: hooks import this.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime

from slurmtools._plain import Plain
from slurmtools.ledger.fields import FIELDS, check
from slurmtools.timeutil import aware

TYPE_CHECKING = False  # typing for the type checker only: it costs ~7 ms of every prolog (docs/performance.md)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

VERSION = 1
#: The kinds of event, each defined in ledger/fields.py (its fields) and ledger/events.py (a finding's values).
EVENT_TYPES = frozenset(FIELDS)
STALE_TMP_S = 3600.0
#: A spool file larger than this is refused unread (a hook's batch is a few kB).
MAX_FILE_BYTES = 64 << 20


class SpoolError(RuntimeError):
    """The spool cannot take the event (directory missing and not creatable, disk full...)."""


def now() -> datetime:
    return datetime.now(UTC)


def make_key(*parts: object) -> str:
    """A deterministic idempotency key from the parts that make an event unique."""
    text = "\x1f".join("" if p is None else str(p) for p in parts)
    import hashlib  # lazily: a prolog that passes never needs it

    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:40]


def finite_only(value: object, where: str = "", nulled: list[str] | None = None) -> Any:
    """VALUE with every NaN and infinity (in lists and dicts, at any depth) replaced by None; the places replaced
    are appended to NULLED ("data.seconds", "data.details.rtt[2]"). JSON has no such numbers, and the ledger must
    not hold them (a median of `inf` is no median)."""
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            if nulled is not None:
                nulled.append(where or "value")
            return None
        return value
    if isinstance(value, dict):
        return {k: finite_only(v, f"{where}.{k}" if where else str(k), nulled) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_only(v, f"{where}[{i}]", nulled) for i, v in enumerate(value)]
    return value


class Event(Plain):
    """One ledger event. `key` makes shipping idempotent; a random one is made if none is given. DATA holds only
    the fields its TYPE defines (ledger/fields.py): anything else is refused here (ValueError), where it is
    written. An event read back from a spool file is checked where it is stored (ledger/store.py), so that one
    bad event goes to bad/ alone, with the reason."""

    def __init__(self, type: str, data: dict[str, Any], cluster: str = "default",
                 time: datetime | None = None, key: str = "", *, checked: bool = True) -> None:
        self.type = str(type)
        self.data = data
        self.cluster = cluster
        self.time = now() if time is None else time
        self.key = key
        if self.type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {self.type!r}")
        if checked:
            check(self.type, data)
            if self.type == "finding":
                from slurmtools.ledger.events import check_finding

                check_finding(data)
        if not self.key:
            self.key = os.urandom(16).hex()  # what uuid4().hex is, without importing uuid

    def to_json(self) -> str:
        """One line of JSON (strict: no NaN or infinity). A non-finite number in the data is written as null, and
        the event says where (`data.nonfinite`): the event is kept, the number is not."""
        body = {"v": VERSION, "type": self.type, "key": self.key, "cluster": self.cluster,
                "time": self.time.isoformat(), "data": self.data}
        try:
            return json.dumps(body, default=str, separators=(",", ":"), allow_nan=False)
        except ValueError:
            nulled: list[str] = []
            data = finite_only(self.data, "", nulled)
            body["data"] = {**data, "nonfinite": nulled} if nulled else data
            return json.dumps(body, default=str, separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> Event:
        raw = json.loads(text)
        if not isinstance(raw, dict) or raw.get("v") != VERSION:
            raise ValueError("not a version-1 slurmtools event")
        when = aware(raw["time"])
        if not isinstance(raw.get("data"), dict) or not raw.get("key"):
            raise ValueError("event lacks data or key")
        return cls(type=raw["type"], data=raw["data"], cluster=str(raw.get("cluster") or "default"),
                   time=when, key=str(raw["key"]), checked=False)


class Spool:
    """Paths are strings joined with os.path on the writing side: hooks spool before every job, and
    pathlib costs them ~6 ms to import. The readers' side hands out `Path` objects."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.fspath(root)
        self._tmp = os.path.join(self.root, "tmp")
        self._pending = os.path.join(self.root, "pending")
        self._bad = os.path.join(self.root, "bad")

    @property
    def tmp(self) -> Path:
        from pathlib import Path

        return Path(self._tmp)

    @property
    def pending(self) -> Path:
        from pathlib import Path

        return Path(self._pending)

    @property
    def bad(self) -> Path:
        from pathlib import Path

        return Path(self._bad)

    def ensure(self) -> None:
        """Make the spool's directories if missing; refuse a spool that another user could write (its
        events are believed as root's), or whose directories are symlinks. Raises SpoolError."""
        from slurmtools.fsutil import check_trusted, trusted_dir

        try:
            trusted_dir(self.root, 0o750)
            for d in (self._tmp, self._pending, self._bad):
                try:
                    os.mkdir(d, 0o750)
                except FileExistsError:
                    pass
                check_trusted(d, what="directory", parents=False)
        except OSError as exc:
            raise SpoolError(f"spool {self.root}: {exc.strerror or exc}") from None

    def write(self, event: Event) -> str:
        """Durably spool one event; returns its path in pending/. Raises SpoolError."""
        return self.write_many([event])

    def write_many(self, events: list[Event]) -> str:
        """Durably spool a batch (say, one job's findings) as one file: written, fsynced, renamed
        into pending/, directory fsynced. When this returns the batch survives a crash."""
        if not events:
            raise ValueError("nothing to spool")
        self.ensure()
        name = f"{time.time_ns():020d}-{events[0].key[:40]}.json"
        tmp = os.path.join(self._tmp, f"{name}.{os.getpid()}")
        data = "".join(e.to_json() + "\n" for e in events).encode()
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            final = os.path.join(self._pending, name)
            os.rename(tmp, final)
            _fsync_dir(self._pending)
            return final
        except OSError as exc:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise SpoolError(f"spool {self.root}: cannot write: {exc.strerror}") from None

    def pending_files(self) -> list[Path]:
        """Complete events, oldest first."""
        try:
            return sorted(p for p in self.pending.iterdir() if p.suffix == ".json")
        except FileNotFoundError:
            return []

    def read(self, path: Path) -> list[Event]:
        """The events of one spool file. Raises ValueError if any line is not an event, or if the file is
        not a regular file written by us (root): a symlink, a FIFO or a file another user planted."""
        import errno

        from slurmtools.fsutil import UntrustedPath, read_safely

        try:
            data, _ = read_safely(str(path), MAX_FILE_BYTES, owners=(0, os.geteuid()), whole=True)
        except UntrustedPath as exc:
            raise ValueError(str(exc).removeprefix(f"{path}: ")) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ValueError("a symbolic link; refused") from None
            raise
        text = data.decode("utf-8")
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if not lines:
            raise ValueError("empty spool file")
        return [Event.from_json(ln) for ln in lines]

    def done(self, path: Path) -> None:
        try:
            path.unlink()
        except FileNotFoundError:
            pass  # another flusher shipped it too (idempotent)

    def quarantine_event(self, event: Event, why: str) -> None:
        """Keep one event the database rejected in bad/, with the reason; its batch ships on."""
        self.ensure()
        name = f"{time.time_ns():020d}-{event.key[:40]}.json"
        _write_new(os.path.join(self._bad, name), event.to_json() + "\n")
        _write_new(os.path.join(self._bad, name + ".why"), why + "\n")

    def quarantine(self, path: Path, why: str) -> None:
        """Move an unreadable file aside, with the reason next to it; it never blocks others."""
        self.ensure()
        name = path.name           # rename(2) replaces a link of that name; it never writes through it
        try:
            os.rename(path, os.path.join(self._bad, name))
        except FileNotFoundError:
            return
        _write_new(os.path.join(self._bad, name + ".why"), why + "\n")

    def clean_tmp(self, older_than: float = STALE_TMP_S) -> int:
        """Remove temporary files left by writers that died mid-write."""
        removed = 0
        cutoff = time.time() - older_than
        try:
            entries = list(self.tmp.iterdir())
        except FileNotFoundError:
            return 0
        for p in entries:
            try:
                if p.stat().st_mtime < cutoff:
                    p.unlink()
                    removed += 1
            except FileNotFoundError:
                pass
        return removed

    def counts(self) -> dict[str, int]:
        def n(d: Path, suffix: str | None = None) -> int:
            try:
                return sum(1 for p in d.iterdir() if suffix is None or p.suffix == suffix)
            except FileNotFoundError:
                return 0

        return {"pending": n(self.pending, ".json"), "tmp": n(self.tmp), "bad": n(self.bad, ".json")}


#: In a node's state_dir (not on the spool's filesystem): one line per batch a hook could not spool, until the
#: next batch that can be spooled reports them in the ledger (a node_state row, action `spool_loss`).
LOSSES = "spool-lost.jsonl"


def record_or_report(spool_dir: str | os.PathLike[str], events: list[Event], who: str,
                     state_dir: str | None = None, node: str | None = None) -> bool:
    """Spool EVENTS as one batch, for a hook that has nowhere else durable to write. If the spool fails (a full
    disk), say so where the admin looks (a hook's output lands in the slurmd log), count the loss in STATE_DIR,
    and go on; the next batch that can be spooled carries the count into the ledger, once."""
    losses = os.path.join(state_dir, LOSSES) if state_dir else None
    reported = _read_new(losses) if losses else ""
    batch = list(events)
    if reported and events:
        batch.append(loss_event(reported, node or "", who, events[0].cluster))
    try:
        Spool(spool_dir).write_many(batch)
    except SpoolError as exc:
        print(f"slurmtools {who}: cannot spool {len(events)} event(s): {exc}")
        if losses:
            _note_loss(losses, who, events, str(exc))
        return False
    if reported and losses:
        _forget(losses, reported)
    return True


def loss_event(text: str, node: str, who: str, cluster: str) -> Event:
    """The losses noted in TEXT (lines of _note_loss) as one node_state event; its key is the text's, so the
    same losses reported twice (two hooks at once) are one row."""
    lines = []
    for ln in text.splitlines():
        try:
            lines.append(json.loads(ln))
        except ValueError:
            continue
    count = sum(int(x.get("events") or 0) for x in lines if isinstance(x, dict))
    times = [float(x["t"]) for x in lines if isinstance(x, dict) and isinstance(x.get("t"), int | float)]
    first = datetime.fromtimestamp(min(times), UTC).isoformat(timespec="seconds") if times else "?"
    last = datetime.fromtimestamp(max(times), UTC).isoformat(timespec="seconds") if times else "?"
    error = next((str(x.get("error")) for x in reversed(lines) if isinstance(x, dict) and x.get("error")), "")
    reason = (f"{count} event(s) in {len(lines)} batch(es) could not be spooled and are lost "
              f"({first} .. {last}): {error}")[:2000]
    return Event("node_state", {"node": node, "action": "spool_loss", "actor": who, "reason": reason,
                                "applied": False, "details": {"events": count, "batches": len(lines),
                                                              "losses": lines[:50]}},
                 cluster=cluster, key=make_key("spool-loss", cluster, node, text))


def _note_loss(path: str, who: str, events: list[Event], error: str) -> None:
    types: dict[str, int] = {}
    for e in events:
        types[e.type] = types.get(e.type, 0) + 1
    line = json.dumps({"t": round(time.time(), 3), "who": who, "events": len(events), "types": types,
                       "error": error[:300]}, separators=(",", ":")) + "\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK, 0o640)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError as exc:
        print(f"slurmtools {who}: cannot count the loss in {path}: {exc.strerror or exc}")


def _read_new(path: str) -> str:
    """The losses not yet reported ("" when none: the usual case costs one failed open)."""
    from slurmtools.fsutil import read_safely

    try:
        data, _ = read_safely(path, 1 << 20, owners=(0, os.geteuid()), head=True)
    except OSError:
        return ""
    return data.decode("utf-8", "replace")


def _forget(path: str, reported: str) -> None:
    """Drop the reported losses; keep any noted since (another hook failing meanwhile)."""
    rest = _read_new(path)
    rest = rest[len(reported):] if rest.startswith(reported) else rest
    try:
        if rest.strip():
            tmp = f"{path}.{os.getpid()}"
            _write_new(tmp, rest)
            os.rename(tmp, path)
        else:
            os.unlink(path)
    except OSError:
        pass


def _write_new(path: str, text: str) -> None:
    """Write TEXT to PATH, replacing a file of ours but never writing through a symlink (O_NOFOLLOW)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o640)
    except OSError:
        return          # a link or FIFO planted under that name: the reason is lost, never root's file
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
