"""One log line -> its message, stamp and host: every prefix a kernel log is seen with in the field.

`<4>` priorities, /dev/kmsg records (`4,1234,5678901,-;msg`), `[  123.456789]` monotonic stamps, `[  +0.000844]`
(dmesg --reltime), `[Sun Jan 11 09:52:01 2026]` (dmesg -T), `kern  :warn  : 2025-01-21T04:41:44,283302+00:00`
(dmesg -x --time-format iso), syslog and journal prefixes (`Jan 11 09:52:01[.123456] host kernel: `), ISO stamps,
`Tue Aug 12 16:40:43 2025 kern.crit kernel:` (logread), `2020/08/10 19:09:42` (Go's log), a pdsh/clush
`host: ` in front, host-prefixed remote syslog, and leading blanks (continuation lines, pasted logs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LINE = 4096  # longer lines are cut before matching: a 1 MB line costs no more than this

_PREFIX = re.compile(
    r"^\s*(?:/ # )?(?:\d{1,6} ?(?=\[\s*\d))?(?:(?P<pdsh>[\w.-]+): (?=\[\s*\d|<\d))?"
    r"(?:<(?P<prio>\d{1,3})>)?"
    r"(?:(?P<kprio>\d{1,3}),(?P<seq>\d+),(?P<usec>\d+),[^;]*;)?"
    r"(?:[a-z]{2,8} *:[a-z]{2,7} *: )?"
    r"(?:(?P<iso>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s+)?"
    r"(?:(?P<golog>\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\s+)?"
    r"(?:(?P<ctime2>[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \d{4}) (?:[a-z]+\.[a-z]+ )?(?=kernel:))?"
    r"(?:(?P<sys>(?:[A-Z][a-z]{2}|[a-z]{3}\.|\d{1,2}月) +\d{1,2} \d\d:\d\d:\d\d(?:\.\d+)?)\s+)?"
    r"(?:\[(?P<ctime>[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \d{4})\]\s*)?"
    r"(?:\[\s*(?P<mono>\d+\.\d+)\]\s*)?(?:\[\s*[TC]\d+\]\s*)?"
    r"(?:\[\s*(?P<rel>[+-]\d+\.\d+)\]\s*)?"
    r"(?:(?:(?P<host>[\w.-]+) )?(?:[a-z]+\.[a-z]+ )?kernel:\s*)?"
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
    stamp = (m.group("iso") or m.group("sys") or m.group("ctime") or m.group("ctime2") or m.group("golog")
             or mono_s or (f"{mono:.6f}" if mono is not None else None))
    host, rest = m.group("host") or m.group("pdsh"), text[m.end():]
    if m.group("host") is None and (m.group("sys") or m.group("iso")):
        tagged = _SYSLOG_HOST.match(rest)     # "host TAG[PID]: message": a daemon's syslog line
        if tagged:
            host, rest = tagged.group("host"), rest[tagged.end():]
    return Line(number, rest.strip(), stamp, mono, host)


_PCI_RE = re.compile(r"(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.[0-7])?")


def pci(text: str | None) -> str | None:
    """Normalise a PCI address: `0000:3B:00.0`, `3b:00`, `PCI:0000:3b:00` -> `0000:3b:00`."""
    if not text:
        return None
    m = _PCI_RE.search(text)
    if not m:
        return text.strip() or None
    domain = (m.group(1) or "0000")[-4:]
    return f"{domain}:{m.group(2)}:{m.group(3)}".lower()
