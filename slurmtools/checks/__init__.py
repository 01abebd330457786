"""Stage 1, health checks: one module per check, each reading the machine through a `System` (checks/system.py).

A check is a function ``run(system, ctx) -> list[Result]`` in ``slurmtools.checks.<name>``. It reads
the machine only through ``system`` (NVML calls, a sysfs/procfs root, probes), so tests and replays
swap the machine for a snapshot at the lowest boundary while the check code stays the real code.

Statuses, Nagios-like: ok (0), warn (1: reported, the node keeps working), fail (2: the node must not
run jobs), unknown (3: the check could not decide; fails the gate only if ``checks.unknown_fails``).
The runner (checks/runner.py) serves the prolog, the epilog profile, HealthCheckProgram and
``slurmtools check``.
"""

from __future__ import annotations

from slurmtools._plain import Plain

TYPE_CHECKING = False  # typing for the type checker only: it costs ~7 ms of every prolog (docs/performance.md)
if TYPE_CHECKING:
    from typing import Any

    from slurmtools.checks.counters import Counters
    from slurmtools.settings import Checks, HardwareProfile

OK, WARN, FAIL, UNKNOWN = "ok", "warn", "fail", "unknown"
STATUSES = (OK, WARN, FAIL, UNKNOWN)
SEVERITY = {OK: 0, WARN: 1, FAIL: 2, UNKNOWN: 3}

#: Check name -> the ledger category its failures belong to (the drain reason's category).
CHECKS: dict[str, str] = {
    "gpu": "hardware",
    "nvlink": "hardware",
    "infiniband": "network",
    "host": "host",
    "filesystems": "filesystem",
    "commands": "hardware",
    "pcie": "hardware",
    "perf": "hardware",
    "stress": "hardware",
}


class Result(Plain):
    """What one check (or one part of it) found. ``gpus``: NVML indices of the GPUs a GPU-level result
    is about (empty: the whole node)."""

    def __init__(self, check: str, status: str, reason: str = "", evidence: dict[str, Any] | None = None,
                 duration_ms: float = 0.0, gpus: list[int] | None = None) -> None:
        self.check = check
        self.status = status
        self.reason = reason
        self.evidence = evidence if evidence is not None else {}
        self.duration_ms = duration_ms
        self.gpus = gpus if gpus is not None else []
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")

    @property
    def category(self) -> str:
        return CHECKS.get(self.check, "unknown")

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "status": self.status, "reason": self.reason,
                "duration_ms": round(self.duration_ms, 2), "category": self.category,
                "gpus": self.gpus, "evidence": self.evidence}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Result:
        return cls(check=raw["check"], status=raw["status"], reason=raw.get("reason", ""),
                   evidence=raw.get("evidence") or {}, duration_ms=float(raw.get("duration_ms") or 0),
                   gpus=list(raw.get("gpus") or []))


def ok(check: str, reason: str = "", **evidence: object) -> Result:
    return Result(check, OK, reason, evidence)


def warn(check: str, reason: str, gpus: list[int] | None = None, **evidence: object) -> Result:
    return Result(check, WARN, reason, evidence, gpus=gpus or [])


def fail(check: str, reason: str, gpus: list[int] | None = None, **evidence: object) -> Result:
    return Result(check, FAIL, reason, evidence, gpus=gpus or [])


def unknown(check: str, reason: str, **evidence: object) -> Result:
    return Result(check, UNKNOWN, reason, evidence)


class Context(Plain):
    """What a check is told besides the machine: thresholds (the [checks] section), the node's hardware
    profile ([hardware.NAME] over [hardware_profile]), its counters, the job's GPUs (minor numbers)."""

    def __init__(self, node: str, profile: str, settings: Checks, hardware: HardwareProfile,
                 counters: Counters, job_gpus: set[int] | None = None) -> None:
        self.node = node
        self.profile = profile
        self.settings = settings
        self.hardware = hardware
        self.counters = counters
        self.job_gpus = job_gpus
