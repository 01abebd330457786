"""The last resort for a job's, a tool's or a daemon's own words about a shared filesystem or the fabric (round 9,
data/subsystems.toml `shared-fs-mention`, `fabric-mention`): a line that names one as a word, holds a failure word it
does not deny and that no rule claims is a warning of that kind, unrecognised, trust job (never a drain); a path
segment (/nfs/home) is not a name; the help texts and notes the sweeps found stay silent; and a library's tag found
anywhere in a line no longer keeps the scan from a later start where a kernel message begins."""

from __future__ import annotations

import pytest

from slurmtools.diagnosis import diagnose, joblog
from slurmtools.diagnosis.faults import is_node_fault

SEVERE = ("warning", "error", "critical")

FOUND = [
    ("ERROR: checkpoint write to the Lustre scratch failed after 3 retries", "nfs"),
    ("warning: NFS share unreachable, retrying", "nfs"),
    ("[2026-11-26 10:11:12] job paused: the BeeGFS storage target is unreachable", "nfs"),
    ("rank 3: the GPFS quorum was lost, aborting", "nfs"),
    ("Error: the RDMA device could not be opened for the job's buffers", "ib"),
    ("HCA port 1 is down", "ib"),
    ("Slingshot link degraded on hsn0", "ib"),
]


@pytest.mark.parametrize(("line", "kind"), FOUND)
def test_a_named_filesystem_or_fabric_with_a_failure_word_is_a_job_warning(line: str, kind: str) -> None:
    found = [f for f in diagnose(line.encode()) if f.severity in SEVERE]
    assert found and found[0].kind == kind and found[0].details.get("unrecognised"), (line, found)
    assert all(f.trust == "job" and not is_node_fault(f, None) for f in found)
    assert [f.kind for f in joblog.scan([line]) if f.severity in SEVERE][:1] == [kind]


BENIGN = [
    # a path segment is not a filesystem's name
    "FileNotFoundError: error opening /nfs/home/alice/data/x.txt",
    "ERROR: could not read /gpfs/scratch/bob/config.yaml: no such key 'lr'",
    # ompi_info's parameter help, LNet skipping an interface that is down, prose, ibdev2netdev's table, a denial
    '                          InfiniBand "receiver not ready" retry count; applies *only* to SRQ/XRC queues (must be '
    '>= 0 and <= 7; 7 = "infinite")',
    "[ 3011.280790] LNet: 7516:0:(config.c:1641:lnet_inet_enumerate()) lnet: Ignoring interface virbr0-nic: it's down",
    "IBM's filers use both Fibre Channel and InfiniBand to protect mission-critical data at rest.",
    "mlx5_0   port  1  ==>  ibp26s0        (Down)",
    "NFS mount check: no error",
    "GPUDirect RDMA is disabled",
    # autofs is not a mention: its daemon's daily 'lookup ... failed' for a missing key is its rules' business
    "Nov 26 12:16:29 node01 automount[2231]: lookup(program): lookup for alice failed",
]


@pytest.mark.parametrize("line", BENIGN)
def test_a_path_a_help_text_or_a_note_stays_silent(line: str) -> None:
    assert not [f for f in diagnose(line.encode()) if f.severity in SEVERE], line


def test_a_later_start_still_reads_the_kernel_message_behind_a_librarys_word() -> None:
    # a monitor's alert whose state field precedes the kernel's line: the rule's verdict (error), not the mention's
    line = "[1704966721] SERVICE ALERT: gpu017;dmesg;CRITICAL;HARD;1;nfs: server 10.0.0.27 not responding, still trying"
    top = diagnose(line.encode())[0]
    assert (top.kind, top.severity, top.details.get("rule")) == ("nfs", "error", "nfs_server")
    assert top.details.get("envelope") == "unread" and top.trust == "syslog"
