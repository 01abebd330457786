"""Benign lines of whole public logs that once raised a warning or worse, from the false-alarm sweeps (their
tables in tests/sweeps/, one module per sweep, each with its sources): each benign line, verbatim, stays below
warning in the kernel scan and, where it is a job's output, in the job scan (the epilog reads a job's output through
diagnose_job_output); its fault twin (the same printer reporting a failure) is still found; a failure of the same
family no rule names still reaches the subsystem fallback; and among the benign lines a real failure is still the job
scan's first finding. The checks are tests/rule_cases.py's, the same for every sweep; a sweep's own checks follow."""

from __future__ import annotations

from types import ModuleType

import pytest

from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.subsystems import reported_error_word

from .rule_cases import (
    SEVERE,
    below_warning,
    found_as,
    job_scan_below_warning,
    job_scan_finds,
    reaches_fallback,
)
from .sweeps import sweep1, sweep2, sweep3, sweep4, sweep5, sweep6, sweep7, sweep8, sweep9, sweep10

SWEEPS: dict[str, ModuleType] = {
    "sweep1": sweep1, "sweep2": sweep2, "sweep3": sweep3, "sweep4": sweep4,
    "sweep5": sweep5, "sweep6": sweep6, "sweep7": sweep7, "sweep8": sweep8,
    "sweep9": sweep9, "sweep10": sweep10,
}


def _cases(table: str) -> list[object]:
    """Every row of TABLE of every sweep, its test id `sweepN-i`."""
    return [pytest.param(*(row if isinstance(row, tuple) else (row,)), id=f"{name}-{i}")
            for name, module in SWEEPS.items() for i, row in enumerate(getattr(module, table))]


@pytest.mark.parametrize(("source", "line"), _cases("BENIGN"))
def test_a_benign_line_of_a_public_log_stays_below_warning(source: str, line: str) -> None:
    assert source.startswith("https://github.com/")
    below_warning(line)


@pytest.mark.parametrize("line", _cases("JOB_BENIGN"))
def test_the_job_scan_reads_a_job_outputs_benign_line_below_warning_too(line: str) -> None:
    job_scan_below_warning(line)


@pytest.mark.parametrize(("line", "kind", "severity"), _cases("FAULTS"))
def test_the_fault_twin_is_still_found(line: str, kind: str, severity: str) -> None:
    found_as(line, kind, severity)


@pytest.mark.parametrize(("line", "kind"), _cases("UNCLAIMED"))
def test_an_unclaimed_failure_of_the_same_family_still_reaches_the_fallback(line: str, kind: str) -> None:
    reaches_fallback(line, kind)


@pytest.mark.parametrize(("sweep", "line", "kind", "unrecognised"),
                         [pytest.param(name, *row, id=f"{name}-{i}") for name, module in SWEEPS.items()
                          for i, row in enumerate(module.JOB_FAULTS)])
def test_a_failure_among_the_benign_lines_is_the_job_scans_finding(sweep: str, line: str, kind: str,
                                                                  unrecognised: bool) -> None:
    """A job's output holding all of a sweep's benign lines and one real failure: the failure is still the job scan's
    first finding, from a rule or (UNRECOGNISED) from the fallback."""
    found = job_scan_finds([ln for _, ln in SWEEPS[sweep].BENIGN] + [line], kind)
    assert (found.details.get("unrecognised") is True) == unrecognised


def test_every_sweep_has_its_tables() -> None:
    """A sweep module without one of the tables would silently test nothing of it."""
    for name, module in SWEEPS.items():
        assert module.BENIGN, name
        assert module.FAULTS or module.UNCLAIMED, name
        assert all(line in [ln for _, ln in module.BENIGN] for line in module.JOB_BENIGN), name


# ---- sweep 1's own checks


def test_the_megaraid_table_reads_the_same_from_kmsg() -> None:
    """/dev/kmsg writes the table's tab as `\\x09`, read as a blank: the claim holds either way."""
    below_warning("6,812,2507446,-;megaraid_sas 0000:82:00.0: Online Controller Reset(OCR)\\x09: Enabled")


def test_libata_still_reports_a_failed_read_log() -> None:
    """The NCQ log claim names the two optional logs; any other failure of the same drive stays a warning."""
    findings = [f for f in diagnose(b"ata1.00: failed to get Identify Device Data, Emask 0x1") if f.severity in SEVERE]
    assert findings and findings[0].kind == "disk"


# ---- sweep 2's own checks


def test_a_compiler_flag_denies_the_error_word_but_a_library_error_is_still_reported() -> None:
    """`-Wno-error` (and `-Wno-error=...`) turns an error into a warning in a build; it reports no failure."""
    assert reported_error_word("cc -Wall -Wno-cast-qual -Wno-error -Wno-format-extra-args nvidia-peermem.o") is None
    assert reported_error_word("cc -Wno-error=implicit-function-declaration nvidia-peermem.c") is None
    assert reported_error_word("gdr_pin_buffer: error Invalid argument(22)") == "error"
    assert reported_error_word("NET/IB : no-op, then error 12 on completion") == "error"


def test_the_teardown_claim_wants_the_socket_error_of_a_closed_peer() -> None:
    """Only the errors of a peer that went away (reset, broken pipe, 0 bytes) are the teardown family."""
    store = "[c10d] recvValue failed on SocketImpl(fd=73, addr=localhost:46764, remote=localhost:29500): "
    below_warning(store + "Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown"
                  " or crash?")
    found_as(store + "No route to host", "nccl", "error")


# ---- sweep 4's own checks: Nagios/Icinga alerts (tests/sweeps/sweep4.py's NAGIOS_* tables)


@pytest.mark.parametrize("line", sweep4.NAGIOS_REAL + sweep4.NAGIOS_WRAPPED)
def test_a_monitor_state_field_is_no_failure_word(line: str) -> None:
    assert sweep4.NAGIOS_LOG.startswith("https://github.com/")
    below_warning(line)


def test_the_output_inside_an_alert_is_still_read() -> None:
    """The alert's output keeps its own words: a failure a rule names, and one only the fallback reports."""
    found_as("[1704966721] SERVICE ALERT: gpu017;dmesg;CRITICAL;HARD;1;rdma_rxe: failed to add enp1s0", "ib", "error")
    reaches_fallback("[1704966721] SERVICE ALERT: gpu017;dmesg;CRITICAL;HARD;1;rdma_rxe: queue pair 17 stuck in an"
                     " unexpected state, error -12", "ib")
