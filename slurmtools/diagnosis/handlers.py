"""Verdict functions a rule names with `handler = "..."`, where the verdict depends on what the line says
(the XID number through the catalog, an AER's severity, an MCE's correctability, a link's state).

Each takes (rule, match, line, ctx) and returns a Finding, or None for a marker (`boot`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from slurmtools.diagnosis import catalog
from slurmtools.diagnosis.findings import Finding
from slurmtools.diagnosis.lines import Line, pci
from slurmtools.diagnosis.rules import Rule

Handler = Callable[[Rule, "re.Match[str]", Line, dict[str, Any]], Finding | None]
_RECOVERY = {"none": "none", "reset": "reset_gpu", "reboot": "reboot_node", "drain": "drain_node"}


def finding(rule: Rule, m: re.Match[str], line: Line, **kw: object) -> Finding:
    """The rule's own verdict, with the match's named groups as details (`pci` normalised, `xid` as a number)."""
    groups = {k: v for k, v in m.groupdict().items() if v is not None}
    address = pci(groups.pop("pci", None))
    xid = groups.pop("xid", None)
    base: dict[str, Any] = {"kind": rule.kind, "category": rule.category, "action": rule.action,
                            "severity": rule.severity, "trust": "kernel" if rule.trust == "kernel" else rule.trust,
                            "message": line.message, "line": line.number, "pci": address, "time": line.stamp,
                            "xid": rule.xid if xid is None else int(xid), "details": {**groups, "rule": rule.name}}
    base.update(kw)
    return Finding(**base)


def plain(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    return finding(rule, m, line)


def boot(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> None:
    return None


def xid(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    groups = m.groupdict()
    number = int(groups["xid"]) if groups.get("xid") else (rule.xid or 79)
    entry = catalog.lookup(number, ctx.get("overrides"))
    action, category, severity = entry["action"], entry["category"], entry["severity"]
    text = groups.get("text") or ""
    if number == 154:  # "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"
        to = re.search(r"to 0x[0-9a-fA-F]+ \(([^)]*)\)", text)
        words = [w.lower() for w in re.findall(r"[A-Za-z]+", to.group(1))] if to else []
        action = next((_RECOVERY[w] for w in ("drain", "reboot", "reset", "none") if w in words), action)
        severity = {"none": "info", "reset_gpu": "error"}.get(action, "critical" if action in {
            "reboot_node", "drain_node"} else severity)
        category = "hardware" if action != "none" else category
    details: dict[str, Any] = {"name": entry.get("name", ""), "why": entry.get("why", ""), "rule": rule.name}
    for key in ("pid", "proc", "device"):
        if groups.get(key):
            details[key] = groups[key].strip("'")
    trust = "kernel" if rule.trust == "kernel" else rule.trust
    if trust != "kernel" and action in {"reset_gpu", "reboot_node", "drain_node"}:
        details["why"] = f"{details['why']} (reported by {rule.trust} text: recorded, never drains)".strip()
    return Finding(kind="xid", category=category, action=action, severity=severity, trust=trust,
                   message=line.message, line=line.number, xid=number, pci=pci(groups.get("pci")), time=line.stamp,
                   details=details)


def sxid(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    fatal = (m.group("sev") or "").lower() == "fatal"
    number = int(m.group("sxid"))
    return finding(rule, m, line, category="hardware", action="drain_node" if fatal else "investigate",
                   severity="critical" if fatal else "warning", xid=number,   # the SXid, in the ledger's xid column
                   details={"sxid": number, "switch": m.group("sw"), "fatal": fatal, "rule": rule.name})


def mce(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    text = line.message
    uncorrected = bool(re.search(r"\bUE\b|[Uu]ncorrect|\bUC\b|\bPCC\b|[Ff]atal|context corrupt|"
                                 r"severity: (?:fatal|recoverable)", text))
    f = finding(rule, m, line, category="hardware", action="drain_node" if uncorrected else "none",
                severity="critical" if uncorrected else "info")
    f.details["uncorrected"] = uncorrected
    return f


def aer(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    """An AER header or `PCIe Bus Error` line: its severity as the kernel states it."""
    text = line.message
    if "(Fatal)" in text or re.search(r"severity[=:] ?(?:Uncorrected \(Fatal\)|fatal)", text):
        action, severity, level = "drain_node", "critical", "fatal"
    elif re.search(r"Uncorrect|[Nn]on-[Ff]atal|severity: recoverable", text):
        action, severity, level = "investigate", "error", "uncorrected"
    else:
        action, severity, level = "none", "info", "corrected"
    source = re.search(r"(?:received|from):? (?:id=)?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)", text)
    f = finding(rule, m, line, category="hardware", action=action, severity=severity)
    f.pci = pci(source.group(1)) if source else f.pci   # the device that erred, not the port reporting it
    f.details["level"] = level
    return f


#: Detail lines (`[ 5] SDES`, old and new names): the PCIe error's class. Uncorrectable ones that take the
#: link down are worse than the rest: a GPU or NIC that left the bus.
_AER_LINK_LOST = re.compile(r"SDES|Surprise Down|DLP\b|Data Link Protocol")
_AER_UNCORRECTABLE = re.compile(
    r"Undefined|\bTLP\b|Poisoned TLP|FCP|Flow Control|CmpltTO|Completion Timeout|CmpltAbrt|Completer Abort|"
    r"UnxCmplt|Unexpected Completion|RxOF|Receiver Overflow|MalfTLP|Malformed TLP|ECRC|UnsupReq|"
    r"Unsupported Request|ACSViol|ACS Violation|UncorrIntErr|Uncorrectable Internal|BlockedTLP|AtomicOp|"
    r"TLPBlocked|PoisonTLPBlocked")


def aer_detail(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    name = (m.groupdict().get("err") or line.message).strip()
    if _AER_LINK_LOST.search(name):
        action, severity, level = "drain_node", "critical", "link_lost"
    elif _AER_UNCORRECTABLE.search(name):
        action, severity, level = "investigate", "error", "uncorrected"
    else:
        action, severity, level = "none", "info", "corrected"
    f = finding(rule, m, line, category="hardware", action=action, severity=severity)
    f.details["level"] = level
    return f


def link_down(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    f = finding(rule, m, line, action="investigate", severity="error")
    f.details.update(link="down", device=m.groupdict().get("dev") or m.groupdict().get("pci") or "?")
    return f


def link_up(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    f = finding(rule, m, line, action="none", severity="info")
    f.details.update(link="up", device=m.groupdict().get("dev") or m.groupdict().get("pci") or "?")
    return f


def port_state(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    """`Port: 1 Link DOWN|INIT|ARMED|ACTIVE`: DOWN and ACTIVE pair like a link down and up; INIT/ARMED is info."""
    state = m.group("state")
    if state == "DOWN":
        return link_down(rule, m, line, ctx)
    f = link_up(rule, m, line, ctx) if state.startswith("ACTIVE") else finding(rule, m, line, action="none",
                                                                                 severity="info")
    f.details["state"] = state
    return f


def module(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    what = m.groupdict().get("what") or ""
    bad = (m.groupdict().get("lvl") or "").lower() == "error" or bool(
        re.search(r"[Cc]able error|unplugged|[Hh]igh [Tt]emperature|[Pp]ower budget|not supported", what))
    f = finding(rule, m, line, category="network", action="drain_node" if bad else "none",
                severity="critical" if bad else "info")
    f.details.update(event=what, device=f.pci)
    return f


def nfs(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    ok = m.group("state") == "OK"
    f = finding(rule, m, line, action="none" if ok else rule.action, severity="info" if ok else rule.severity)
    f.details.update(server=m.group("srv"), ok=ok)
    return f


#: Our thresholds (counter value since the last clear) per IB port counter, in the IBA names ibqueryerrors and
#: perfquery print and the short names of older perfquery: 10 for the counters that mean a bad cable, port or
#: link (symbol errors, link recoveries, link downs, receive errors), 100 for congestion-like discards and relays.
_PHYSICAL = ("SymbolErrorCounter", "SymbolErrors", "LinkErrorRecoveryCounter", "LinkRecovers", "LinkDownedCounter",
             "LinkDowned", "PortRcvErrors", "RcvErrors", "LocalLinkIntegrityErrors", "LinkIntegrityErrors",
             "ExcessiveBufferOverrunErrors", "ExcBufOverrunErrors")
_CONGESTION = ("PortRcvRemotePhysicalErrors", "RcvRemotePhysErrors", "PortRcvSwitchRelayErrors", "RcvSwitchRelayErrors",
               "PortXmitDiscards", "XmtDiscards", "PortXmitConstraintErrors", "XmtConstraintErrors",
               "PortRcvConstraintErrors", "RcvConstraintErrors", "VL15Dropped")
IB_COUNTER_LIMITS = {**dict.fromkeys(_PHYSICAL, 10), **dict.fromkeys(_CONGESTION, 100)}
_COUNTER = re.compile(r"\[?(" + "|".join(sorted(IB_COUNTER_LIMITS, key=len, reverse=True)) + r")\b[\s.:=]*(\d+)")


def ib_counters(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    """perfquery / ibqueryerrors counters: a warning when one is past ibcheckerrs' default threshold."""
    values = {name: int(value) for name, value in _COUNTER.findall(line.message)}
    over = {k: v for k, v in values.items() if v > IB_COUNTER_LIMITS[k]}
    f = finding(rule, m, line, category="network", action="investigate" if over else "none",
                severity="warning" if over else "info")
    f.details.update(counters=values, over_threshold=sorted(over))
    return f


#: DCGM's health systems -> our kinds (a system not listed is a GPU fault: `xid`).
_DCGM_KINDS = {"thermal": "thermal", "power": "thermal", "pcie": "pcie", "nvlink": "nvlink", "nvswitch": "sxid",
               "driver": "gpu_init", "memory": "xid", "inforom": "xid", "sm": "xid", "mem": "xid"}


def dcgm_health(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    """dcgmi health / DCGM health watches: the system named decides the kind; a failure is an error."""
    system = (m.group("system") or m.group("system2") or "").lower()
    failed = bool(re.search(r"\b(?:FAILURE|Failure|failure|FAIL)\b", line.message))
    f = finding(rule, m, line, kind=_DCGM_KINDS.get(system, "xid"), severity="error" if failed else "warning")
    f.details["system"] = system
    return f


_BANDWIDTH = re.compile(r"limited by (?P<speed>[\d.]+) GT/s (?:PCIe )?x(?P<width>\d+) link.*?capable of [\d.]+ Gb/s "
                        r"with (?P<cspeed>[\d.]+) GT/s (?:PCIe )?x(?P<cwidth>\d+) link")


def pcie_bandwidth(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    """`... available PCIe bandwidth, limited by S GT/s PCIe xW link at ... (capable of ... with S' GT/s xW' link)`:
    a narrower link than the device's, or the 2.5 GT/s training fallback where the device can do more, is a
    degraded link (the rule's warning); a slower slot or bridge at full width is how the platform is built (info),
    and an upstream link the kernel could not read (`Unknown speed x0`) measured nothing (info)."""
    f = finding(rule, m, line)
    if "limited by Unknown speed x0 link" in line.message:
        # the kernel could not read the upstream link (a conventional PCI bridge, a virtual root port:
        # drivers/pci/pci.c pcie_bandwidth_available() reads 0 from a device without a link status): no link
        # was measured, so none is degraded
        f.details.update(degraded=None)
        f.action, f.severity = "none", "info"
        return f
    bw = _BANDWIDTH.search(line.message)
    if bw is None:
        return f
    width, cwidth = int(bw.group("width")), int(bw.group("cwidth"))
    speed, cspeed = float(bw.group("speed")), float(bw.group("cspeed"))
    degraded = width < cwidth or (speed <= 2.5 < cspeed)
    f.details.update(width=width, capable_width=cwidth, speed_gts=speed, capable_speed_gts=cspeed, degraded=degraded)
    if not degraded:
        f.action, f.severity = "none", "info"
    return f


_READING = re.compile(r"(?:^|:)\s*(?P<value>[+-]?\d{1,6}(?:\.\d{1,3})?)\s?(?P<unit>(?:°|Â°|º)?C|RPM)\s+\(")
_LIMIT = re.compile(r"\b(?P<name>low|lcrit|min|high|max|crit|emerg|hyst)\s*=\s*(?P<value>[+-]?\d{1,6}(?:\.\d{1,3})?)")


def sensor_reading(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    """lm-sensors' reading with its limits and no ALARM flag (drivers that keep no alarm bits print none): a
    temperature at or past `crit` is an error, at or past `high`/`max` a warning; a fan below its `min` a warning;
    within its limits, nothing (info). A limit of zero was never set, k10temp's fixed `high = +70.0°C` is no limit,
    and 127/-128 °C or less than -60 °C is an unwired input (tool output, read as such: never drains)."""
    f = finding(rule, m, line)
    r = _READING.search(line.message)
    if r is None:
        f.action, f.severity = "none", "info"
        return f
    value, unit = float(r.group("value")), r.group("unit")
    limits = {g.group("name"): float(g.group("value")) for g in _LIMIT.finditer(line.message[r.end():])}
    f.details.update(reading=value, unit="RPM" if unit == "RPM" else "C",
                     **{f"limit_{k}": v for k, v in limits.items()})
    over: str | None = None
    if unit == "RPM":
        if limits.get("min", 0.0) > 0 and value < limits["min"]:
            over = "min"
    elif -60 < value < 127:
        # k10temp (AMD) prints `high = +70.0°C` for Tctl/Tdie/Tccd on every CPU (a constant of the driver, k10temp.c
        # temp1_max), while those CPUs run to 95 °C by design: that "limit" says nothing
        fixed_high = re.match(r"\s*T(?:ctl|die|ccd\d{0,2})\s*:", line.message) is not None
        for name in ("emerg", "crit", "high", "max"):
            limit = limits.get(name)
            if fixed_high and name == "high" and limit == 70.0:
                continue
            if limit is not None and limit > 0 and value >= limit:
                over = name
                break
    f.details["past"] = over
    if over is None:
        f.action, f.severity = "none", "info"
    elif over in ("crit", "emerg"):
        f.severity = "error"
    return f


def unrecognised(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding | None:
    """The subsystem fallback (diagnosis.fallback): an error word in a line that no rule claimed, from a known
    hardware subsystem, is a warning of that subsystem's kind; from anywhere else, nothing."""
    from slurmtools.diagnosis import fallback

    # the kernel's fallback rule is never read on a line that begins with a task's name (a job chose that text);
    # the daemons' rule reads such lines, where subsystem_of answers only for the daemons' own tags; a finding's
    # trust is its subsystem's (a daemon's tag: "syslog", whichever rule read it)
    f = fallback.classify(line.message, line.number, line.stamp)
    if f is not None:
        f.details["word"] = m.group(0)
    return f


def nvrm_print(rule: Rule, m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding | None:
    """An NVRM message printed by a named RM function that no rule above claimed: the driver prints those only at
    its error and warning levels. With an error word it is the subsystem fallback's (a warning, `unrecognised`);
    without one, a fact of the rule's kind at the rule's (info) verdict."""
    from slurmtools.diagnosis import fallback, subsystems

    word = subsystems.error_word(line.message)
    if word is None:
        return finding(rule, m, line)
    f = fallback.classify(line.message, line.number, line.stamp)
    if f is not None:
        f.details["word"] = word
    return f


HANDLERS: dict[str, Handler] = {"xid": xid, "sxid": sxid, "aer": aer, "aer_detail": aer_detail, "mce": mce,
                                "link_down": link_down, "link_up": link_up, "module": module, "nfs": nfs,
                                "boot": boot, "ignore": boot, "ib_counters": ib_counters,
                                "port_state": port_state, "dcgm_health": dcgm_health, "unrecognised": unrecognised,
                                "pcie_bandwidth": pcie_bandwidth, "nvrm_print": nvrm_print,
                                "sensor_reading": sensor_reading}
