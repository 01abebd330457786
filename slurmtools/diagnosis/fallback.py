"""No silent misses: the subsystem fallback.

A kernel or daemon line that starts at a known hardware subsystem's prefix (`NVRM:`, `mlx5_core ...:`, `pcieport`,
`EDAC`, `nvme nvme0:`, `EXT4-fs`, `LustreError:`, `nvidia-fabricmanager[PID]:`, ...) and holds an error word, but
that no rule claims, is still a finding: the subsystem's kind and category, severity warning, action investigate,
`details.unrecognised = true`, never a drain. Both the subsystem table (`[[subsystem]]`) and the error vocabulary
(the pattern of the last rule, `unrecognised`) are data in data/diagnosis_rules.toml. The rule's literals feed the
prefilter like any rule's, so the fallback costs no second pass over the log.

`normalise_message` turns an unrecognised message into its family (numbers, addresses, PCI ids and device names
replaced), for the report's grouping and `slurmtools diagnose --suggest-rules`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from slurmtools.diagnosis.findings import CATEGORIES, Finding

#: The rule that carries the error vocabulary and calls this module (the last packaged rule).
RULE_NAME = "unrecognised"


@dataclass(frozen=True)
class Subsystem:
    name: str
    kind: str
    category: str
    trust: str
    pattern: re.Pattern[str]


def load_table(raw: list[dict[str, Any]]) -> tuple[Subsystem, ...]:
    out = []
    for entry in raw:
        name = entry.get("name", "?")
        if entry.get("category", "unknown") not in CATEGORIES or \
                entry.get("trust", "kernel") not in ("kernel", "syslog"):
            raise ValueError(f"subsystem {name!r}: category must be one of {CATEGORIES}, trust kernel or syslog")
        if not str(entry.get("pattern", "")).startswith("^"):
            raise ValueError(f"subsystem {name!r}: pattern must be anchored at the message's start (^...)")
        out.append(Subsystem(name, entry["kind"], entry.get("category", "unknown"), entry.get("trust", "kernel"),
                             re.compile(entry["pattern"])))
    return tuple(out)


@lru_cache(maxsize=1)
def subsystems() -> tuple[Subsystem, ...]:
    """The packaged subsystem table, in the order it is tried."""
    import tomllib
    from importlib import resources

    text = resources.files("slurmtools").joinpath("data/diagnosis_rules.toml").read_text(encoding="utf-8")
    return load_table(tomllib.loads(text).get("subsystem", []))


def subsystem_of(message: str) -> Subsystem | None:
    """The hardware subsystem whose prefix the message starts at, or None."""
    for sub in subsystems():
        if sub.pattern.match(message):
            return sub
    return None


def classify(message: str, number: int | None = None, stamp: str | None = None,
             trust: str | None = None) -> Finding | None:
    """The fallback finding for a message that holds an error word (the caller checked) and that no rule claimed:
    None when the message starts at no known subsystem (of that TRUST, when given)."""
    sub = subsystem_of(message)
    if sub is None or (trust is not None and sub.trust != trust):
        return None
    return Finding(kind=sub.kind, category=sub.category, action="investigate", severity="warning", trust=sub.trust,
                   message=message, line=number, time=stamp,
                   details={"unrecognised": True, "subsystem": sub.name, "rule": RULE_NAME,
                            "family": normalise_message(message)})


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
