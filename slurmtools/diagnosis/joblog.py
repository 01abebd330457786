"""The job's own output -> findings with trust "job": they may decide a retry, never drain a node."""

from __future__ import annotations

import re

from slurmtools.diagnosis.findings import Finding

MAX_LINE = 4096

_RULES: list[tuple[re.Pattern[str], str, str, str, str]] = [
    # pattern, kind, category, action, severity
    (re.compile(r"Watchdog caught collective operation timeout|NCCL watchdog.*timeout|"
                r"ProcessGroupNCCL.*[Tt]imeout"), "nccl", "network", "restart_app", "error"),
    (re.compile(r"ncclSystemError|ncclRemoteError|NET/IB ?: .*(?:error|Error|failed)|"
                r"NCCL WARN .*(?:ibv_|IB|[Nn]et|[Ss]ocket|[Cc]onnection)"), "nccl", "network", "restart_app", "error"),
    (re.compile(r"ncclUnhandledCudaError|ncclInternalError|NCCL error|NCCL WARN|"
                r"NCCL communicator was aborted"), "nccl", "unknown", "restart_app", "error"),
    (re.compile(r"uncorrectable ECC error encountered|uncorrectable NVLink error"), "cuda", "hardware", "reset_gpu",
     "error"),
    (re.compile(r"illegal memory access was encountered|misaligned address|device-side assert triggered"),
     "cuda", "application", "restart_app", "error"),
    (re.compile(r"CUDA out of memory|OutOfMemoryError"), "cuda", "application", "restart_app", "error"),
    (re.compile(r"CUDA error: (?!out of memory)|CUDA_ERROR_\w+|cudaError\w+"), "cuda", "unknown", "restart_app",
     "error"),
]
_KEY = re.compile(r"NCCL|nccl|CUDA|cuda|ECC|NVLink|Watchdog|watchdog|OutOfMemoryError|illegal memory|"
                  r"misaligned|device-side")


def scan(lines: list[str]) -> list[Finding]:
    out: list[Finding] = []
    for number, raw in enumerate(lines, start=1):
        text = raw.rstrip("\r\n")[:MAX_LINE]
        if not _KEY.search(text) or "NCCL INFO" in text:
            continue
        for pattern, kind, category, action, severity in _RULES:
            if pattern.search(text):
                out.append(Finding(kind=kind, category=category, action=action, severity=severity, trust="job",
                                   message=text.strip(), line=number))
                break
    return out


def exit_finding(code: int, signal: int, state: str | None = None,
                 no_requeue_code: int = 93) -> Finding | None:
    """The job's exit as a finding (trust job). None for a clean exit."""
    if code == 0 and signal == 0 and state in (None, "COMPLETED"):
        return None
    what = f"signal {signal}" if signal else f"exit code {code}"
    details: dict[str, object] = {"exit_code": code, "signal": signal}
    if state:
        details["state"] = state
    if code == no_requeue_code:
        details["do_not_requeue"] = True
    return Finding(kind="exit", category="application", action="none", severity="warning", trust="job",
                   message=f"job ended with {what}" + (f" ({state})" if state else ""), details=details)

