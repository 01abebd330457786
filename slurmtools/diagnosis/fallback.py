"""No silent misses: the subsystem fallback.

A kernel or daemon line that starts at a known hardware subsystem's prefix (`NVRM:`, `mlx5_core ...:`, `pcieport`,
`EDAC`, `nvme nvme0:`, `EXT4-fs`, `LustreError:`, `nvidia-fabricmanager[PID]:`, ...) and holds an error word, but
that no rule claims, is still a finding: the subsystem's kind and category, severity warning, action investigate,
`details.unrecognised = true`, never a drain. The subsystems and the error vocabulary are one table,
data/subsystems.toml (`subsystems`), which the envelope parser and the scan's prefilter read too: the prefilter
passes a line holding a subsystem's tag and an error word in the same pass as the rules' keywords, so the fallback
costs no second pass over the log and widens it by nothing else.

The same table names the user-space libraries of a fabric (trust `job`: UCX, libibverbs, libfabric, PSM, Open MPI's
fabric components, ...), whose tags a job prints anywhere in its line: a line of the job's output (`classify_job`,
read by `joblog.scan` after the job rules) or of a log the scan reads that holds such a tag and a failure word it
does not deny, and that no rule claims, is a warning of the library's kind with trust `job` (never a drain); the
library's own info and debug lines (its `quiet` pattern) stay silent.

`normalise_message` turns an unrecognised message into its family (numbers, addresses, PCI ids and device names
replaced), for the report's grouping and `slurmtools diagnose --suggest-rules`.
"""

from __future__ import annotations

import re

from slurmtools.diagnosis.findings import Finding
from slurmtools.diagnosis.subsystems import Subsystem, library_of, only_settings, reported_error_word, subsystem_of

#: A line that reports a success (`Successfully registered panic handler`, `GPU reset succeeded`) is not a failure,
#: whatever word it holds: the fallback is for failures no rule names (a rule still reads a success's failure where
#: one is known).
_SUCCESS = re.compile(r"(?i)\b(?:successfully|succeeded)\b")

#: The rules that call this module (the last two packaged rules; their pattern is `subsystems.ERROR_PATTERN`).
RULE_NAME = "unrecognised"


def classify(message: str, number: int | None = None, stamp: str | None = None) -> Finding | None:
    """The fallback finding for a message that holds an error word (the caller checked) and that no rule claimed:
    None when the message starts at no known subsystem with a kind (`subsystems.subsystem_of`: on a line that
    begins with a task's name, only a daemon's tag) and holds no library's tag (`subsystems.library_of`), or when a
    library's line is at its quiet (info, debug) level, or a library's or a daemon's line only denies its failure
    words (`no error`, `Shutting down`)."""
    sub = subsystem_of(message)
    if sub is None or sub.kind is None:
        return None
    if sub.trust in ("job", "syslog"):
        if not _reports(sub, message):
            return None  # a daemon's or a library's failure words all denied or set (`Shutting down`, `timeout=60`)
    elif only_settings(message):
        return None      # a kernel line whose only failure words are a timeout it sets (`timeout set to 60 seconds`)
    if _SUCCESS.search(message):
        return None      # a success the line reports
    return _finding(sub, sub.kind, message, number, stamp)


def classify_job(message: str, number: int | None = None) -> Finding | None:
    """The library fallback for a line of the job's own output that no job rule claimed: a library's tag anywhere
    in it (`subsystems.library_of`) and a failure word it does not deny, else None. Trust job: never a drain."""
    sub = library_of(message)
    if sub is None or sub.kind is None or not _reports(sub, message):
        return None
    return _finding(sub, sub.kind, message, number, None)


def _finding(sub: Subsystem, kind: str, message: str, number: int | None, stamp: str | None) -> Finding:
    """SUB's fallback finding for MESSAGE: a warning of its kind, action investigate, `unrecognised: true`, with the
    subsystem's trust (a library's is `job`)."""
    return Finding(kind=kind, category=sub.category, action="investigate", severity="warning", trust=sub.trust,
                   message=message, line=number, time=stamp,
                   details={"unrecognised": True, "subsystem": sub.name, "rule": RULE_NAME,
                            "family": normalise_message(message)})


def _reports(sub: Subsystem, message: str) -> bool:
    """Whether a library's MESSAGE reports a failure: not at the library's quiet level, and a failure word that the
    line does not deny (`no error`, `error: none`)."""
    if sub.quiet is not None and sub.quiet.search(message):
        return False
    return reported_error_word(message) is not None


_NORMALISE = [
    (re.compile(r"\b[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?\b"
                r"|\b[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\b"), "<pci>"),
    (re.compile(r"\bGPU-[0-9a-fA-F-]{8,}\b"), "<uuid>"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<uuid>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?:@\w+)?\b"), "<ip>"),
    (re.compile(r"\b(?:nvme\d+(?:n\d+(?:p\d+)?)?|sd[a-z]{1,3}\d*|mmcblk\d+(?:p\d+)?|dm-\d+|md\d+"
                r"|ata\d+(?:\.\d+)?|mlx[45]_\d+|ib[p]?\w*\d+|eth\d+|ens\w+|enp\w+|hfi1_\d+|nvidia-nvswitch\d+"
                r"|GPU\d+|CPU\d+)\b"), "<dev>"),
    (re.compile(r"\b[0-9a-fA-F]{9,}\b"), "<hex>"),
    (re.compile(r"\b\d+\b"), "<n>"),
]


def normalise_message(message: str) -> str:
    """A message's family: PCI addresses, UUIDs, hex numbers, IP addresses, device names and numbers replaced by
    placeholders, so repeats on other devices, nodes and boots group together."""
    text = message.strip()
    for pattern, repl in _NORMALISE:
        text = pattern.sub(repl, text)
    return re.sub(r"\s+", " ", text)[:500]
