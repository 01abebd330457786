"""Round 9's parallel and network filesystem clients (rules9-pfs): what tests/data/kernel/printers/pfs.tsv cannot say
about the rules it needed. Lustre and LNet warnings without an error word (CWARN/LCONSOLE_WARN/CNETERR), IBM Storage
Scale's daemon failures and untagged mmfs.log lines, the BeeGFS 8 client module, CernVM-FS's syslog, libfuse and
fusermount, the SMB client's stuck socket.

Every line is a format string of the public source named in the rule's comment in slurmtools/data/diagnosis_rules.toml,
its conversions filled in by hand: none is copied from a log or from the field corpus. A job's or a daemon's text never
drains; the kernel's own filesystem lines are investigated, never a node fault; the same printers' healthy lines stay
below warning.
"""

from __future__ import annotations

from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import table_tests

KERNEL = [
    # Lustre/LNet warnings without an error word (kernel: nfs, warning)
    "[ 812.1] LNet: 2117:0:(lib-move.c:681:lnet_post_send_locked()) Dropping message for 12345-10.0.0.23@o2ib: peer "
    "not alive",
    "[ 812.1] LNet: 2117:0:(lib-move.c:4355:lnet_parse_put()) Dropping PUT from 12345-10.0.0.23@o2ib portal 4 match "
    "1784236123456 offset 0 length 520: 4",
    "[ 812.1] LNet: 2117:0:(socklnd_cb.c:906:ksocknal_launch_packet()) No usable routes to 12345-10.0.0.23@tcp",
    "[ 812.1] LNet: Connection to 10.0.0.23@tcp at host 10.0.0.23:988 took too long: that node may be hung or "
    "experiencing high load.",
    "[ 812.1] Lustre: 4821:0:(events.c:420:request_in_callback()) All ost_io request buffers busy",
    "[ 812.1] Lustre: 4821:0:(llite_mmap.c:417:ll_fault0()) fs1: FID [0x200000401:0x1:0x0] under heavy mmap "
    "contention by 'python3', consider revising IO pattern",
    "[ 812.1] Lustre: fs1-OST0003: denying duplicate export for 5f3a9c2e-1b4d: rc = -114",
    "[ 812.1] Lustre: 4821:0:(lov_ea.c:93:lsm_unpackmd_common()) lov: unrecognized striping pattern: rc = -22",
    # BeeGFS 8's client module (kernel: nfs, warning)
    "[ 812.1] beegfs: dd(4321): Remoting (write file): Communication with inactive node. Node: beegfs-storage "
    "storage01 [ID: 3]",
    "[ 812.1] beegfs: df(4321): Remoting (statfs): No storage targets known.",
    # SMB client (kernel: nfs, warning)
    "[ 812.1] CIFS: VFS: \\\\fs01 sends on sock 00000000a1b2c3d4 stuck for 15 seconds",
]

DAEMON_OR_JOB = [
    # IBM Storage Scale (mmfs.log and syslog: nfs, warning)
    "2026-11-26_12:10:10.123+0100: [X] *** Assert exp(0) in line 2331 of file /src/avs/fs/mmfs/ts/fs/alloc.C",
    "Nov 26 12:10:25 node01 mmfs[4210]: [E] Signal 11 at location 0x55D5C0A01234 in process 4210, link reg 0xFFFF.",
    "Mon Jun 25 22:23:36.298 2018: Close connection to 192.168.10.109 c5n109. Attempting reconnect.",
    "Mon Jun 25 16:11:21 2018: Lost membership in cluster remote.cluster. Unmounting file systems.",
    # CernVM-FS (syslog: nfs, warning)
    "Nov 26 12:30:01 node01 cvmfs2[2345]: (atlas.cern.ch) EIO (06) on /repo/sw/lib/libfoo.so",
    "Nov 26 12:30:05 node01 cvmfs2[2345]: (atlas.cern.ch) (manager 'standard') switching proxy from "
    "http://squid01:3128 to http://squid02:3128. Reason: host returned HTTP error [HTTP: 502]",
    "Nov 26 12:30:11 node01 cvmfs2[2345]: (atlas.cern.ch) too little free space on the file system hosting the "
    "cache, 812 MB available",
    # libfuse / fusermount3 (job output: nfs, warning)
    "fuse: failed to open /dev/fuse: Operation not permitted",
    "fusermount3: failed to unmount /scratch/alice/mnt: Device or resource busy",
    "fuse: reading device: No such device",
]


BENIGN_TWINS = [
    "[ 812.1] Lustre: 4821:0:(lproc_llite.c:437:max_read_ahead_mb_store()) fs1: limit max_read_ahead_mb=262144 to "
    "totalram/2=257000MB",
    "[ 812.1] Lustre: 4821:0:(ptlrpcd.c:765:ptlrpcd_init()) Setting ptlrpcd_per_cpt_max = 4",
    "[ 812.1] LNet: 2117:0:(api-ni.c:296:recovery_interval_set()) 'lnet_recovery_interval' has been deprecated",
    "[ 812.1] LNet: 2117:0:(router.c:714:lnet_add_route()) Consider turning discovery on to enable full Multi-Rail "
    "routing functionality",
    "[ 812.1] LustreError: 4821:0:(osc_request.c:2140:osc_brw_fini_request()) Skipped 41 previous similar messages",
    "[ 812.1] LNet: 2117:0:(lib-move.c:4355:lnet_parse_put()) Skipped 3 previous similar messages",
    "[ 812.1] Lustre: fs1-clilmv-ffff8f2b40000000: wait 5s while client connects to new MDT",
    "2026-11-26_12:10:04.123+0100: [I] VERBS RDMA connected to 10.0.0.21 (nsd01) on mlx5_0 port 1 fabnum 0 sl 0 "
    "index 10",
    "Nov 26 12:10:27 node01 mmfs[4210]: [N] mmfsd ready",
    "Mon Jun 25 22:23:38.722 2018: Recovered 1 nodes.",
    "[ 812.1] beegfs: mount(4821): Wait for mgmtd: Waiting for beegfs-mgmtd@mgmt01:8008...",
    "Nov 26 12:30:15 node01 cvmfs2[2345]: (atlas.cern.ch) removing left-over FIFOs from cache directory",
    "Nov 26 12:30:17 node01 cvmfs2[2345]: (atlas.cern.ch) (manager 'standard') geographic order of servers retrieved "
    "from s1cern.example.org",
    "[ 812.1] fuse: init (API version 7.41)",
]


# kernel_investigated_lines: A shared filesystem's client complaining says the filesystem (or its fabric) is in trouble,
# not that this node must drain: trust kernel, verdict investigate, never a node fault.
globals().update(table_tests(found=[(line, "nfs", "warning") for line in KERNEL + DAEMON_OR_JOB],
                             kernel_investigated_lines=KERNEL, no_drain=DAEMON_OR_JOB, twins=BENIGN_TWINS,
                             ids=lambda v: str(v)[:50]))


def test_a_lustre_line_ending_in_rc_zero_is_not_a_failure() -> None:
    """The CWARN convention reads a negative rc as a failed call: rc = 0 (or a positive count) is not one."""
    for line in (b"[ 812.1] Lustre: fs1-OST0003: import restored: rc = 0",
                 b"[ 812.1] Lustre: 4821:0:(genops.c:1607:foo()) fs1: 12 exports, rc = 3"):
        assert not [f for f in diagnose(line) if f.details.get("rule") == "pfs9_lustre_console_warning"], line


def test_a_job_cannot_start_the_lustre_warning_rule() -> None:
    """The Lustre warning rule is anchored at Lustre's own prefix: a job that prints its words makes no kernel
    finding that could drain."""
    findings = diagnose(b"my job: Dropping message for 12345-10.0.0.23@o2ib: peer not alive")
    assert not [f for f in findings if f.details.get("rule") == "pfs9_lustre_console_warning"]
    assert not any(is_node_fault(f, None) for f in findings)


def test_cvmfs_words_without_its_tag_are_not_the_cvmfs_rule() -> None:
    """The CernVM-FS rule needs the cvmfs2 tag: another program's EIO line is not the repository client's."""
    findings = diagnose(b"myapp[12]: (atlas.cern.ch) EIO (06) on /repo/sw/lib/libfoo.so")
    assert not [f for f in findings if f.details.get("rule") == "pfs9_cvmfs_client"]


def test_fuse_words_inside_a_path_are_not_a_fuse_failure() -> None:
    """The FUSE rule reads libfuse's and fusermount's own prefixes, not a path or a word that merely contains them."""
    for line in (b"/opt/libfuse: mount failed: skipped", b"refuse: failed to unmount nothing"):
        assert not [f for f in diagnose(line) if f.details.get("rule") == "pfs9_fuse_user"], line
