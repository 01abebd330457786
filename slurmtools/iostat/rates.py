"""Two mountstats readings of one mount -> what the window looked like, and what limits the mount.

Per mount and window: read and write throughput (the application's bytes from `bytes:`, and the bytes on the wire
from the READ/WRITE per-op counters), per operation the ops per second, mean round trip (RTT: sent to reply),
mean queue time (the request waiting in the client before it was sent) and mean execute time (queue + RTT +
reply processing), retransmissions and major timeouts; per transport the sends, the mean requests in flight
(req_u / sends), the mean backlog waiting for a free slot (bklog_u / sends) and the slot-table size.

The verdict: when the requests wait longer in the client's queue than on the wire (queue time > RTT for the
data operations), the mount is limited by its RPC slots, not by the server or the network: the study behind this
project saw exactly that on checkpoint writes from 60 nodes. Then the advice names the settings to look at.
"""

from __future__ import annotations

from typing import Any

from slurmtools.iostat.mountstats import BYTES_FIELDS, OP_FIELDS, XPRT_COUNTERS, Mount

DATA_OPS = ("READ", "WRITE")
#: What to look at when the client's RPC queue is the limit, each with where it is documented.
QUEUE_ADVICE = [
    {"setting": "nconnect=N (mount option, Linux 5.3+)",
     "why": "spreads the mount's RPCs over N TCP connections, each with its own slot table and send queue",
     "reference": "nfs(5), 'nconnect'"},
    {"setting": "sunrpc.tcp_max_slot_table_entries (module parameter; /proc/sys/sunrpc/tcp_max_slot_table_entries)",
     "why": "the most RPC slots one TCP transport may grow to; requests beyond it wait in the backlog",
     "reference": "Documentation/admin-guide/kernel-parameters.txt, 'sunrpc.tcp_max_slot_table_entries'"},
    {"setting": "rsize=1048576,wsize=1048576 (mount options)",
     "why": "fewer, larger READ/WRITE RPCs for the same bytes: less queueing per byte",
     "reference": "nfs(5), 'rsize=n' and 'wsize=n'"},
    {"setting": "the server's NFSv4.1 session slots",
     "why": "with NFSv4.1+, the server grants the client a number of session slots; a small grant caps the "
            "requests in flight whatever the client's settings",
     "reference": "RFC 8881 section 2.10.6 (slots and the session's sequence); the server's own documentation"},
]
RTT_ADVICE = [
    {"setting": "the server and the network path",
     "why": "the requests spend their time on the wire or in the server, not in the client's queue",
     "reference": "nfsiostat(8): 'avg RTT' against 'avg queue'"},
]


def _delta(after: int | None, before: int | None) -> int | None:
    """AFTER − BEFORE; None when either is missing (mountstats.parse leaves out a wrapped or garbage value)."""
    if after is None or before is None:
        return None
    return after - before if after >= before else after        # a counter that went back: the mount was remade


def _per(num: int | None, den: int | float | None) -> float | None:
    return None if num is None or not den else num / den


def _sum(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def window(before: Mount, after: Mount, seconds: float) -> dict[str, Any]:
    """The rates of one mount between two readings taken SECONDS apart."""
    if seconds <= 0:
        raise ValueError("the readings must be taken at least a moment apart")
    ops: dict[str, dict[str, float | None]] = {}
    for name, now in after.ops.items():
        was = before.ops.get(name)
        d = {k: _delta(now.get(k), was.get(k) if was is not None else 0) for k in OP_FIELDS}
        n = d["ops"]
        if not n:
            continue
        sent, recv, trans = d["bytes_sent"], d["bytes_recv"], d["trans"]
        ops[name] = {"ops": n, "ops_per_s": n / seconds, "rtt_ms": _per(d["rtt_ms"], n),
                     "queue_ms": _per(d["queue_ms"], n), "execute_ms": _per(d["execute_ms"], n),
                     "retransmissions": None if trans is None else max(0, trans - n),
                     "timeouts": d["timeouts"], "errors": d["errors"] if "errors" in now else 0,
                     "kb_per_op": None if sent is None or recv is None else (sent + recv) / n / 1024}
    t_now, t_was = after.transport_totals(), before.transport_totals()
    sends = _delta(t_now.get("sends"), t_was.get("sends"))
    transport = {"connections": len(after.transports), "proto": after.transports[0]["proto"] if after.transports
                 else None, "sends": sends, "sends_per_s": _per(sends, seconds),
                 "mean_in_flight": _per(_delta(t_now.get("req_u"), t_was.get("req_u")), sends),
                 "mean_backlog": _per(_delta(t_now.get("bklog_u"), t_was.get("bklog_u")), sends),
                 "max_slots": t_now.get("max_slots"),
                 "bad_xids": _delta(t_now.get("bad_xids"), t_was.get("bad_xids")),
                 "reconnects": _delta(t_now.get("connect_count"), t_was.get("connect_count"))}
    b_now, b_was = after.bytes, before.bytes
    app_read = _sum([_delta(b_now.get(k), b_was.get(k)) for k in ("normal_read", "direct_read")])
    app_write = _sum([_delta(b_now.get(k), b_was.get(k)) for k in ("normal_write", "direct_write")])
    wire_read = _delta(after.ops.get("READ", {}).get("bytes_recv"), before.ops.get("READ", {}).get("bytes_recv", 0))
    wire_write = _delta(after.ops.get("WRITE", {}).get("bytes_sent"),
                        before.ops.get("WRITE", {}).get("bytes_sent", 0))
    result = {"mount": after.mountpoint, "device": after.device, "fstype": after.fstype,
              "vers": after.opts.get("vers"), "seconds": seconds,
              "read_bytes": app_read, "write_bytes": app_write,
              "read_MBps": _per(app_read, seconds * 1e6), "write_MBps": _per(app_write, seconds * 1e6),
              "wire_read_MBps": _per(wire_read, seconds * 1e6), "wire_write_MBps": _per(wire_write, seconds * 1e6),
              "ops": ops, "transport": transport, "missing": list(after.notes)}
    result["verdict"] = verdict(result)
    return result


def since_mount(mount: Mount) -> dict[str, Any]:
    """One reading: the averages since the mount was made (`age` seconds ago; 1 s for a mount just made, as
    nfsiostat does). Every counter started at zero then. Raises ValueError when the age is missing."""
    if mount.age is None:
        raise ValueError(f"{mount.mountpoint}: no `age:` line: the averages since the mount need it")
    zero = Mount(device=mount.device, mountpoint=mount.mountpoint, fstype=mount.fstype, opts=mount.opts,
                 bytes=dict.fromkeys(BYTES_FIELDS, 0),
                 transports=[{"proto": t["proto"], **dict.fromkeys(XPRT_COUNTERS, 0)} for t in mount.transports])
    return window(zero, mount, float(mount.age or 1))


def verdict(result: dict[str, Any]) -> dict[str, Any]:
    """Which part limits the mount's data operations in this window, and what to look at."""
    data = [result["ops"][o] for o in DATA_OPS if o in result["ops"]
            and result["ops"][o]["queue_ms"] is not None and result["ops"][o]["rtt_ms"] is not None]
    n = sum(float(o["ops"] or 0) for o in data)
    unusable = [o for o in DATA_OPS if o in result["ops"] and result["ops"][o] not in data]
    if not n:
        why = ("the READ/WRITE times are missing (" + ", ".join(unusable) + ")") if unusable else \
            "no READ or WRITE in the window"
        return {"limit": None, "why": why, "advice": []}
    queue = sum(float(o["queue_ms"] or 0) * float(o["ops"] or 0) for o in data) / n
    rtt = sum(float(o["rtt_ms"] or 0) * float(o["ops"] or 0) for o in data) / n
    retrans = sum(int(o["retransmissions"] or 0) for o in data)
    backlog = result["transport"].get("mean_backlog")
    share = queue / (queue + rtt) if queue + rtt else 0.0
    out: dict[str, Any] = {"queue_ms": queue, "rtt_ms": rtt, "queue_share": share, "retransmissions": retrans}
    if queue > rtt:
        out.update(limit="client_rpc_queue",
                   why=f"requests waited {queue:.1f} ms in the client's RPC queue for {rtt:.1f} ms on the wire"
                       + (f"; {backlog:.1f} requests waiting for a slot on average" if backlog else ""),
                   advice=QUEUE_ADVICE)
    else:
        out.update(limit="server_or_network",
                   why=f"requests spent {rtt:.1f} ms on the wire and in the server, {queue:.1f} ms queued",
                   advice=RTT_ADVICE)
    if retrans:
        out["why"] += f"; {retrans} retransmissions (lost replies or a slow server)"
    if unusable:
        out["why"] += f"; {', '.join(unusable)} left out (times missing)"
    return out
