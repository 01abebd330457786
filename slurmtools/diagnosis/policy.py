"""The noise policy: the main source of false drains in the field.

* XIDs from before the last boot don't count.
* Repeats fold into one finding per (kind, GPU/device, XID) with a count (XID 45 storms on teardown,
  tens of thousands of XID 95 lines).
* XIDs 13, 31, 43, 45 that come with an application failure are application faults.
* On one GPU the most serious XID supersedes the others (45 after 79, 63 after 48...).
* An NFS server that answered again, or a link that came back, is a warning, not an error.
* A local disk's I/O errors above their rule's rate on one device drain: the device is failing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slurmtools.diagnosis.findings import Finding

if TYPE_CHECKING:
    from slurmtools.config import Config

APP_XIDS = frozenset({13, 31, 43, 45})


def after_last_boot(findings: list[Finding], boots: list[int]) -> list[Finding]:
    if not boots:
        return findings
    last = max(boots)
    return [f for f in findings if f.line is None or f.line >= last]


def _fold_key(f: Finding) -> tuple[object, ...]:
    if f.kind == "xid":
        return ("xid", f.pci, f.xid)
    device = f.details.get("device") or f.details.get("server") or f.details.get("sxid") or f.pci
    family = f.details.get("family") if f.details.get("unrecognised") else None   # one per unknown message
    return (f.kind, device, f.action, f.severity, f.details.get("link"), f.details.get("ok"), family)


def fold(findings: list[Finding]) -> list[Finding]:
    out: dict[tuple[object, ...], Finding] = {}
    for f in findings:
        key = _fold_key(f)
        if key in out:
            first = out[key]
            first.count += f.count
            first.details["last_line"] = f.line
        else:
            out[key] = f
    return list(out.values())


def apply(findings: list[Finding], boots: list[int], app_failed: bool) -> list[Finding]:
    findings = after_last_boot(findings, boots)
    _recoveries(findings)
    findings = fold(findings)
    for f in findings:
        _disk_rate(f)
        if f.kind == "xid" and f.xid in APP_XIDS and app_failed:
            f.category = "application"
            f.action = "none" if f.xid == 45 else "restart_app"
            f.severity = "warning"
            f.details["why"] = "XID that comes with an application failure"
    by_gpu: dict[str | None, list[Finding]] = {}
    for f in findings:
        if f.kind == "xid":
            by_gpu.setdefault(f.pci, []).append(f)
    for group in by_gpu.values():
        top = max(group, key=lambda f: (f.rank(), f.line or 0))
        for f in group:
            if f is not top and f.rank() < top.rank():
                f.details["superseded_by"] = top.xid
                f.severity = "info"
    return findings


def _disk_rate(f: Finding) -> None:
    """A local disk's I/O errors above their rule's rate (`rate`, per device, in the window) mean a failing device:
    the node leaves service (the kernel's own lines only; a single error or a few stay a warning)."""
    rate = f.details.get("rate")
    if f.kind == "disk" and f.trust == "kernel" and isinstance(rate, dict) and rate.get("exceeded") \
            and f.action == "investigate":
        f.action, f.severity, f.details["why"] = "drain_node", "critical", "I/O errors on one device above the rate"


def _last(f: Finding) -> int:
    return int(f.details.get("last_line") or f.line or 0)


def _recoveries(findings: list[Finding]) -> None:
    """An NFS server that came back, or a link that came up again, downgrades what came before; three or more
    downs of one link (repeats counted) are a flapping link."""
    last_ok: dict[object, int] = {}
    last_up: dict[object, int] = {}
    for f in findings:
        if f.kind == "nfs" and f.details.get("ok"):
            key = f.details.get("server")
            last_ok[key] = max(last_ok.get(key, 0), _last(f))
        if f.kind == "ib" and f.details.get("link") == "up":
            key = f.details.get("device")
            last_up[key] = max(last_up.get(key, 0), _last(f))
    downs: dict[object, list[Finding]] = {}
    for f in findings:
        if f.kind == "nfs" and not f.details.get("ok") and "server" in f.details \
                and last_ok.get(f.details["server"], -1) > _last(f):
            f.severity, f.details["recovered"] = "warning", True
        if f.kind == "ib" and f.details.get("link") == "down":
            downs.setdefault(f.details.get("device"), []).append(f)
            if last_up.get(f.details.get("device"), -1) > _last(f):
                f.severity, f.action, f.details["recovered"] = "warning", "investigate", True
    for group in downs.values():
        total = sum(f.count for f in group)
        if total >= 3:  # flapping
            for f in group:
                f.severity, f.action, f.details["flapping"] = "error", "drain_node", total


def summary(findings: list[Finding], cfg: Config | None = None) -> Finding | None:
    """The most serious node fault (the drain reason), if any (CFG: its `controller.node_fault_actions`)."""
    from slurmtools.diagnosis.faults import is_node_fault, node_fault_actions

    actions = node_fault_actions(cfg)
    node = [f for f in findings if is_node_fault(f, cfg, actions=actions)]
    return max(node, key=lambda f: (f.rank(), -(f.line or 0))) if node else None
