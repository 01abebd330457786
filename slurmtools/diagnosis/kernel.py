"""Kernel log lines -> findings. One rule table; the first rule that matches a line wins.

Formats seen in the field are normalised first: `<4>` priorities, /dev/kmsg records
(`4,1234,5678901,-;msg`), `[  123.456789]` monotonic stamps, `[Sun Jan 11 09:52:01 2026]`
(dmesg -T), syslog and journal prefixes (`Jan 11 09:52:01 host kernel: `), ISO stamps, and
host-prefixed remote-syslog lines.

Big inputs are scanned by a keyword prefilter over raw bytes (see `scan`), so only lines that can
matter are decoded and matched: the cost follows the log's size at close to memory speed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from slurmtools.diagnosis import catalog
from slurmtools.diagnosis.findings import Finding

MAX_LINE = 4096  # longer lines are cut before matching: a 1 MB line costs no more than this

_PREFIX = re.compile(
    r"^(?:<(?P<prio>\d{1,3})>)?"
    r"(?:(?P<kprio>\d{1,3}),(?P<seq>\d+),(?P<usec>\d+),[^;]*;)?"
    r"(?:(?P<iso>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s+)?"
    r"(?:(?P<sys>[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d)\s+)?"
    r"(?:\[(?P<ctime>[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \d{4})\]\s*)?"
    r"(?:\[\s*(?P<mono>\d+\.\d+)\]\s*)?"
    r"(?:(?P<host>[\w.-]+) kernel:\s*)?"
    r"(?:\[\s*(?P<mono2>\d+\.\d+)\]\s*)?"
    r"(?:<\d{1,3}>)?"
)


_SYSLOG_HOST = re.compile(r"(?P<host>[\w.-]+) (?=[\w.-]+\[\d+\]: )")


@dataclass
class Line:
    number: int          # 1-based line number in the input
    message: str         # the kernel message without stamps and prefixes
    stamp: str | None    # the timestamp as printed
    mono: float | None   # monotonic seconds, when the format has them
    host: str | None


def normalise(raw: str, number: int = 0) -> Line:
    text = raw.rstrip("\r\n")[:MAX_LINE]
    m = _PREFIX.match(text)
    assert m is not None  # every group is optional
    mono_s = m.group("mono") or m.group("mono2")
    mono = float(mono_s) if mono_s else (int(m.group("usec")) / 1e6 if m.group("usec") else None)
    stamp = m.group("iso") or m.group("sys") or m.group("ctime") or mono_s or (
        f"{mono:.6f}" if mono is not None else None)
    host, rest = m.group("host"), text[m.end():]
    if host is None and (m.group("sys") or m.group("iso")):
        tagged = _SYSLOG_HOST.match(rest)     # "host TAG[PID]: message": a daemon's syslog line
        if tagged:
            host, rest = tagged.group("host"), rest[tagged.end():]
    return Line(number, rest, stamp, mono, host)


def _pci(text: str | None) -> str | None:
    """Normalise a PCI address: `0000:3B:00.0`, `3b:00`, `PCI:0000:3b:00` -> `0000:3b:00`."""
    if not text:
        return None
    m = re.search(r"(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.[0-7])?", text)
    if not m:
        return text.strip() or None
    domain = (m.group(1) or "0000")[-4:]
    return f"{domain}:{m.group(2)}:{m.group(3)}".lower()


Rule = tuple[str, "re.Pattern[str]", Callable[["re.Match[str]", Line, dict[str, Any]], Finding | None]]


def _f(kind: str, category: str, action: str, severity: str, **kw: Any) -> Callable[..., Finding]:
    def make(m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
        pci = _pci(m.groupdict().get("pci"))
        details = {k: v for k, v in m.groupdict().items() if v is not None and k != "pci"}
        return Finding(kind=kind, category=category, action=action, severity=severity, trust="kernel",
                       message=line.message, line=line.number, pci=pci, time=line.stamp, details=details, **kw)

    return make


_RECOVERY = {"none": "none", "reset": "reset_gpu", "reboot": "reboot_node", "drain": "drain_node"}


def _xid(m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    xid = int(m.group("xid")) if m.groupdict().get("xid") else 79
    entry = catalog.lookup(xid, ctx.get("overrides"))
    action, category, severity = entry["action"], entry["category"], entry["severity"]
    text = m.groupdict().get("text") or ""
    if xid == 154:  # "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"
        to = re.search(r"to 0x[0-9a-fA-F]+ \(([^)]*)\)", text)
        words = [w.lower() for w in re.findall(r"[A-Za-z]+", to.group(1))] if to else []
        action = next((_RECOVERY[w] for w in ("drain", "reboot", "reset", "none") if w in words), action)
        severity = {"none": "info", "reset_gpu": "error"}.get(action, "critical" if action in {
            "reboot_node", "drain_node"} else severity)
        category = "hardware" if action != "none" else category
    details = {"name": entry.get("name", ""), "why": entry.get("why", "")}
    for key in ("pid", "proc"):
        if m.groupdict().get(key):
            details[key] = m.group(key).strip("'")
    return Finding(kind="xid", category=category, action=action, severity=severity, trust="kernel",
                   message=line.message, line=line.number, xid=xid, pci=_pci(m.group("pci")), time=line.stamp,
                   details=details)


def _sxid(m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    fatal = (m.group("sev") or "").lower() == "fatal"
    return Finding(kind="sxid", category="hardware", action="drain_node" if fatal else "investigate",
                   severity="critical" if fatal else "warning", trust="kernel", message=line.message,
                   line=line.number, pci=_pci(m.group("pci")), time=line.stamp,
                   details={"sxid": int(m.group("sxid")), "switch": m.group("sw"), "fatal": fatal})


def _mce(m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    text = line.message
    uncorrected = bool(re.search(r"\bUE\b|[Uu]ncorrect|\bUC\b|\bPCC\b|[Ff]atal", text))
    return Finding(kind="mce", category="hardware", action="drain_node" if uncorrected else "none",
                   severity="critical" if uncorrected else "warning", trust="kernel", message=text,
                   line=line.number, time=line.stamp, details={"uncorrected": uncorrected})


def _aer(m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    text = line.message
    if "Fatal)" in text or "severity=Uncorrected (Fatal)" in text or "Uncorrected (Fatal)" in text:
        action, severity, level = "drain_node", "critical", "fatal"
    elif "Uncorrected" in text or "Uncorrectable" in text:
        action, severity, level = "investigate", "error", "uncorrected"
    else:
        action, severity, level = "none", "info", "corrected"
    source = re.search(r"received: (\S+)", text)  # the device that erred, not the port reporting it
    pci = _pci(source.group(1)) if source else _pci(m.groupdict().get("pci"))
    return Finding(kind="aer", category="hardware", action=action, severity=severity, trust="kernel", message=text,
                   line=line.number, pci=pci, time=line.stamp, details={"level": level})


def _link(state: str) -> Callable[..., Finding]:
    def make(m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
        dev = m.groupdict().get("dev") or m.groupdict().get("pci") or "?"
        down = state == "down"
        return Finding(kind="ib", category="network", action="investigate" if down else "none",
                       severity="error" if down else "info", trust="kernel", message=line.message, line=line.number,
                       pci=_pci(m.groupdict().get("pci")), time=line.stamp,
                       details={"link": state, "device": dev})

    return make


def _module(m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    bad = (m.group("lvl") or "").lower() == "error" or bool(
        re.search(r"[Cc]able error|unplugged|[Hh]igh [Tt]emperature|[Pp]ower budget|not supported", m.group("what")))
    return Finding(kind="ib", category="network", action="drain_node" if bad else "none",
                   severity="critical" if bad else "info", trust="kernel", message=line.message, line=line.number,
                   pci=_pci(m.group("pci")), time=line.stamp,
                   details={"module": m.group("mod"), "event": m.group("what"), "device": m.group("pci")})


def _nfs(m: re.Match[str], line: Line, ctx: dict[str, Any]) -> Finding:
    ok = m.group("state") == "OK"
    return Finding(kind="nfs", category="filesystem", action="none" if ok else "investigate",
                   severity="info" if ok else "error", trust="kernel", message=line.message, line=line.number,
                   time=line.stamp, details={"server": m.group("srv"), "ok": ok})


_PCI = r"(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)"

#: Every rule is anchored where the subsystem's own prefix stands: at the start of the message (after the
#: stamps), or after the "driver device: " that dev_printk puts first. Text a job controls (a process name,
#: printed by the kernel inside segfault, OOM and hung-task lines) therefore never starts a match.
_DEV = r"(?:[\w.-]+ [\w:.-]+: )?"

RULES: list[Rule] = [
    ("boot", re.compile(r"^Linux version \d"), lambda m, line, ctx: None),
    ("xid", re.compile(r"^NVRM: Xid \((?:PCI:)?(?P<pci>[^)]*)\): (?P<xid>\d+)"
                       r"(?:, pid=(?P<pid>[^,]*))?(?:, name=(?P<proc>[^,]*))?(?:, (?P<text>.*))?"), _xid),
    ("xid", re.compile(r"^NVRM: (?:GPU at )?(?:PCI:)?(?P<pci>[0-9a-fA-F:.]+):? (?:.*)?GPU has fallen off the bus"),
     _xid),
    ("xid", re.compile(r"^NVRM: The NVIDIA GPU (?P<pci>[0-9a-fA-F:.]+).*has fallen off the bus"), _xid),
    ("sxid", re.compile(r"^nvidia-nvswitch(?P<sw>\d*): SXid \((?:PCI:)?(?P<pci>[^)]*)\): (?P<sxid>\d+)"
                        r"(?:, (?P<sev>Non-fatal|Fatal))?"), _sxid),
    ("gpu_init", re.compile(r"^NVRM: (?:GPU (?P<pci>[0-9a-fA-F:.]+): )?(?:RmInitAdapter|rm_init_adapter) failed"),
     _f("gpu_init", "hardware", "drain_node", "critical")),
    ("gsp", re.compile(r"^NVRM: .*(?:GSP|gsp)\w*.*(?:[Tt]ime(?:d )?out|[Ee]rror|[Ff]ail|RPC buffer)"),
     _f("gsp", "driver", "reset_gpu", "error")),
    ("nvlink", re.compile(r"^(?:NVRM: [^\n]*?NVLink|nvidia-nvlink|NVLink)[^\n]*?(?:[Ff]atal|[Ee]rror|[Ff]ailed|"
                          r"[Dd]own|[Tt]raining failed)"), _f("nvlink", "hardware", "reset_gpu", "error")),
    ("fabric_manager", re.compile(r"^(?:nv-fabricmanager|nvidia-fabricmanager|[Ff]abric ?[Mm]anager)[^\n]*?"
                                  r"(?:fail|not running|[Tt]ime(?:d )?out|[Ee]rror|degraded)"),
     _f("fabric_manager", "driver", "drain_node", "critical")),
    ("ib", re.compile(r"^mlx5_core " + _PCI + r".*Port module event(?:\[(?P<lvl>\w+)\])?: module (?P<mod>\d+), "
                      r"(?P<what>.*)"), _module),
    ("ib", re.compile(r"^(?:mlx5_core|mlx5_ib|mlx4_core|bnxt_en|ib_core) " + _PCI + r"(?: (?P<dev>[\w.-]+))?: "
                      r"(?:.*: )?Link down"), _link("down")),
    ("ib", re.compile(r"^(?:mlx5_core|mlx5_ib|mlx4_core|bnxt_en|ib_core) " + _PCI + r"(?: (?P<dev>[\w.-]+))?: "
                      r"(?:.*: )?Link up"), _link("up")),
    ("ib", re.compile(r"^" + _DEV + r"(?P<dev>(?:ib|ibp|mlx5_)\w*)(?:/\d+)?:? .*(?:port \d+ )?(?:link|state)[^\n]*?"
                      r"\b(?:down|DOWN|Down)\b"), _link("down")),
    ("mce", re.compile(r"^(?:mce: |\{\d+\})?(?:\[Hardware Error\]|(?:CPU ?\d+: )?Machine [Cc]heck events logged|"
                       r"(?:CPU ?\d+: )?Machine Check Exception|Fatal machine check)|^EDAC \w+: \d+ (?:CE|UE) "), _mce),
    ("aer", re.compile(r"^(?:[\w.-]+ )?(?:" + _PCI + r": )?(?:AER: (?:Multiple )?(?:Corrected|Uncorrected|"
                       r"Uncorrectable)|PCIe Bus Error: severity=)"), _aer),
    ("oom", re.compile(r"^(?P<cg>Memory cgroup out of memory|Out of memory): Kill(?:ed)? process (?P<pid>\d+) "
                       r"\((?P<comm>[^)]*)\)"), _f("oom", "application", "restart_app", "error")),
    ("nfs", re.compile(r"^nfs: server (?P<srv>\S+) (?P<state>not responding|OK)"), _nfs),
    ("nfs", re.compile(r"^LustreError: (?P<what>.*)"), _f("nfs", "filesystem", "investigate", "error")),
    ("hung_task", re.compile(r"^INFO: task (?P<comm>.+?):(?P<pid>\d+) blocked for more than (?P<secs>\d+) seconds"),
     _f("hung_task", "unknown", "investigate", "warning")),
    ("soft_lockup", re.compile(r"^(?:watchdog: |NMI watchdog: )?BUG: soft lockup - CPU#(?P<cpu>\d+) stuck for "
                               r"(?P<secs>\d+)s"), _f("soft_lockup", "unknown", "investigate", "error")),
    ("soft_lockup", re.compile(r"^(?:NMI watchdog: |watchdog: )?[Ww]atchdog detected hard LOCKUP on cpu (?P<cpu>\d+)"),
     _f("soft_lockup", "hardware", "reboot_node", "critical")),
]

#: Rules about daemons whose lines reach a syslog-fed kernel log tagged `NAME[PID]:` (not the kernel's own).
SYSLOG_KINDS = frozenset({"fabric_manager"})

#: Messages that the kernel begins with a task's name (at most 15 bytes, anything a job chooses with prctl):
#: `NAME[PID]: segfault at`, `traps: NAME[PID] general protection`, `NAME invoked oom-killer`, `NAME (PID):
#: drop_caches`, `NAME: page allocation failure`, and the `CPU: N PID: N Comm: NAME` dump header. No kernel
#: rule reads such a line: whatever follows the name could have been written by the job.
TASK_FIRST = re.compile(
    r"^(?:traps: |process '|audit: )"
    r"|^.{1,15}?(?:\[\d+\](?::| )| \(\d+\): | invoked oom-killer|: page allocation failure|: Corrupted page table)"
    r"|^CPU: \d+ (?:UID: \d+ )?PID: \d+ Comm: "
    r"|^[\w./-]+\[\d+\]: ", re.S)   # and a userspace program's syslog line, `TAG[PID]: ` (logger -t TAG ...)

#: For each rule, in order: literals of which a line must contain one before the rule's regex runs.
NEEDS: list[tuple[str, ...]] = [
    ("Linux version",), ("NVRM: Xid",), ("fallen off the bus",), ("fallen off the bus",), ("SXid",),
    ("RmInitAdapter", "rm_init_adapter"), ("GSP", "gsp"), ("NVLink", "nvlink"), ("abric",), ("Port module event",),
    ("Link down",), ("Link up",), ("down", "DOWN", "Down"),
    ("Hardware Error", "Machine check", "Machine Check", "machine check", "EDAC"), ("AER", "PCIe Bus Error"),
    ("ut of memory",), ("nfs: server",), ("LustreError",), ("blocked for more than",), ("soft lockup",), ("LOCKUP",),
]
assert len(NEEDS) == len(RULES), "one NEEDS entry per rule"
_RULES = list(zip(NEEDS, RULES, strict=True))

#: Fixed strings at least one of which every rule's line contains. Lines with none are skipped
#: without being decoded: the prefilter that keeps big logs cheap (a test checks the corpus).
KEYWORDS: tuple[bytes, ...] = (
    b"Linux version", b"NVRM: Xid", b"fallen off the bus", b"SXid", b"RmInitAdapter", b"rm_init_adapter",
    b"GSP", b"gsp", b"NVLink", b"nvlink", b"abric", b"Port module event", b"Link down", b"Link Down",
    b"link down", b"DOWN", b"Link up", b"Hardware Error", b"Machine check", b"Machine Check", b"machine check",
    b"EDAC", b"AER: Uncorrect", b"AER: Multiple Uncorrect", b"severity=Uncorrect", b"ut of memory",
    b"nfs: server", b"LustreError", b"blocked for more than", b"soft lockup", b"hard LOCKUP",
)
_KEYWORDS_RE = re.compile(b"|".join(re.escape(k) for k in KEYWORDS))
#: Above this size the prefilter runs in GNU grep -F (about 10x the Python regex's throughput).
GREP_MIN_BYTES = 4 << 20


def match_line(line: Line, ctx: dict[str, Any] | None = None) -> tuple[str, Finding | None] | None:
    """(rule kind, finding or None for markers) for the first matching rule, or None."""
    ctx = ctx or {}
    text = line.message
    if TASK_FIRST.match(text):
        # a task's line: no kernel rule applies; a daemon's syslog line (`nv-fabricmanager[PID]: ...`) is
        # still told, as evidence anyone could have written (trust syslog: it never drains a node)
        for needs, (kind, pattern, make) in _RULES:
            if kind in SYSLOG_KINDS and any(n in text for n in needs) and (m := pattern.search(text)):
                finding = make(m, line, ctx)
                if finding is not None:
                    finding.trust = "syslog"
                return kind, finding
        return None
    for needs, (kind, pattern, make) in _RULES:
        if not any(n in text for n in needs):
            continue
        m = pattern.search(text)
        if m:
            return kind, make(m, line, ctx)
    return None


def iter_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Candidate lines of a buffer with their 1-based numbers, chosen by the keyword prefilter."""
    if len(data) >= GREP_MIN_BYTES:
        found = _grep_lines(data)
        if found is not None:
            yield from found
            return
    number, counted_to = 1, 0
    pos, end = 0, len(data)
    while pos < end:
        m = _KEYWORDS_RE.search(data, pos)
        if not m:
            return
        start = data.rfind(b"\n", 0, m.start()) + 1
        stop = data.find(b"\n", m.start())
        stop = end if stop < 0 else stop
        number += data.count(b"\n", counted_to, start)
        counted_to = start
        yield number, data[start:stop]
        pos = stop + 1


def _grep_lines(data: bytes) -> list[tuple[int, bytes]] | None:
    """The same prefilter through `grep -a -n -F` (None if grep is missing or fails: use Python)."""
    grep = shutil.which("grep") or ("/bin/grep" if os.access("/bin/grep", os.X_OK) else None)
    if grep is None:
        return None
    argv = [grep, "-a", "-n", "-F"] + [arg for k in KEYWORDS for arg in ("-e", k.decode())]
    try:
        proc = subprocess.run(argv, input=data, capture_output=True, timeout=120,
                              env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode not in (0, 1):
        return None
    out = []
    for row in proc.stdout.split(b"\n"):
        number, sep, text = row.partition(b":")
        if sep and number.isdigit():
            out.append((int(number), text))
    return out


def scan(data: bytes, ctx: dict[str, Any] | None = None) -> tuple[list[Finding], list[int]]:
    """All findings in a buffer of kernel log, and the line numbers of boot markers."""
    findings: list[Finding] = []
    boots: list[int] = []
    last_mono: float | None = None
    for number, raw in iter_lines(data):
        line = normalise(raw.decode("utf-8", "replace").replace("\x00", ""), number)
        if line.mono is not None:
            if last_mono is not None and line.mono + 1.0 < last_mono:
                boots.append(number)  # monotonic time went backwards: the node rebooted
            last_mono = line.mono
        hit = match_line(line, ctx)
        if hit is None:
            continue
        kind, finding = hit
        if kind == "boot":
            boots.append(number)
        elif finding is not None:
            findings.append(finding)
    return findings, boots

