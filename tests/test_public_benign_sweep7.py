"""Benign lines of whole public logs that once raised a warning or worse: the seventh sweep (whole public logs none of
the earlier sweeps used: the Slurm and NGC-container output of MLPerf training v3.0 and HPC v2.0 runs on A100, H100,
A30, L4, Gaudi2, Sapphire Rapids and A64FX systems, and the log fixtures of two log tools, tstack/lnav and google/mtail,
with Elastic's systemd and SUSE syslog samples; docs/diagnosis.md). Each family's benign line, verbatim with its source,
stays below warning, in the kernel scan and in the job scan (the epilog reads a job's output through
diagnose_job_output), and its fault twin (the same printer reporting a failure) is still found."""

from __future__ import annotations

import pytest

from .rule_cases import below_warning, job_scan_below_warning, job_scan_finds, reaches_fallback

GH = "https://github.com"
LNAV_GENERIC = f"{GH}/tstack/lnav/blob/bb0005f96c8dc486ee0b9005a4562be0ef61c878/test/logfile_generic.2"

# (source, benign line) per family; the fix is shared-fs-mention's tag in data/subsystems.toml (`(sweep7)` comment)
BENIGN = [
    # a storage word that is the syslog HOST column of rsyslog's/VMware's `RFC 3339 stamp, severity, host,
    # [pid]program:message` layout (a vCloud appliance named `rbd`), not the line naming Ceph's RBD: the application's
    # own error, which no rule and no other subsystem reads (shared-fs-mention's tag skips the host column)
    (LNAV_GENERIC, "2015-04-24T21:08:10.313913+00:00 err rbd  [22968]lotuscreds:ERROR:Could not retrieve lotus account"
                   " information from db"),
    (LNAV_GENERIC, "2015-04-24T21:08:58.430632+00:00 err rbd  [24206]networkutil:ERROR:The configured address"
                   " sg01-1-vc1.oc.vmware.com was invalid"),
]

# the same layout whose program or message names a shared filesystem as a word: still the subsystem fallback's nfs
# warning (the word in the host column changes nothing), and a storage word anywhere else on such a line
UNCLAIMED = [
    ("2015-04-24T21:08:10.313913+00:00 err rbd  [22968]rbd-mirror:ERROR: rbd image sync failed", "nfs"),
    ("2015-04-24T21:08:10.313913+00:00 err rbd  [22968]mountd:ERROR: NFS export of /scratch failed", "nfs"),
    ("2015-04-24T21:08:10.313913+00:00 err node1  [22968]client:ERROR: GPFS mount of /gpfs/fs1 failed", "nfs"),
    ("2015-04-24T21:08:10.313913+00:00 err nfs  [22968]ckpt:ERROR: write to the Lustre scratch failed", "nfs"),
    ("ERROR: checkpoint write to the Lustre scratch failed after 3 retries", "nfs"),
]


@pytest.mark.parametrize(("source", "line"), BENIGN)
def test_a_benign_line_of_a_public_log_stays_below_warning(source: str, line: str) -> None:
    assert source.startswith(GH)
    below_warning(line)


@pytest.mark.parametrize(("source", "line"), BENIGN)
def test_the_job_scan_reads_the_benign_line_below_warning_too(source: str, line: str) -> None:
    """The epilog reads the job's output through joblog (diagnose_job_output), not the kernel scan: the same verdict."""
    assert source.startswith(GH)
    job_scan_below_warning(line)


@pytest.mark.parametrize(("line", "kind"), UNCLAIMED)
def test_the_fault_twin_still_reaches_the_fallback(line: str, kind: str) -> None:
    reaches_fallback(line, kind)


def test_the_fault_twins_are_found_by_the_job_scan() -> None:
    """A job's output holding the benign lines and one real failure: the failure is still the job scan's finding."""
    lines = [ln for _, ln in BENIGN] + [UNCLAIMED[0][0]]
    assert job_scan_finds(lines, "nfs").details.get("unrecognised") is True
