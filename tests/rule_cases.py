"""What every table of rule cases checks (tests/test_diagnosis_formats*.py): a line built from a printer's format
string, its benign twin, text a job or daemon controls, and the kernel's own lines; one definition of each."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from slurmtools.diagnosis import diagnose, diagnose_job_output
from slurmtools.diagnosis.faults import is_node_fault
from slurmtools.diagnosis.findings import Finding

SEVERE = ("warning", "error", "critical")
#: A rule case: a line, the kind and the severity its top finding must have.
Case = tuple[str, str, str]


def found_as(line: str, kind: str, severity: str) -> None:
    """LINE's top finding is KIND at SEVERITY, from a rule (not the subsystem fallback)."""
    findings = diagnose(line.encode())
    assert findings, line
    assert (findings[0].kind, findings[0].severity) == (kind, severity)
    assert not findings[0].details.get("unrecognised"), "a rule names this family, not the fallback"


def below_warning(line: str) -> None:
    """LINE (a benign twin) raises nothing of warning or above."""
    findings = diagnose(line.encode())
    assert not [f for f in findings if f.severity in SEVERE], [(f.kind, f.severity, f.details) for f in findings]


def job_scan_below_warning(line: str) -> None:
    """LINE, read as a job's output (joblog, what the epilog reads), raises nothing of warning or above."""
    assert not [f for f in diagnose_job_output([line]) if f.severity in SEVERE], line


def job_scan_finds(lines: list[str], kind: str) -> Finding:
    """LINES read as a job's output: its first finding of warning or above is KIND (a real failure among benign
    lines is still the job scan's finding); that finding, for further checks."""
    severe = [f for f in diagnose_job_output(lines) if f.severity in SEVERE]
    assert severe and severe[0].kind == kind, [(f.kind, f.severity, f.details.get("rule")) for f in severe]
    return severe[0]


def no_node_fault(line: str) -> None:
    """LINE (the kernel's own, which may be found and recorded) is no node fault: it is never drained on."""
    assert not [f for f in diagnose(line.encode()) if is_node_fault(f, None)], line


def never_drains(line: str) -> None:
    """LINE (text a job, a daemon or a tool prints) is trust job or syslog, never a node fault."""
    findings = diagnose(line.encode())
    assert all(f.trust in ("job", "syslog") for f in findings), [(f.details.get("rule"), f.trust) for f in findings]
    assert not any(is_node_fault(f, None) for f in findings)


def trust_kernel(line: str) -> None:
    """LINE (the kernel's own) is found with trust kernel."""
    findings = diagnose(line.encode())
    assert findings and findings[0].trust == "kernel"


def not_the_kernels(line: str) -> None:
    """LINE (a job's output quoting a kernel text behind its own words) gives no trust-kernel finding: the kernel rules
    read the message's start, so it can never drain."""
    assert not [f for f in diagnose(line.encode()) if f.trust == "kernel"], line


def reaches_fallback(line: str, kind: str) -> None:
    """LINE (a failure no rule names) is still the subsystem fallback's: its top warning-or-above finding is KIND and
    flagged `unrecognised`."""
    findings = [f for f in diagnose(line.encode()) if f.severity in SEVERE]
    assert findings, line
    assert findings[0].kind == kind
    assert findings[0].details.get("unrecognised") is True


def table_tests(*, kernel: Sequence[Case] = (), other: Sequence[Case] = (),
                twins: Sequence[str] = ()) -> dict[str, Callable[..., None]]:
    """The four tests every table of rule cases runs, for a module to take in (`globals().update(table_tests(...))`):
    each case found as its kind and severity by a rule; the kernel's own lines (KERNEL) trust kernel; a job's, a
    daemon's or a tool's (OTHER) never drains; each benign twin below warning."""

    @pytest.mark.parametrize(("line", "kind", "severity"), [*kernel, *other])
    def test_a_familys_line_is_found(line: str, kind: str, severity: str) -> None:
        found_as(line, kind, severity)

    @pytest.mark.parametrize("line", [case[0] for case in kernel])
    def test_the_kernels_lines_are_trust_kernel(line: str) -> None:
        trust_kernel(line)

    @pytest.mark.parametrize("line", [case[0] for case in other])
    def test_a_jobs_daemons_or_tools_line_never_drains(line: str) -> None:
        never_drains(line)

    @pytest.mark.parametrize("line", twins)
    def test_a_benign_twin_stays_below_warning(line: str) -> None:
        below_warning(line)

    made = [test_a_familys_line_is_found, test_the_kernels_lines_are_trust_kernel,
            test_a_jobs_daemons_or_tools_line_never_drains, test_a_benign_twin_stays_below_warning]
    return {test.__name__: test for test, cases in zip(made, (1, kernel, other, twins), strict=True) if cases}
