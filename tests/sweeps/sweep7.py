"""Benign lines of whole public logs that once raised a warning or worse: the seventh sweep (whole public logs none of
the earlier sweeps used: the Slurm and NGC-container output of MLPerf training v3.0 and HPC v2.0 runs on A100, H100,
A30, L4, Gaudi2, Sapphire Rapids and A64FX systems, and the log fixtures of two log tools, tstack/lnav and google/mtail,
with Elastic's systemd and SUSE syslog samples; docs/diagnosis.md). Each family's benign line, verbatim with its source,
stays below warning, in the kernel scan and in the job scan (the epilog reads a job's output through
diagnose_job_output), and its fault twin (the same printer reporting a failure) is still found."""

from __future__ import annotations

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

FAULTS: list[tuple[str, str, str]] = []
# the lines the job scan (diagnose_job_output, what the epilog reads) keeps below warning too
JOB_BENIGN = [ln for _, ln in BENIGN]
# (a job-output line, its kind, found by the fallback): among all BENIGN lines, still the job scan's first finding
JOB_FAULTS = [(UNCLAIMED[0][0], "nfs", True)]
