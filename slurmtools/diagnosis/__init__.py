"""Stage 2, epilog diagnosis: the kernel log (XID, NVLink, IB, MCE, AER, OOM, NFS, hangs) and the job's exit
and output, classified into findings (kind, category, action, severity, trust) with the XID catalog.

Reads the kernel-log window since the prolog's marker (`sources`), the job's output and exit; pure code
otherwise: the epilog hook and `slurmtools diagnose` record and act on what it returns.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing for the type checker only: it costs ~7 ms of every prolog (docs/performance.md)
if TYPE_CHECKING:
    from typing import Any

    from slurmtools.diagnosis.findings import Finding

__all__ = ["Finding", "diagnose", "diagnose_job_output"]


def diagnose(kernel_data: bytes, *, exit_code: int | None = None, exit_signal: int = 0,
             job_state: str | None = None, job_lines: list[str] | None = None,
             overrides: dict[str, dict[str, Any]] | None = None, no_requeue_code: int = 93,
             rules: list[dict[str, Any]] | None = None, window_s: float | None = None) -> list[Finding]:
    """All findings for one job's window on one node, after the noise policy, most serious first.
    RULES: a site's `[[diagnosis.rules]]`; WINDOW_S: the job's window on this node (for rate rules)."""
    from slurmtools.diagnosis import joblog, kernel, policy  # here: the prolog imports only `sources`
    from slurmtools.diagnosis.rules import ruleset

    rs = ruleset(rules)
    found, boots = kernel.scan(kernel_data, {"overrides": overrides or {}, "ruleset": rs, "window_s": window_s})
    exit_f = None
    if exit_code is not None or job_state:
        exit_f = joblog.exit_finding(exit_code or 0, exit_signal, job_state, no_requeue_code)
    job_findings = joblog.scan(job_lines, rs) if job_lines else []
    app_failed = exit_f is not None or any(f.kind in {"cuda", "nccl"} for f in job_findings)
    findings = policy.apply(found, boots, app_failed)
    findings += policy.fold(job_findings)
    if exit_f is not None:
        findings.append(exit_f)
    return sorted(findings, key=lambda f: (-f.rank(), f.line or 0))


def diagnose_job_output(job_lines: list[str], rules: list[dict[str, Any]] | None = None) -> list[Finding]:
    """The findings in the job's own output alone (trust job), folded: what the epilog reads after the node's
    evidence is recorded, so that nothing the job wrote can change or delay the node's findings."""
    from slurmtools.diagnosis import joblog, policy
    from slurmtools.diagnosis.rules import ruleset

    return policy.fold(joblog.scan(job_lines, ruleset(rules))) if job_lines else []


def __getattr__(name: str) -> Any:
    """`Finding` on first use: the prolog imports `sources` from this package and needs no dataclass."""
    if name == "Finding":
        from slurmtools.diagnosis.findings import Finding

        return Finding
    raise AttributeError(name)
