"""Round 9's MPI printers (rules9-MPI): what tests/data/kernel/printers/mpi.tsv cannot say about the rules it needed.
How Open MPI (btl/tcp, ORTE/PRRTE, oob/tcp, PMIx, coll/ucc and coll/hcoll, the CUDA accelerator), MPICH (ch4 OFI and UCX
netmods, hydra) and Slurm's launcher (srun, slurmstepd, its PMIx plugin) report a node, a daemon or the network under
a job failing.

Every line is a format string of the public source named in the rule's comment in slurmtools/data/diagnosis_rules.toml,
its conversions filled in by hand: none is copied from a log or from the field corpus. A job's text never drains
(trust job), whatever envelope carries it; a lost node or daemon under a job is filed under ib (its connection path);
Slurm's time-limit, preemption and cancel banners are not node faults.
"""

from __future__ import annotations

from slurmtools.diagnosis import diagnose
from slurmtools.diagnosis.faults import is_node_fault

from .rule_cases import table_tests

FAULTS = [
    # Open MPI's TCP transport (ib, error; a peer that hung up: ib, warning)
    ("WARNING: Open MPI failed to TCP connect to a peer MPI process.  This", "ib", "error"),
    ("[n1][[41234,1],3][btl_tcp_frag.c:241:mca_btl_tcp_frag_recv] mca_btl_tcp_frag_recv: readv failed: Connection "
     "reset by peer (104)", "ib", "error"),
    ("[n1][[41234,1],3][btl_tcp_endpoint.c:801:mca_btl_tcp_endpoint_complete_connect] connect() to 10.1.0.12 failed: "
     "Connection refused (111)", "ib", "error"),
    ("  Message:    connect() to 10.1.0.12:1024 failed", "ib", "error"),
    ("An MPI communication peer process has unexpectedly disconnected.  This", "ib", "warning"),
    # ORTE / PRRTE / PMIx losing a daemon or a peer (ib, error)
    ("ORTE has lost communication with a remote daemon.", "ib", "error"),
    ("PRTE has lost communication with a remote daemon.", "ib", "error"),
    ("An ORTE daemon has unexpectedly failed after launch and before", "ib", "error"),
    ("A critical communication path was lost to:", "ib", "error"),
    ("[n1:41234] [[41234,0],1] ORTE_ERROR_LOG: Unreachable in file ../../../../../orte/mca/rml/oob/rml_oob_send.c at "
     "line 125", "ib", "error"),
    ("[n1:41234] PMIX ERROR: UNREACHABLE in file ../../../../../../src/server/pmix_server.c at line 2795",
     "ib", "error"),
    ("[n1:41234] [[41234,0],1] orte_tcp_peer_try_connect: tcp_peer_send_connect_ack to proc [[41234,0],0] on "
     "10.1.0.1:43211 failed: Unreachable (-12)", "ib", "error"),
    # MPICH's OFI netmod and hydra (ib, error)
    ("MPIDI_OFI_mpi_init_hook(1530)...........: No valid libfabric provider", "ib", "error"),
    ("[mpiexec@n1] HYD_pmcd_pmip_control_cmd_cb (pm/pmiserv/pmiserv_cb.c:208): assert (!closed) failed", "ib", "error"),
    ("[mpiexec@n1] control_cb (mpiexec/pmiserv_cb.c:279): unable to read command from proxy", "ib", "error"),
    ("[proxy:0:1@n2] HYDU_sock_write (lib/utils/sock.c:250): write error (Broken pipe)", "ib", "error"),
    ("MPID_nem_tcp_connpoll(1845)...........: Communication error with rank 1: Connection reset by peer",
     "ib", "error"),
    ("MPID_nem_tcp_recv_handler(1538).......: socket closed", "ib", "error"),
    ("MPIDI_UCX_send_cmpl_cb(35)...............: returned failed request in UCX netmod(ucx_send.h 35 "
     "MPIDI_UCX_send_cmpl_cb Endpoint timeout)", "ib", "error"),
    # Open MPI's collective offload components (ib, warning)
    ("Error: coll_ucc_module.c:380 - mca_coll_ucc_init_ctx() UCC context create failed", "ib", "warning"),
    # Slurm's PMIx plugin unable to reach another node's server (ib, warning)
    ("slurmstepd: error:  mpi/pmix_v4: pmixp_coll_ring_reset_if_to: n1 [0]: pmixp_coll_ring.c:737: 0x7f1234567890: "
     "collective timeout seq=0", "ib", "warning"),
    ("slurmstepd: error:  mpi/pmix_v4: pmixp_stepd_send: n1 [0]: pmixp_utils.c:369: send failed, rc=1001, exceeded "
     "the retry limit", "ib", "warning"),
    ("slurmstepd: error:  mpi/pmix_v4: pmixp_dconn_connect: n1 [0]: pmixp_dconn.h:245: Cannot establish direct "
     "connection to n2 (1)", "ib", "warning"),
    # SIGKILL in hydra's words, as oom_job_killed files mpirun's and srun's (oom, warning)
    ("YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)", "oom", "warning"),
    # Slurm: a node declared failed, a launch that lost its connection (ib, warning)
    ("srun: error: Node failure on gpu-node08", "ib", "warning"),
    ("slurmstepd: error: *** STEP 4411.0 ON gpu-node07 CANCELLED AT 2026-11-26T10:01:02 DUE TO NODE FAILURE, SEE "
     "SLURMCTLD LOG FOR DETAILS ***", "ib", "warning"),
    ("srun: error: Task launch for StepId=4411.0 failed on node gpu-node08: Communication connection failure",
     "ib", "warning"),
    ("srun: error: Application launch failed: Socket timed out on send/recv operation", "ib", "warning"),
    ("slurmstepd: error: _send_launch_resp: Failed to send RESPONSE_LAUNCH_TASKS: Connection refused", "ib", "warning"),
    # Open MPI 5's CUDA support (cuda, error)
    ("The call to cuPointerSetAttribute with CU_POINTER_ATTRIBUTE_SYNC_MEMOPS", "cuda", "error"),
    ("A call to allocate memory within the CUDA support failed.  This is", "cuda", "error"),
]


BENIGN_TWINS = [
    "[n1:41234] btl:tcp: connect() to 10.1.0.12:1024 completed (complete_connect), sending connect ACK",
    "WARNING: The call to cuCtxGetCurrent() failed while attempting to register",
    "Open MPI's OFI driver detected multiple NICs on the system but cannot select an",
    "slurmstepd: error: *** JOB 4411 ON gpu-node07 CANCELLED AT 2026-11-26T10:01:02 DUE TO TIME LIMIT ***",
    "slurmstepd: error: *** JOB 4411 ON gpu-node07 CANCELLED AT 2026-11-26T10:01:02 DUE TO PREEMPTION ***",
    "slurmstepd: error: *** STEP 4411.0 ON gpu-node07 CANCELLED AT 2026-11-26T10:01:02 ***",
    "srun: error: Task launch for StepId=4411.0 failed on node gpu-node08: Invalid job credential",
    "srun: error: Unable to create step for job 4411: Invalid generic resource (gres) specification",
    "slurmstepd: error: execve(): ./train.py: No such file or directory",
    "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",
    "MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD",
    "[n1:41234] [[41234,0],0] ORTE_ERROR_LOG: Data unpack would read past end of buffer in file util/show_help.c at "
    "line 501",
    "[mpiexec@n1] main (mpiexec/mpiexec.c:129): no nodes available to launch processes",
    "Error: coll_ucc_module.c:340 - mca_coll_ucc_init_ctx() UCC library doesn't support MPI_THREAD_MULTIPLE",
    "slurmstepd: debug:  n1 [0]: pmixp_server.c:615: Connection closed fd = 12",
]


globals().update(table_tests(other=FAULTS, twins=BENIGN_TWINS, ids=lambda v: str(v)[:50]))


def test_the_tcp_rules_need_a_failure() -> None:
    """The btl/tcp and oob/tcp rules read a connect() or a peer call that failed, not the same calls' progress lines."""
    for line in (b"[n1:41234] btl: tcp: attempting to connect() to [[41234,1],5] address 10.1.0.12 on port 1024",
                 b"connect() to 10.1.0.12:1024 completed",
                 b"[n1:41234] [[41234,0],1] tcp_peer_complete_connect: connection to [[41234,0],0] complete"):
        assert not [f for f in diagnose(line) if f.kind == "ib"], line


def test_a_slurm_launch_failure_that_is_the_users_is_not_a_lost_node() -> None:
    """Only a communication error makes a failed launch a lost connection: a credential or a gres the job asked for
    is the job's (no ib finding)."""
    for line in (b"srun: error: Application launch failed: Invalid job credential",
                 b"srun: error: Task launch for StepId=4411.0 failed on node gpu-node08: Invalid generic resource "
                 b"(gres) specification"):
        assert not [f for f in diagnose(line) if f.kind == "ib"], line


def test_the_pmix_plugin_rule_needs_the_plugins_frame() -> None:
    """The PMIx plugin's failures are read after its `mpi/pmix_vN: func: host [id]: file:line:` frame: the words alone
    in a job's chatter are not a lost node."""
    for line in (b"collective timeout seq=0", b"worker: send failed, rc=1001, exceeded the retry limit",
                 b"mpi/pmix_v4: collective timeout seq=0"):
        assert not [f for f in diagnose(line) if f.kind == "ib" and f.severity != "info"], line


def test_the_new_rules_never_drain_even_as_the_kernels_lines() -> None:
    """An MPI stack's or Slurm's words are never a node fault, whatever envelope carries them."""
    for line in (b"Nov 26 10:01:02 gpu-node07 kernel: ORTE has lost communication with a remote daemon.",
                 b"[ 812.1] srun: error: Node failure on gpu-node08",
                 b"Nov 26 10:01:02 gpu-node07 slurmstepd[48200]: error: *** STEP 4411.0 ON gpu-node07 CANCELLED AT "
                 b"2026-11-26T10:01:02 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
                 b"[ 812.1] [mpiexec@n1] control_cb (mpiexec/pmiserv_cb.c:280): assert (!closed) failed"):
        assert not any(is_node_fault(f, None) for f in diagnose(line)), line
