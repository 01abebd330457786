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


def trust_kernel_no_fault(line: str) -> None:
    """LINE (the kernel's own) is trust kernel and no node fault: evidence a rule records, never a drain."""
    trust_kernel(line)
    no_node_fault(line)


def kernel_investigated(line: str) -> None:
    """LINE (the kernel's own) is trust kernel, its top finding's action is investigate, and no finding is a node
    fault."""
    trust_kernel(line)
    findings = diagnose(line.encode())
    assert findings[0].action == "investigate"
    assert not any(is_node_fault(f, None) for f in findings)


def kernel_drains(line: str) -> None:
    """LINE (the kernel's own) is trust kernel, and a finding of it is a node fault: it drains."""
    trust_kernel(line)
    assert any(is_node_fault(f, None) for f in diagnose(line.encode())), line


def enveloped_kernel_warning(line: str) -> None:
    """LINE (a kernel line behind a syslog or dmesg envelope) is read the same: a warning with trust kernel."""
    findings = diagnose(line.encode())
    assert findings and findings[0].severity == "warning" and findings[0].trust == "kernel", line


def read_by(line: str, rule: str) -> None:
    """LINE's top finding is RULE's."""
    assert diagnose(line.encode())[0].details.get("rule") == rule


def not_read_by(line: str, prefix: str) -> None:
    """LINE (a long hostile line of near-matches, or text quoting a printer's) is decided, and no finding of it is a
    rule's whose name starts with PREFIX."""
    rules = {f.details.get("rule") for f in diagnose(line.encode())}
    assert not {r for r in rules if r and str(r).startswith(prefix)}


Lines = Sequence[str]
#: A line and a kind: a fact at info (`info`), or the subsystem fallback's finding (`fallback`).
LineKind = tuple[str, str]


def table_tests(*, found: Sequence[Case] = (), kernel: Sequence[Case] = (), kernel_quiet: Sequence[Case] = (),
                other: Sequence[Case] = (), kernel_evidence: Sequence[Case] = (), kernel_lines: Lines = (),
                kernel_quiet_lines: Lines = (), kernel_investigated_lines: Lines = (), kernel_drains_lines: Lines = (),
                no_drain: Lines = (), no_fault: Lines = (), twins: Lines = (), job_twins: Lines = (),
                not_kernels: Lines = (), enveloped_kernel: Lines = (), info: Sequence[LineKind] = (),
                fallback: Sequence[LineKind] = (), rules: Sequence[tuple[str, str]] = (),
                unread: tuple[str, Lines] = ("", ()),
                ids: Callable[[object], str] | None = None) -> dict[str, Callable[..., None]]:
    """The tests a table of rule cases runs, for a module to take in (`globals().update(table_tests(...))`); only those
    with cases are made, each parametrized over its cases (IDS, if given, names them).

    Cases (a line, its kind and severity), each found as its kind and severity by a rule (`found_as`), and further:
    KERNEL the kernel's own lines, trust kernel; KERNEL_QUIET the kernel's own, trust kernel and no node fault; OTHER a
    job's, a daemon's or a tool's, never drains; FOUND nothing further. KERNEL_EVIDENCE: each found and no node fault,
    in one test.

    Lines: KERNEL_LINES trust kernel; KERNEL_QUIET_LINES trust kernel and no node fault; KERNEL_INVESTIGATED_LINES trust
    kernel, investigated and never a node fault; KERNEL_DRAINS_LINES trust kernel and a node fault; NO_DRAIN never
    drains (trust job or syslog); NO_FAULT no node fault; TWINS below warning; JOB_TWINS below warning read as a job's
    output; NOT_KERNELS no trust-kernel finding; ENVELOPED_KERNEL a warning with trust kernel.

    INFO (line, kind) found as KIND at info; FALLBACK (line, kind) the subsystem fallback's KIND; RULES (line, rule) the
    top finding RULE's; UNREAD (prefix, lines) no rule named PREFIX... reads the lines."""
    line_cases = [*found, *kernel, *kernel_quiet, *other]
    prefix, unread_lines = unread

    def found_and_only_investigated(line: str, kind: str, severity: str) -> None:
        found_as(line, kind, severity)
        no_node_fault(line)

    def found_as_info(line: str, kind: str) -> None:
        found_as(line, kind, "info")

    def not_the_new_rules(line: str) -> None:
        not_read_by(line, prefix)

    # name, its cases (a line, or a line and what it must be), the check each case runs
    made: list[tuple[str, Sequence[object], Callable[..., None]]] = [
        ("test_a_familys_line_is_found", line_cases, found_as),
        ("test_the_kernels_lines_are_trust_kernel", [case[0] for case in kernel] + list(kernel_lines), trust_kernel),
        ("test_the_kernels_lines_are_trust_kernel_and_never_drain",
         [case[0] for case in kernel_quiet] + list(kernel_quiet_lines), trust_kernel_no_fault),
        ("test_the_kernels_lines_are_kernel_evidence_to_investigate", kernel_investigated_lines, kernel_investigated),
        ("test_the_kernels_lines_drain", kernel_drains_lines, kernel_drains),
        ("test_a_kernel_line_is_found_and_only_investigated", kernel_evidence, found_and_only_investigated),
        ("test_a_jobs_daemons_or_tools_line_never_drains", [case[0] for case in other] + list(no_drain), never_drains),
        ("test_a_line_is_no_node_fault", no_fault, no_node_fault),
        ("test_a_benign_twin_stays_below_warning", twins, below_warning),
        ("test_a_benign_twin_stays_below_warning_in_a_jobs_output", job_twins, job_scan_below_warning),
        ("test_a_job_echoing_a_kernel_text_is_not_the_kernels", not_kernels, not_the_kernels),
        ("test_an_enveloped_kernel_line_is_a_kernel_warning", enveloped_kernel, enveloped_kernel_warning),
        ("test_a_detail_or_setting_line_is_info", info, found_as_info),
        ("test_a_failure_no_rule_names_reaches_the_fallback", fallback, reaches_fallback),
        ("test_the_rule_that_reads_each_family", rules, read_by),
        ("test_a_hostile_or_quoting_line_is_not_the_new_rules", unread_lines, not_the_new_rules),
    ]
    return {name: _parametrized(name, cases, check, ids) for name, cases, check in made if cases}


def _parametrized(name: str, cases: Sequence[object], check: Callable[..., None],
                  ids: Callable[[object], str] | None) -> Callable[..., None]:
    """A test named NAME that runs CHECK on each case: a line alone, or a line and one or two things it must be."""
    width = len(cases[0]) if isinstance(cases[0], tuple) else 1
    if width == 1:
        def test(line: str) -> None:
            check(line)
        argnames = "line"
    elif width == 2:
        def test(line: str, expected: str) -> None:  # type: ignore[misc]
            check(line, expected)
        argnames = "line,expected"
    else:
        def test(line: str, kind: str, severity: str) -> None:  # type: ignore[misc]
            check(line, kind, severity)
        argnames = "line,kind,severity"
    test.__name__ = test.__qualname__ = name
    return pytest.mark.parametrize(argnames, cases, ids=ids)(test)
