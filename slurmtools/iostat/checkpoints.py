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
from typing import Any

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


def mount_counters(mount: Any) -> dict[str, Any]:
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


def read_marks(job_id: str, uid: int) -> list[dict[str, Any]]:
    """The job's marks (the epilog, as root): only a regular file of the job's user, no link; removed after."""
    path = marks_path(job_id, uid)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != uid or st.st_size > MAX_BYTES:
            return []
        data = fh.read(MAX_BYTES)
    try:
        os.unlink(path)
    except OSError:
        pass
    out = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("event") in ("begin", "end") and record.get("kind") in KINDS \
                and isinstance(record.get("time"), (int, float)):
            out.append(record)
    return out


def pair(marks: list[dict[str, Any]], filesystems: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Begin/end pairs (per kind, in order) -> events with duration, bytes, bandwidth and utilisation."""
    open_: dict[str, dict[str, Any]] = {}
    events = []
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
        if nbytes is None and m.get("mount") and begin.get("mount") and begin["mount"].get("mountpoint") == mount:
            key = "write" if m["kind"] == "save" else "read"
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
