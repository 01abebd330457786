"""Round 8's leftover printers (rules8-leftovers): what tests/data/kernel/printers/leftovers.tsv cannot say about the
rules it needed. rpc.gssd's machine-credential failures, a Lustre target refusing or dropping clients, IPoIB connected
mode rejecting a peer's MTU, the rdma-core example programs' failures (ibv_rc_pingpong, rping), and the extensions of
rpcrdma_error (4.x frwr/fmr lines) and gpfs_error (mmfsd closing a connection with its reason).

Every line is a format string of the public source named in the rule's comment in slurmtools/data/diagnosis_rules.toml,
its conversions filled in by hand: none is copied from a log or from the field corpus. A job's or a daemon's text never
drains; the same printers' healthy lines stay below warning.
"""

from __future__ import annotations

from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import table_tests

FAULTS = [
    # rpc.gssd (syslog: nfs, warning)
    ("Nov 26 11:33:35 node01 rpc.gssd[812]: WARNING: Client not found in Kerberos database while getting initial "
     "ticket for principal 'nfs/node01.example.org@EXAMPLE.ORG' using keytab 'FILE:/etc/krb5.keytab'",
     "nfs", "warning"),
    ("Nov 26 11:33:38 node01 rpc.gssd[812]: WARNING: Machine cache prematurely expired or corrupted trying to recreate "
     "cache for server nfs01.example.org", "nfs", "warning"),
    # a Lustre target (kernel: nfs, warning)
    ("[ 812.1] Lustre: fs1-OST0003: disconnecting 3 stale clients", "nfs", "warning"),
    ("[ 812.1] Lustre: fs1-OST0003: Client 5f3a9c2e-1b4d (at 10.0.0.57@o2ib) refused connection, still busy with 12 "
     "references", "nfs", "warning"),
    # NFS over RDMA, 4.x (kernel: nfs, warning)
    ("[ 812.1] rpcrdma: fastreg: transport retry counter exceeded (12/0x81)", "nfs", "warning"),
    ("[ 812.1] rpcrdma: ib_dereg_mr status -16, frwr 00000000a1b2c3d4 orphaned", "nfs", "warning"),
    ("[ 812.1] rpcrdma: FMR reset failed (-16), 00000000a1b2c3d4 released", "nfs", "warning"),
    # IBM Storage Scale (syslog: nfs, warning)
    ("Nov 26 11:34:19 node01 mmfs[4210]: [E] Close connection to 10.0.0.21 nsd01 <c0n3> (Connection reset by peer)",
     "nfs", "warning"),
    # IPoIB connected mode (kernel: ib, warning)
    ("[ 812.1] ib0: Rejecting connection: mtu 4 <= 4", "ib", "warning"),
    # Soft-RoCE's ibdev_err prints (kernel: ib, warning)
    ("[ 812.1] rxe0: qp#17 rxe_init_sq: Unable to allocate send queue", "ib", "warning"),
    ("[ 812.1] rxe0: rxe_create_qp: returned err = -12", "ib", "warning"),
    # RTRS naming the verb that failed (kernel: ib, warning; rdma8_rtrs_error extended)
    ("[ 812.1] rtrs_client L1732: <rnbd-sess-01>: rdma_connect_locked(): -110", "ib", "warning"),
    # rdma-core's example programs (job output: ib, warning)
    ("cma detected device removal!!!!", "ib", "warning"),
    ("cq completion failed status 5", "ib", "warning"),
    ("recv_buf reg_mr failed", "ib", "warning"),
]


BENIGN_TWINS = [
    "[ 812.1] Lustre: fs1-OST0003: Client 5f3a9c2e-1b4d (at 10.0.0.57@o2ib) reconnected, waiting for 100 clients in "
    "recovery for 2:12",
    "2026-11-26_11:34:10.123+0100: [I] Connected to 10.0.0.21 nsd01 <c0n3>",
    "  local address:  LID 0x0003, QPN 0x000123, PSN 0x4f2a1b, GID ::",
    "8192000 bytes in 0.01 seconds = 6553.60 Mbit/sec",
    "[ 812.1] pNFS: using block device sdb (reservation key 0x666b60901e7b26b3)",
    "[ 812.1] rxe0: rxe_set_mtu: Set mtu to 4096",
    "[ 812.1] ceph: [2a3b8c1e-0f4d-4b6a-9c2d-1e2f3a4b5c6d 4187]: mds0 reconnect success",
]


# kernel_quiet_lines: The kernel's own lines are trust kernel, and their verdict (investigate) is not a node fault: a
# Lustre target's or a transport's complaint says the shared filesystem is in trouble, not that this node must drain.
globals().update(table_tests(found=FAULTS,
                             kernel_quiet_lines=[line for line, _, _ in FAULTS if line.startswith("[ 812.1]")],
                             no_drain=[line for line, _, _ in FAULTS if not line.startswith("[ 812.1]")],
                             twins=BENIGN_TWINS, ids=lambda v: str(v)[:50]))


def test_a_job_printing_an_ib_device_that_exists_is_not_a_fault() -> None:
    """The examples' rule needs the failure's own words: a job naming its HCA, or saying it will wait for a state,
    is not an RDMA finding."""
    for line in (b"IB device mlx5_0 found, using port 1", b"we wait for CONNECTED state now"):
        assert not [f for f in diagnose(line) if f.kind == "ib"], line


def test_a_lustre_client_name_cannot_start_the_target_rule() -> None:
    """The target rule is anchored at Lustre's own prefix: a job that prints the words does not make a kernel finding
    that could drain."""
    findings = diagnose(b"my job: disconnecting 3 stale clients")
    assert not any(is_node_fault(f, None) for f in findings)
    assert not [f for f in findings if f.kind == "nfs" and f.severity in ("warning", "error", "critical")]


def test_ipoib_rejecting_another_reason_is_not_read_as_the_mtu_reject() -> None:
    findings = diagnose(b"[ 812.1] ib0: Rejecting connection: peer busy")
    assert not [f for f in findings if f.details.get("rule") == "leftovers8_ipoib_cm_reject"]


def test_rxes_prefix_alone_is_not_an_error() -> None:
    """rxe_info_dev() prints the same `rxe0: function: ` prefix as rxe_err_dev(): a line without an error word is not
    read by the Soft-RoCE rule (the lesson of mlx5_core_info in rules8-rdma)."""
    for line in (b"[ 812.1] rxe0: rxe_set_mtu: Set mtu to 4096", b"[ 812.1] rxe0: qp#17 rxe_qp_do_cleanup: freed"):
        assert not [f for f in diagnose(line) if f.details.get("rule") == "leftovers8_rxe_error"], line
