"""Kernel-log sources, read for one job's window only.

An epilog's cost must follow the log written during the job, not the log's size. So the prolog
records a marker (`mark`) when the job starts on the node, and the epilog reads from it:

* `file:/path`: the byte offset and inode at job start; a rotated file (new inode) is read from its
  start. Without a marker, only the last `max_bytes` are read.
* `kmsg`: /dev/kmsg records whose monotonic stamp is at or after the job's start (the ring buffer is
  bounded, a few MB at most).
* `journal`: `journalctl -k` since the job's start time (the journal is indexed by time).
"""

from __future__ import annotations

import errno
import json
import os
import time

from slurmtools._plain import Plain

TYPE_CHECKING = False  # typing for the type checker only: it costs ~7 ms of every prolog (docs/performance.md)
if TYPE_CHECKING:
    from typing import BinaryIO

    from slurmtools.config import Config

DEFAULT_MAX_BYTES = 64 << 20


class SourceError(RuntimeError):
    pass


def read_input(path: str, max_bytes: int, timeout: float, *, stream: bool = False,
               stdin: BinaryIO | None = None) -> tuple[bytes, bool]:
    """The newest MAX_BYTES of a log given by hand (PATH, or "-" for STDIN): (bytes, whether older bytes were
    left out). A regular file is read from its tail; standard input (`dmesg | slurmtools diagnose
    --kernel-log -`) and, with STREAM, a named FIFO or device are read to their end keeping the newest part,
    never for longer than TIMEOUT seconds. Raises SourceError."""
    import select
    import stat
    import time

    if path == "-":
        try:
            fileno = stdin.fileno() if stdin is not None else 0
        except (AttributeError, OSError, ValueError):    # an in-memory stdin (tests): read it, bounded
            data = stdin.read()  # type: ignore[union-attr]  # only a given STDIN raises above
            return bytes(data[-max_bytes:]), len(data) > max_bytes
        stream = True
    try:
        fd = fileno if path == "-" else os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise SourceError(f"{path}: is a directory")
        if stat.S_ISREG(st.st_mode):
            start = max(0, st.st_size - max_bytes)
            os.lseek(fd, start, os.SEEK_SET)
            chunks, left = [], max_bytes
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks), start > 0
        if not stream:
            what = "stdin" if path == "-" else path
            raise SourceError(f"{what}: not a regular file (a pipe or device); give --stream to read it "
                              f"(its newest {max_bytes} bytes, for at most {timeout:g} s)")
        os.set_blocking(fd, False)
        buf, cut = bytearray(), False
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SourceError(f"{path}: no end after {timeout:g} s (diagnosis.time_budget); nothing read")
            ready, _, _ = select.select([fd], [], [], min(remaining, 1.0))
            if not ready:
                continue
            try:
                chunk = os.read(fd, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                return bytes(buf), cut
            buf += chunk
            if len(buf) > max_bytes:
                del buf[: len(buf) - max_bytes]
                cut = True
    finally:
        if path != "-":
            os.close(fd)


class Marker(Plain):
    def __init__(self, source: str, time: float, mono: float, inode: int | None = None,
                 offset: int | None = None) -> None:
        self.source = source
        self.time = time            # wall clock at job start (epoch seconds)
        self.mono = mono            # CLOCK_MONOTONIC at job start (what kmsg stamps use)
        self.inode = inode
        self.offset = offset

    def to_json(self) -> str:
        return json.dumps(vars(self))


def mark(source: str) -> Marker:
    """Where this source stands now (cheap: one stat for a file)."""
    marker = Marker(source=source, time=time.time(), mono=time.clock_gettime(time.CLOCK_MONOTONIC))
    if source.startswith("file:"):
        try:
            st = os.stat(source[5:])
            marker.inode, marker.offset = st.st_ino, st.st_size
        except OSError:
            marker.inode, marker.offset = None, 0
    return marker


def save_marker(state_dir: str, job_id: int, node: str, marker: Marker) -> None:
    """Keep MARKER for the job's epilog on this node (jobstate owns the folder). Raises OSError."""
    from slurmtools import jobstate

    jobstate.write(state_dir, job_id, node, "marker", marker.to_json())


def load_marker(state_dir: str, job_id: int, node: str) -> Marker | None:
    """The job's marker on this node; None when there is none or it is not one (not ours, not a marker)."""
    from slurmtools import jobstate

    text = jobstate.read(state_dir, job_id, node, "marker")
    if text is None:
        return None
    try:
        raw = json.loads(text)
        marker = Marker(source=str(raw["source"]), time=float(raw["time"]), mono=float(raw["mono"]),
                        inode=raw.get("inode"), offset=raw.get("offset"))
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None
    if not all(v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)
               for v in (marker.inode, marker.offset)):
        return None
    return marker


def record_job_start(cfg: Config, job_id: int | None, node: str) -> None:
    """At job start (the prolog): remember where this node's kernel log stands for the job's epilog."""
    if job_id is not None:
        ncfg = cfg.node_for(node)
        save_marker(ncfg.state_dir, job_id, node, mark(ncfg.kernel_log))


def read_window(source: str, marker: Marker | None, *, max_bytes: int = DEFAULT_MAX_BYTES,
                timeout: float = 10.0) -> tuple[bytes, dict[str, object]]:
    """The log written since the marker, at most max_bytes (the newest), with how it was read."""
    if source.startswith("file:"):
        return _read_file(source[5:], marker, max_bytes)
    if source == "kmsg":
        return _read_kmsg(marker, max_bytes, timeout)
    if source == "journal":
        return _read_journal(marker, max_bytes, timeout)
    raise SourceError(f"unknown kernel log source {source!r} (kmsg, journal, file:/path)")


def _read_file(path: str, marker: Marker | None, max_bytes: int) -> tuple[bytes, dict[str, object]]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise SourceError(f"cannot read kernel log {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        ino = os.fstat(fh.fileno()).st_ino
        if marker is not None and marker.inode == ino and (marker.offset or 0) <= size:
            start, how = marker.offset or 0, "since job start"
        elif marker is not None and marker.inode is not None:
            start, how = 0, "file replaced since job start"
        else:
            start, how = max(0, size - max_bytes), "tail"
        if size - start > max_bytes:
            start, how = size - max_bytes, how + ", cut to max_bytes"
        fh.seek(start)
        data = fh.read(size - start)
    if start > 0 and (how == "tail" or how.endswith("max_bytes")):
        data = data[data.find(b"\n") + 1:]  # drop the partial first line
    return data, {"source": f"file:{path}", "from": start, "bytes": len(data), "how": how}


def _read_kmsg(marker: Marker | None, max_bytes: int, timeout: float) -> tuple[bytes, dict[str, object]]:
    since_us = int(marker.mono * 1e6) if marker else 0
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise SourceError(f"cannot open /dev/kmsg: {exc.strerror}") from None
    out: list[bytes] = []
    size = 0
    deadline = time.monotonic() + timeout
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        while time.monotonic() < deadline:
            try:
                rec = os.read(fd, 8192)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # overwritten while we read: go on with the next
                    continue
                raise
            if not rec:
                break
            head, _, msg = rec.partition(b";")
            fields = head.split(b",")
            if len(fields) < 3 or int(fields[2]) < since_us:
                continue
            usec = int(fields[2])
            line = b"[%5d.%06d] " % (usec // 1_000_000, usec % 1_000_000) + msg.split(b"\n", 1)[0]
            out.append(line)
            size += len(line) + 1
            while size > max_bytes and out:
                size -= len(out.pop(0)) + 1
    finally:
        os.close(fd)
    data = b"\n".join(out)
    return data, {"source": "kmsg", "since_us": since_us, "bytes": len(data), "records": len(out)}


def _read_journal(marker: Marker | None, max_bytes: int, timeout: float) -> tuple[bytes, dict[str, object]]:
    import subprocess

    since = f"@{int(marker.time)}" if marker else "-1h"
    try:
        proc = subprocess.run(["journalctl", "-k", "-o", "short-monotonic", "--no-pager", "-q", "--since", since],
                              capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourceError(f"journalctl -k failed: {exc}") from None
    data = proc.stdout[-max_bytes:]
    return data, {"source": "journal", "since": since, "bytes": len(data)}
