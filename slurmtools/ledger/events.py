"""The ledger's event kinds and the allowed values of a finding's trust, action, category, severity and source, as
enums; each kind's fields are in `ledger/fields.py`.

An event (`spool.Event`) is built by a hook, the controller, detect, stalls or an import; it travels as one line
of JSON in the spool and becomes one row of the table its type names (`ledger/store.py`). Its `data` may hold
only the fields its type defines: `Event(...)` refuses any other (a misspelt column is an error where it is
written) and a finding whose trust, action, category or severity is none of these values; the shipper sends an
event read from a spool file that holds an unknown field to `bad/` with the reason.
To add a field: the column in `ledger/models.py` (and a migration), its name in `fields.FIELDS`. To add a kind:
a model, a member of EventType, its fields, and its handler in `ledger/store.py`. To add a value: a member here.
Stdlib only (`dataclasses` or `msgspec` would cost a hook milliseconds: docs/performance.md); the prolog does not
import this module (building the enums costs ~1.2 ms), the epilog does.
"""

from __future__ import annotations

from enum import StrEnum

from slurmtools.ledger.fields import FIELDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


class EventType(StrEnum):
    FINDING = "finding"
    ATTEMPT = "attempt"
    GATE_RUN = "gate_run"
    NODE_STATE = "node_state"
    NODE_EVENT = "node_event"
    EXCLUSION = "exclusion"
    EXCLUSION_END = "exclusion_end"
    CHAIN = "chain"
    DECISION = "decision"
    IO = "io"
    CHECKPOINT = "checkpoint"
    PERF = "perf"


class Trust(StrEnum):
    """Who could have written the evidence. Only KERNEL, NVML and SYSFS are node-level (a user cannot write them);
    SYSLOG is a daemon's line that any local user can forge with logger(1); METRICS: Prometheus series (detect,
    stalls), which a job's own load moves."""
    KERNEL = "kernel"
    NVML = "nvml"
    SYSFS = "sysfs"
    JOB = "job"
    ADMIN = "admin"
    SYSLOG = "syslog"
    METRICS = "metrics"


class Action(StrEnum):
    """What a finding asks for, mildest first (the order ranks findings: diagnosis/findings.Finding.rank)."""
    NONE = "none"
    RESTART_APP = "restart_app"
    INVESTIGATE = "investigate"
    SOFT_EXCLUDE = "soft_exclude"       # detect: keep new jobs off the node, drain nothing
    RESET_GPU = "reset_gpu"
    REBOOT_NODE = "reboot_node"
    DRAIN_NODE = "drain_node"


class Category(StrEnum):
    HARDWARE = "hardware"
    DRIVER = "driver"
    NETWORK = "network"
    FILESYSTEM = "filesystem"
    APPLICATION = "application"
    UNKNOWN = "unknown"


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    CRITICAL = "critical"


class Source(StrEnum):
    """Which reader produced a finding."""
    KERNEL = "kernel"
    NVML = "nvml"
    SYSFS = "sysfs"
    ADMIN = "admin"
    SYSLOG = "syslog"
    JOB_EXIT = "job-exit"
    JOB_LOG = "job-log"
    DETECT = "detect"
    STALLS = "stalls"
    SLURMTOOLS = "slurmtools"           # an internal error of ours, recorded as a finding that never drains


#: A finding's fields that must hold one of their enum's values (checked by fields.check when a finding is built).
FINDING_ENUMS: dict[str, type[StrEnum]] = {"trust": Trust, "action": Action, "category": Category,
                                           "severity": Severity}
assert set(EventType) == set(FIELDS), "every event type has its fields in ledger/fields.py"


def check_finding(data: Mapping[str, Any]) -> None:
    """Refuse a finding whose trust, action, category or severity is none of the allowed values (ValueError)."""
    for name, enum in FINDING_ENUMS.items():
        value = data.get(name)
        if value is not None and value not in enum.__members__.values():
            raise ValueError(f"a finding's {name} {str(value)[:40]!r} is none of {', '.join(m.value for m in enum)}")
