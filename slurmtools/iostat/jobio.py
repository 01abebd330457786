"""One job's NFS I/O on one node: a mountstats reading at job start (the prolog, next to the kernel-log marker)
and its delta at job end (the epilog), one `io` ledger event per job, node and mount.

The prolog's share is one read of the mountstats file, skipped without parsing when no NFS mount is in it; the
counters it keeps are the raw ones of the watched mounts (`[io] mounts`, or every NFS mount).
"""

from __future__ import annotations

import json
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from slurmtools.config import Config
    from slurmtools.iostat.mountstats import Mount


def watched(cfg: Config) -> list[Mount] | None:
    """The watched NFS mounts now, or None when there is none (or the file is not there)."""
    path = cfg.io.mountstats
    try:
        with open(path, "rb") as fh:
            head = fh.read(16 << 20)
    except OSError:
        return None
    if b"fstype nfs" not in head:
        return None                           # no NFS mount: nothing to parse
    from slurmtools.iostat.mountstats import parse

    wanted = set(cfg.io.mounts)
    mounts = [m for m in parse(head.decode("utf-8", "replace")) if not wanted or m.mountpoint in wanted]
    return mounts[: cfg.io.max_mounts] or None


def record_start(cfg: Config, job_id: int | None, node: str) -> bool:
    """At job start: keep the watched mounts' counters for the epilog. True if anything was kept."""
    if job_id is None:
        return False
    mounts = watched(cfg)
    if not mounts:
        return False
    from slurmtools import jobstate

    jobstate.write(cfg.state_dir(node), job_id, node, "io",
                   json.dumps({"time": time.time(), "mounts": [m.to_dict() for m in mounts]}))
    return True


def finish(cfg: Config, job_id: int | None, node: str) -> list[dict[str, Any]]:
    """At job end: the window of each mount kept at job start (one summary each); the start reading is removed.
    Nothing (an empty list) when the prolog kept none or no mount is left to compare."""
    from slurmtools import jobstate
    from slurmtools.iostat.mountstats import Mount
    from slurmtools.iostat.rates import window

    if job_id is None:
        return []
    text = jobstate.read(cfg.state_dir(node), job_id, node, "io", remove=True)
    try:
        start = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):
        return []
    if not isinstance(start, dict):
        return []
    now = watched(cfg) or []
    earlier = {}
    for raw in start.get("mounts", []):
        m = Mount(**{k: v for k, v in raw.items() if k in Mount.__dataclass_fields__})
        earlier[m.key] = m
    seconds = max(1e-3, time.time() - float(start.get("time", time.time())))
    out = []
    for m in now:
        if m.key in earlier:
            r = window(earlier[m.key], m, seconds)
            out.append(summary(r))
    return out


def summary(r: dict[str, Any]) -> dict[str, Any]:
    """A window's figures as the ledger keeps them (one row per job, node and mount)."""
    data_ops = [r["ops"][o] for o in ("READ", "WRITE") if o in r["ops"]]
    v = r["verdict"]
    return {"mountpoint": r["mount"], "device": r["device"], "seconds": r["seconds"],
            "read_bytes": int(r["read_bytes"] or 0), "write_bytes": int(r["write_bytes"] or 0),
            "read_ops": int(r["ops"].get("READ", {}).get("ops", 0)),
            "write_ops": int(r["ops"].get("WRITE", {}).get("ops", 0)),
            "rtt_ms": v.get("rtt_ms"), "queue_ms": v.get("queue_ms"),
            "retransmissions": int(sum(o["retransmissions"] or 0 for o in data_ops)),
            "mean_backlog": r["transport"].get("mean_backlog"), "limit": v.get("limit"),
            "details": {"fstype": r["fstype"], "vers": r["vers"], "transport": r["transport"],
                        "read_MBps": r["read_MBps"], "write_MBps": r["write_MBps"], "why": v.get("why"),
                        "missing": r.get("missing") or []}}
