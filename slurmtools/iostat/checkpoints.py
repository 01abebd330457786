"""Checkpoint events: a job marks its saves and loads (`slurmtools checkpoint begin|end`), the epilog turns each
begin/end pair into an event with its duration, bytes (given, or from the mount's own counters), achieved
bandwidth and utilisation against the filesystem's nominal bandwidth (`[io.filesystems."/mount"]`).

The job writes its marks to `/tmp/slurmtools-ckpt.JOB.UID.jsonl` (appended as the job's user; a file another user
made there is refused); the epilog, as root, reads it only if it is a regular file of the job's user, no link,
at most 1 MiB, then removes it. The marks are the job's own word: they go to the ledger, never near a drain.
"""

from __future__ import annotations

import json
import os
import stat
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slurmtools.iostat.mountstats import Mount

MAX_BYTES = 1 << 20
KINDS = ("save", "load")


class CheckpointError(RuntimeError):
    """A mark cannot be written (not in a job, a foreign file in the way)."""


def marks_path(job_id: str, uid: int) -> str:
    return f"/tmp/slurmtools-ckpt.{job_id}.{uid}.jsonl"


def _mount_of(path: str, mounts: list[Any]) -> Any | None:
    """The NFS mount holding PATH (the longest mount point that is a prefix of it)."""
    real = os.path.realpath(path)
    best = None
    for m in mounts:
        point = m.mountpoint.rstrip("/") or "/"
        if (real == point or real.startswith(point + "/") or point == "/") and (
                best is None or len(point) > len(best.mountpoint)):
            best = m
    return best


def mount_counters(mount: Mount) -> dict[str, Any]:
    """What a mark keeps of its mount: bytes read and written, and the READ/WRITE RPCs' counts and times (so a
    checkpoint gets its own queue time and RTT per RPC, the study's signal of a saturated client slot table)."""
    b = mount.bytes
    out: dict[str, Any] = {"mountpoint": mount.mountpoint, "device": mount.device,
                           "read": b.get("normal_read", 0) + b.get("direct_read", 0),
                           "write": b.get("normal_write", 0) + b.get("direct_write", 0)}
    for op in ("READ", "WRITE"):
        st = mount.ops.get(op)
        if st:
            out[op] = {k: int(st[k]) for k in ("ops", "queue_ms", "rtt_ms", "execute_ms") if k in st}
    return out


def rpc_window(begin: dict[str, Any] | None, end: dict[str, Any] | None, op: str) -> dict[str, Any]:
    """Mean queue time, RTT and execute time per READ or WRITE RPC between two marks on one mount."""
    a, b = (begin or {}).get(op), (end or {}).get(op)
    if not a or not b or "ops" not in a or "ops" not in b:
        return {}
    ops = int(b["ops"]) - int(a["ops"])
    if ops <= 0:
        return {"rpcs": max(ops, 0)}
    per = {k: (int(b[k]) - int(a[k])) / ops if k in a and k in b else None     # missing: a wrapped counter
           for k in ("queue_ms", "rtt_ms", "execute_ms")}
    return {"rpcs": ops, "queue_ms_per_op": per["queue_ms"], "rtt_ms_per_op": per["rtt_ms"],
            "execute_ms_per_op": per["execute_ms"]}


def mark(event: str, kind: str, path: str, nbytes: int | None, env: dict[str, str], mountstats: str,
         now: float | None = None) -> dict[str, Any]:
    """Append one begin/end mark for the current job; returns it. Raises CheckpointError."""
    from slurmtools.iostat.mountstats import MountstatsError, read

    job_id = env.get("SLURM_JOB_ID", "")
    if not job_id.isdigit():
        raise CheckpointError("not inside a Slurm job (SLURM_JOB_ID is not set)")
    if kind not in KINDS or event not in ("begin", "end"):
        raise CheckpointError(f"kind must be save or load, got {kind!r}")
    record: dict[str, Any] = {"event": event, "kind": kind, "path": os.path.abspath(path), "time": now or time.time(),
                              "node": env.get("SLURMD_NODENAME") or os.uname().nodename, "bytes": nbytes}
    try:
        mount = _mount_of(path, read(mountstats))
    except (OSError, MountstatsError):
        mount = None
    if mount is not None:
        record["mount"] = mount_counters(mount)
    target = marks_path(job_id, os.getuid())
    try:
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise CheckpointError(f"cannot write {target}: {exc.strerror}") from None
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            raise CheckpointError(f"{target} is not yours: refusing to write marks into it")
        fh.write(json.dumps(record) + "\n")
    return record


def read_marks(job_id: int, uid: int) -> list[dict[str, Any]]:
    """The job's marks (the epilog, as root): only a regular file of the job's user, no link; removed after."""
    from slurmtools.fsutil import read_safely

    path = marks_path(str(job_id), uid)
    try:
        data, _ = read_safely(path, MAX_BYTES, owners=(uid,), whole=True)
    except OSError:
        return []
    try:
        os.unlink(path)
    except OSError:
        pass
    out = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        mark = clean_mark(record)
        if mark is not None:
            out.append(mark)
    return out


#: A counter of a mount (bytes, RPCs, milliseconds) the job may quote: a non-negative 64-bit integer.
MAX_COUNTER = (1 << 63) - 1
#: Epoch times a mark may give (2000 .. 2200); the epilog narrows them to the attempt's window.
EPOCH_RANGE = (946684800.0, 7258118400.0)


def _counter(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNTER else None


def _text(value: object, limit: int = 4096) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def clean_mark(record: object) -> dict[str, Any] | None:
    """One mark as the job wrote it -> the fields we read, each of its type and within bounds (a time that is
    NaN, infinite, 1e300 or out of 2000..2200 is no mark; a size or counter out of bounds is left out)."""
    from slurmtools import bounds

    if not isinstance(record, dict) or record.get("event") not in ("begin", "end") or record.get("kind") not in KINDS:
        return None
    t = bounds.finite(record.get("time") if not isinstance(record.get("time"), str) else None, *EPOCH_RANGE)
    if t is None:
        return None
    nbytes = _counter(record.get("bytes"))
    out: dict[str, Any] = {"event": record["event"], "kind": record["kind"], "time": t,
                           "path": _text(record.get("path")),
                           "bytes": nbytes if nbytes is not None and nbytes <= bounds.MAX_BYTES else None}
    mount = record.get("mount")
    if isinstance(mount, dict) and isinstance(mount.get("mountpoint"), str):
        m: dict[str, Any] = {"mountpoint": _text(mount["mountpoint"]), "device": _text(mount.get("device"))}
        for key in ("read", "write"):
            m[key] = _counter(mount.get(key))
        for op in ("READ", "WRITE"):
            st = mount.get(op)
            if isinstance(st, dict):
                counters = {k: _counter(st.get(k)) for k in ("ops", "queue_ms", "rtt_ms", "execute_ms")}
                if None not in counters.values():
                    m[op] = counters
        out["mount"] = m
    return out


def pair(marks: list[dict[str, Any]], filesystems: dict[str, dict[str, Any]],
         window: tuple[float, float] | None = None) -> list[dict[str, Any]]:
    """Begin/end pairs (per kind, in order) -> events with duration, bytes, bandwidth and utilisation. MARKS as
    `clean_mark` gives them; WINDOW: (earliest, latest) time a mark may carry (the attempt's), others are left out."""
    open_: dict[str, dict[str, Any]] = {}
    events = []
    if window is not None:
        marks = [m for m in marks if window[0] <= m["time"] <= window[1]]
    for m in sorted(marks, key=lambda r: r["time"]):
        if m["event"] == "begin":
            open_[m["kind"]] = m
            continue
        begin = open_.pop(m["kind"], None)
        if begin is None:
            continue
        seconds = max(1e-6, float(m["time"]) - float(begin["time"]))
        nbytes, source = m.get("bytes") if isinstance(m.get("bytes"), int) else None, "given"
        mount = (m.get("mount") or {}).get("mountpoint")
        key = "write" if m["kind"] == "save" else "read"
        if nbytes is None and m.get("mount") and begin.get("mount") and begin["mount"].get("mountpoint") == mount \
                and m["mount"].get(key) is not None and begin["mount"].get(key) is not None:
            nbytes, source = max(0, int(m["mount"][key]) - int(begin["mount"][key])), "mountstats"
        rpc: dict[str, Any] = {}
        if m.get("mount") and begin.get("mount") and begin["mount"].get("mountpoint") == mount:
            rpc = rpc_window(begin["mount"], m["mount"], "WRITE" if m["kind"] == "save" else "READ")
        gbps = nbytes / seconds / 1e9 if nbytes is not None else None   # GB/s, as storage is quoted
        nominal = (filesystems.get(mount or "") or {}).get("write_gbps" if m["kind"] == "save" else "read_gbps")
        events.append({"kind": m["kind"], "path": m.get("path") or begin.get("path"), "mountpoint": mount,
                       "start": begin["time"], "end": m["time"], "seconds": seconds, "bytes": nbytes,
                       "bytes_source": source if nbytes is not None else None, "gbytes_per_s": gbps,
                       "utilisation": gbps / float(nominal) if gbps is not None and nominal else None,
                       "nominal_gbps": float(nominal) if nominal else None, "source": "marks",
                       "rpcs": rpc.get("rpcs"), "queue_ms_per_op": rpc.get("queue_ms_per_op"),
                       "rtt_ms_per_op": rpc.get("rtt_ms_per_op")})
    return events
