"""/proc/self/mountstats -> per-mount counters, and two readings -> the rates between them.

The file (fs/nfs/super.c nfs_show_stats, net/sunrpc/stats.c rpc_clnt_show_stats and the transports'
print_stats) has, per NFS mount: `device SRV:/path mounted on /mnt with fstype nfs|nfs4 statvers=1.x`, then
`opts:`, `age:`, `caps:`, `sec:`, `events:` (27 counters), `bytes:` (8: normal/direct/server read and write
bytes, read and write pages), `RPC iostats version: 1.x  p/v: 100003/N (nfs)`, one `xprt:` line per transport
connection (several with nconnect), and `per-op statistics`: `OP: ops trans timeouts bytes_sent bytes_recv
queue_ms rtt_ms execute_ms [errors]` (the 9th counter since Linux 5.x). The `xprt:` fields depend on the transport
and the kernel, not on the printed version: tcp has 10 (srcport bind_count connect_count connect_time idle_time
sends recvs bad_xids req_u bklog_u) or 13 (+ max_slots sending_u pending_u), udp 7 or 10 (no connect fields),
rdma the first 10 of tcp and its own counters after them. `req_u` and `bklog_u` are sums, taken at each send, of
the requests in flight and of the requests waiting for a slot (the backlog): divided by the sends, the mean slot
use and the mean backlog. A garbled or truncated file gives MountstatsError naming the line, never a number.

Every field is read by its documented position: `bytes:` has 8 counters whatever the version (statvers 1.0 and
1.1); a per-op line has 8 counters under `RPC iostats version: 1.0` and 9 (+ errors) under 1.1 (either, for a
version not known here); any other count is a truncated or garbled line. The kernel prints unsigned 64-bit
counters; a value of 2^63 or more can only be a signed sum that went negative (a time sum that wrapped, e.g. an
ACCESS queue time of 18446743919241604546 ms) and one of more than 20 digits is not a counter at all: either is
treated as missing (its key is left out) and said so in the mount's `notes`, never turned into a figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NFS_TYPES = frozenset({"nfs", "nfs4"})
OP_FIELDS = ("ops", "trans", "timeouts", "bytes_sent", "bytes_recv", "queue_ms", "rtt_ms", "execute_ms", "errors")
BYTES_FIELDS = ("normal_read", "normal_write", "direct_read", "direct_write", "server_read", "server_write",
                "read_pages", "write_pages")
_COMMON = ("srcport", "bind_count", "connect_count", "connect_time", "idle_time", "sends", "recvs", "bad_xids",
           "req_u", "bklog_u")
XPRT_FIELDS: dict[str, tuple[tuple[str, ...], int]] = {   # proto -> (field names, the fewest a line may have)
    "tcp": ((*_COMMON, "max_slots", "sending_u", "pending_u"), 10),
    "udp": (("srcport", "bind_count", "sends", "recvs", "bad_xids", "req_u", "bklog_u", "max_slots", "sending_u",
             "pending_u"), 7),
    "rdma": ((*_COMMON, "read_chunks", "write_chunks", "reply_chunks", "total_rdma_request", "total_rdma_reply",
              "pullup_copy", "fixup_copy", "hardway_register", "failed_marshal", "bad_reply"), 10),
}
#: Transport counters that are sums over time (their rates matter); the rest are states or ports.
XPRT_COUNTERS = ("bind_count", "connect_count", "sends", "recvs", "bad_xids", "req_u", "bklog_u", "sending_u",
                 "pending_u")


#: Per-op counters by `RPC iostats version` (net/sunrpc/stats.c: 1.1 added the errors counter).
OPS_BY_VERSION = {"1.0": 8, "1.1": 9}
WRAPPED = 1 << 63
MAX_NOTES = 20


class MountstatsError(ValueError):
    """The text is not a readable mountstats file; the message names the line."""


@dataclass
class Mount:
    device: str
    mountpoint: str
    fstype: str
    statvers: str = ""
    opts: dict[str, str] = field(default_factory=dict)
    age: int | None = None
    events: tuple[int, ...] = ()
    bytes: dict[str, int] = field(default_factory=dict)
    rpc_version: str = ""
    transports: list[dict[str, Any]] = field(default_factory=list)   # {"proto": ..., field: value, ...}
    ops: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Values read as missing (wrapped or garbage), in words.
    notes: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.device} {self.mountpoint}"

    def transport_totals(self) -> dict[str, int]:
        """The transport counters summed over the mount's connections (nconnect)."""
        out: dict[str, int] = {}
        for t in self.transports:
            for name in XPRT_COUNTERS:
                if name in t:
                    out[name] = out.get(name, 0) + t[name]
            if "max_slots" in t:
                out["max_slots"] = max(out.get("max_slots", 0), t["max_slots"])
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "mountpoint": self.mountpoint, "fstype": self.fstype,
                "statvers": self.statvers, "opts": self.opts, "age": self.age, "bytes": self.bytes,
                "rpc_version": self.rpc_version, "transports": self.transports, "ops": self.ops, "notes": self.notes}

    def note(self, text: str) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append(text)
        elif len(self.notes) == MAX_NOTES:
            self.notes.append("more values treated as missing (not listed)")


def _ints(parts: list[str], where: str, names: tuple[str, ...] = (), mount: Mount | None = None) -> list[int | None]:
    """The counters of one line. A token that is not a whole number (or is negative, except the -1 some fields
    print for 'unset') makes the line unreadable; a wrapped or garbage value becomes None, noted on MOUNT."""
    values: list[int | None] = []
    for i, p in enumerate(parts):
        body = p[1:] if p.startswith("-") else p
        if not (body.isascii() and body.isdigit()):
            raise MountstatsError(f"{where}: expected numbers, got {' '.join(parts)[:80]!r}")
        if p.startswith("-"):
            if p != "-1":
                raise MountstatsError(f"{where}: negative counter {p[:24]}")
            values.append(-1)
            continue
        name = names[i] if i < len(names) else f"field {i + 1}"
        if len(p) > 20 or int(p) >= WRAPPED:
            what = "not a 64-bit counter" if len(p) > 20 or int(p) >> 64 else "a wrapped 64-bit value"
            shown = p if len(p) <= 24 else f"{p[:12]}...({len(p)} digits)"
            if mount is None:
                raise MountstatsError(f"{where}: {name} {shown} is {what}")
            mount.note(f"{where}: {name} {shown} is {what}: treated as missing")
            values.append(None)
            continue
        values.append(int(p))
    return values


def _known(names: tuple[str, ...], values: list[int | None]) -> dict[str, int]:
    """NAMES to VALUES by position, leaving out the missing ones."""
    return {k: v for k, v in zip(names, values, strict=False) if v is not None}


def parse(text: str, *, nfs_only: bool = True) -> list[Mount]:
    """Every mount in a mountstats text (NFS mounts only, unless NFS_ONLY is false). Raises MountstatsError."""
    if text and not text.endswith("\n"):
        # the kernel ends every line; a last line without its end was cut, and its last number may be too
        raise MountstatsError(f"line {text.count(chr(10)) + 1}: the file ends in the middle of a line (truncated)")
    mounts: list[Mount] = []
    current: Mount | None = None
    in_ops = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        where = f"line {number}"
        if not line:
            continue
        if raw.startswith("device "):
            parts = line.split()
            at = parts.index("with") if "with" in parts else -1
            if len(parts) < 7 or parts[2:4] != ["mounted", "on"] or at < 5 or parts[at + 1:at + 2] != ["fstype"] \
                    or len(parts) < at + 3:
                raise MountstatsError(f"{where}: not a `device X mounted on Y with fstype T` line: {line[:80]!r}")
            fstype = parts[at + 2]
            statvers = next((p.split("=", 1)[1] for p in parts[at + 3:] if p.startswith("statvers=")), "")
            current = Mount(device=parts[1], mountpoint=" ".join(parts[4:at]), fstype=fstype, statvers=statvers)
            in_ops = False
            if fstype in NFS_TYPES or not nfs_only:
                mounts.append(current)
            continue
        if current is None:
            raise MountstatsError(f"{where}: a counter line before any `device` line: {line[:80]!r}")
        if current.fstype not in NFS_TYPES:
            raise MountstatsError(f"{where}: statistics under a {current.fstype} mount, which has none")
        head, _, rest = line.partition(":")
        if line == "per-op statistics":
            in_ops = True
        elif head == "opts":
            current.opts = {k: v for k, _, v in (o.partition("=") for o in rest.strip().split(",") if o)}
        elif head == "age":
            current.age = _age(rest.split(), where)
        elif head == "events":
            current.events = tuple(v if v is not None else -1 for v in _ints(rest.split(), where, (), current))
        elif head == "bytes":
            values = _ints(rest.split(), where, BYTES_FIELDS, current)
            if len(values) != len(BYTES_FIELDS):
                raise MountstatsError(f"{where}: bytes: expected {len(BYTES_FIELDS)} counters, got {len(values)}")
            current.bytes = _known(BYTES_FIELDS, values)
        elif line.startswith("RPC iostats version:"):
            current.rpc_version = line.split()[3] if len(line.split()) > 3 else ""
        elif head == "xprt":
            current.transports.append(_xprt(rest.split(), where, current))
        elif in_ops and rest.strip() and rest.split()[0].lstrip("-").isdigit():
            op = _shown(head)
            values = _ints(rest.split(), f"{where}: {op}", OP_FIELDS, current)
            want = OPS_BY_VERSION.get(current.rpc_version)
            if len(values) not in ((want,) if want else (8, 9)):
                expected = (f"{want} counters (RPC iostats version {current.rpc_version})" if want
                            else "8 or 9 counters")
                raise MountstatsError(f"{where}: {op}: expected {expected}, got {len(values)} (truncated?)")
            current.ops[head] = _known(OP_FIELDS, values + [0] * (9 - len(values)))
        elif head in ("caps", "sec", "nfsv4", "impl_id", "fsc") or in_ops is False:
            continue                 # descriptive lines (and continuation lines of impl_id) carry no counters
        else:
            raise MountstatsError(f"{where}: unexpected line in per-op statistics: {line[:80]!r}")
    return mounts


def _shown(text: str) -> str:
    """TEXT for a message: printable ASCII only, at most 40 characters."""
    return "".join(c if " " <= c <= "~" else "?" for c in text[:40])


def _age(parts: list[str], where: str) -> int | None:
    """Seconds since the mount was made: a whole number >= 0 (a note may follow it), else the line is unreadable."""
    if not parts:
        return None
    p = parts[0]
    if not (p.isascii() and p.isdigit()):
        raise MountstatsError(f"{where}: age: {p[:24]!r} is not a number of seconds >= 0")
    if len(p) > 20 or int(p) >= WRAPPED:
        raise MountstatsError(f"{where}: age: {p[:24]}{'...' if len(p) > 24 else ''} is not a mount's age")
    return int(p)


def _xprt(parts: list[str], where: str, mount: Mount | None = None) -> dict[str, Any]:
    if not parts:
        raise MountstatsError(f"{where}: xprt: no transport")
    proto = parts[0]
    if proto not in XPRT_FIELDS:
        raise MountstatsError(f"{where}: xprt: unknown transport {proto!r}")
    names, fewest = XPRT_FIELDS[proto]
    values = _ints(parts[1:], f"{where}: xprt", names, mount)
    if len(values) < fewest:
        raise MountstatsError(f"{where}: xprt: {proto} needs at least {fewest} fields, got {len(values)} (truncated?)")
    out: dict[str, Any] = {"proto": proto, **_known(names, values)}
    if len(values) > len(names):
        out["more"] = values[len(names):]
    return out


def read(path: str = "/proc/self/mountstats", max_bytes: int = 16 << 20) -> list[Mount]:
    """Parse a mountstats file (one read). Raises MountstatsError, or OSError when it cannot be read."""
    with open(path, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise MountstatsError(f"{path}: larger than {max_bytes} bytes: not a mountstats file")
    try:
        return parse(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise MountstatsError(f"{path}: not text (byte {exc.start})") from None
