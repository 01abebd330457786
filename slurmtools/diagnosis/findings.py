"""What a diagnosis produces: findings, each with a category, an action and a trust level."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from slurmtools.ledger.events import Action, Category, Severity, Trust

#: The finding kinds (docs/diagnosis.md has a verdict row for each; a site's rule may name its own).
KINDS = ("xid", "sxid", "nvlink", "fabric_manager", "gsp", "gpu_init", "cuda", "nccl", "aer", "pcie", "mce",
         "thermal", "oom", "hung_task", "soft_lockup", "ib", "nfs", "disk", "segfault", "exit")
#: The allowed values, defined once as enums in ledger/events.py (what the ledger stores); mildest action first.
ACTIONS = tuple(a.value for a in Action)
CATEGORIES = tuple(c.value for c in Category)
SEVERITIES = tuple(s.value for s in Severity)
#: "syslog": a daemon's line in a syslog-fed log (`TAG[PID]: ...`), which any local user can forge with logger(1);
#: "metrics": Prometheus series (detect, stalls).
TRUSTS = tuple(t.value for t in Trust)

#: Actions that mean the node itself is faulty: with node-level evidence, the node leaves service.
NODE_ACTIONS = frozenset({"reset_gpu", "reboot_node", "drain_node"})
#: Evidence a user cannot write. Job output (trust "job") never drains a node.
NODE_TRUST = frozenset({"kernel", "nvml", "sysfs"})


@dataclass
class Finding:
    kind: str
    category: str
    action: str
    severity: str
    trust: str
    message: str
    line: int | None = None
    xid: int | None = None
    pci: str | None = None
    gpu: str | None = None
    time: str | None = None       # the timestamp as the log printed it
    count: int = 1                # repeats folded into this finding (storms)
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> str:
        return {"kernel": "kernel", "nvml": "nvml", "sysfs": "sysfs", "admin": "admin", "syslog": "syslog"}.get(
            self.trust, "job-exit" if self.kind == "exit" else "job-log")

    def rank(self) -> int:
        return ACTIONS.index(self.action) * 10 + SEVERITIES.index(self.severity)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["source"] = self.source
        return data
